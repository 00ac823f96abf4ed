"""The document agents: a stored PDF in, an Extraction out (`tasks.result`).

    from conveyor.agents.documents import declare_document_agents
    declare_document_agents(app)       # invoice, contract, document

`invoice` and `contract` extract that type; `document` classifies first (by the words of
its first pages) and extracts what it found, or generic key-value pairs when unsure. They
read the payload that `conveyor submit FILE --agent invoice` and `POST /api/documents`
make: `sha256` names the file in the document store under CONVEYOR_HOME, `name` and
`pages` describe it.

Which extractor: the LLM extractor (`conveyor.agents.llm`) when CONVEYOR_LLM_MODEL is set,
otherwise the offline one (`conveyor.agents.offline`: rules, no network, no key). The
settings are read when an attempt runs, so `conveyor up` and tests can set them after the
agents are declared.

Failures: a payload without a document, a file missing from the store, or a PDF that
cannot be read fails the task at once (PermanentFailure: retrying reads the same bytes),
with a message that says which. PDF work (text, page images) runs in threads: it is
CPU-bound and must not stall the worker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conveyor.agents.llm import estimate_tokens, extract_llm
from conveyor.app import App
from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.sniff import PDF
from conveyor.documents.storage import DocumentStore
from conveyor.documents.types import Extraction
from conveyor.errors import PermanentFailure
from conveyor.llm.client import LLMClient
from conveyor.task import Task

AGENTS = {"invoice": "invoice", "contract": "contract", "document": None}
"""Agent name -> the document type it extracts (None: classify first)."""

LEASE_SECONDS = 120.0  # renewed while it runs; the lease only bounds how long a crash hides


class DocumentAgents:
    """What the agents share: the App, whose settings they read when an attempt runs."""

    def __init__(self, app: App) -> None:
        self.app = app

    def client(self) -> LLMClient | None:
        """A client for one attempt (closed after it): its HTTP connections then never
        outlive the attempt or cross event loops. None when no model is configured."""
        return LLMClient.from_settings(self.app.settings)

    def document_path(self, payload: Any) -> tuple[Path, str | None]:
        """Where the payload's document is stored, and its name."""
        if not isinstance(payload, dict) or not isinstance(payload.get("sha256"), str):
            raise PermanentFailure(
                "the payload names no document: it needs a 'sha256' of a stored file "
                "(submit files with `conveyor submit FILE --agent AGENT` or POST /api/documents)"
            )
        sha256 = payload["sha256"]
        media_type = payload.get("media_type")
        if media_type not in (None, PDF):
            raise PermanentFailure(f"the document agents read PDFs; this document is {media_type}")
        store = DocumentStore.for_settings(self.app.settings)
        try:
            path = store.path_of(sha256)
        except ValueError:
            raise PermanentFailure(f"{sha256!r} is not a sha256 (64 hex digits)") from None
        if not path.is_file():
            raise PermanentFailure(
                f"document {sha256[:12]}... is not in the document store at {store.root} "
                "(was it stored under another CONVEYOR_HOME?)"
            )
        name = payload.get("name")
        return path, name if isinstance(name, str) else None

    async def extract(self, task: Task, doc_type: str | None) -> dict[str, Any]:
        from conveyor.agents.offline import classify, extract_offline
        from conveyor.documents.text import extract_text

        path, name = self.document_path(task.payload)
        try:
            text = await asyncio.to_thread(extract_text, path, name=name)
        except UnreadableDocument as exc:
            raise PermanentFailure(str(exc)) from None
        kind: str = doc_type if doc_type is not None else await asyncio.to_thread(classify, text)
        client = self.client()
        extraction: Extraction
        if client is None:
            extraction = await asyncio.to_thread(extract_offline, text, kind)
        else:
            try:
                extraction = await extract_llm(
                    client,
                    task,
                    text,
                    kind,
                    pdf=path,
                    name=name or f"document {path.name[:12]}",
                    chunk_tokens=self.app.settings.llm_chunk_tokens,
                )
            finally:
                await client.aclose()
        if doc_type is None:
            extraction.notes.insert(0, f"classified as {kind} by the words of its first pages")
        return extraction.model_dump(mode="json")


def declare_document_agents(app: App, *, names: dict[str, str | None] | None = None) -> None:
    """Declare the document agents on `app` (all of AGENTS, or the `names` given)."""
    agents = DocumentAgents(app)
    for agent, doc_type in (names or AGENTS).items():
        app.agent(
            agent,
            max_attempts=3,
            lease_seconds=LEASE_SECONDS,
            estimate_tokens=_estimator(app, doc_type or "generic"),
        )(_agent(agents, doc_type))


def _agent(agents: DocumentAgents, doc_type: str | None) -> Callable[[Task], Any]:
    async def extract(task: Task) -> dict[str, Any]:
        return await agents.extract(task, doc_type)

    extract.__name__ = f"extract_{doc_type or 'document'}"
    return extract


def _estimator(app: App, doc_type: str) -> Callable[[Any], int]:
    def estimate(payload: Any) -> int:
        # Offline, a document costs no tokens: it reserves none of a token budget.
        if not app.settings.llm_model:
            return 0
        return estimate_tokens(
            payload, doc_type=doc_type, chunk_tokens=app.settings.llm_chunk_tokens
        )

    return estimate
