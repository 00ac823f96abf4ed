"""The document agents: a stored PDF in, an Extraction out (`tasks.result`).

    from conveyor.agents.documents import declare_document_agents
    declare_document_agents(app)       # invoice, contract, document

`invoice` and `contract` extract that type; `document` classifies first (by the words of
its first pages) and extracts what it found, or generic key-value pairs when unsure. They
read the payload that `conveyor submit FILE --agent invoice` and `POST /api/documents`
make: `sha256` names the file in the document store under CONVEYOR_HOME, `name`,
`media_type` and `pages` describe it. A picture of a document (PNG, JPEG, GIF, WebP) is
read only by a vision model (CONVEYOR_LLM_VISION=1); without one it fails, saying so.

E-invoices first: `invoice` and `document` read the EN 16931 XML a PDF carries (ZUGFeRD,
Factur-X, XRechnung) or an uploaded XML exactly (`conveyor.agents.einvoice`), before any
rule or model. An uploaded XML that is not an e-invoice fails the task, saying what it is.

Which extractor: with CONVEYOR_LLM_MODEL set, the hybrid one (`conveyor.agents.hybrid`:
rules first, the model asked only for what they cannot vouch for) or, with
CONVEYOR_LLM_MODE=llm or for scanned pages, the LLM extractor (`conveyor.agents.llm`);
without a model, the offline one (`conveyor.agents.offline`: rules, no network, no key). The
settings are read when an attempt runs, so `conveyor up` and tests can set them after the
agents are declared.

Failures: a payload without a document, a file missing from the store, or a PDF that
cannot be read fails the task at once (PermanentFailure: retrying reads the same bytes),
with a message that says which. PDF work (text, page images) runs in threads: it is
CPU-bound and must not stall the worker's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conveyor.agents import document_parts as parts
from conveyor.agents.einvoice import from_pdf as einvoice_from_pdf
from conveyor.agents.einvoice import from_xml as einvoice_from_xml
from conveyor.agents.hybrid import extract_hybrid
from conveyor.agents.llm import PARALLEL_REQUESTS, classify_image, extract_llm
from conveyor.agents.llm_budget import ANSWER_TOKENS, estimate_tokens
from conveyor.app import App
from conveyor.documents import ocr
from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.sniff import PDF, XML
from conveyor.documents.text import DocumentText, PageText
from conveyor.documents.types import Extraction
from conveyor.einvoice import NotAnInvoice
from conveyor.errors import PermanentFailure
from conveyor.llm.client import LLMClient
from conveyor.llm.estimates import Correction, Corrections
from conveyor.queue import Spawn
from conveyor.task import Task

AGENTS = {"invoice": "invoice", "contract": "contract", "document": None}
"""Agent name -> the document type it extracts (None: classify first)."""

log = logging.getLogger(__name__)

VISION_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}  # what models take
ANSWER_TOKENS_MAX = max(ANSWER_TOKENS.values())
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
LEASE_SECONDS = 120.0  # renewed while it runs; the lease only bounds how long a crash hides


class DocumentAgents:
    """What the agents share: the App, whose settings they read when an attempt runs.
    `parallel`: chunk requests at a time within one attempt (the LLM extractor's);
    `fanout`: a document longer than one chunk is read by page-range child tasks."""

    def __init__(self, app: App, *, parallel: int = PARALLEL_REQUESTS, fanout: bool = True) -> None:
        self.app = app
        self.parallel = parallel
        self.fanout = fanout
        # Per agent: how far token estimates are off, from task_attempts, in a worker and
        # a web app alike (conveyor.llm.estimates).
        self.corrections = Corrections(app.database)

    async def correction(self, agent: str, raw: Callable[[Any], int]) -> Correction:
        """The agent's estimate correction, from its latest attempts."""
        return await self.corrections.get(agent, raw)

    def client(self) -> LLMClient | None:
        """A client for one attempt (closed after it): its HTTP connections then never
        outlive the attempt or cross event loops. None when no model is configured."""
        return LLMClient.from_settings(self.app.settings)

    async def document_path(self, payload: Any) -> tuple[Path, str | None]:
        """A local file with the payload's document, from the store its row names (a
        copy fetched from PostgreSQL or an object store), and its name. Gone or damaged:
        PermanentFailure; a store or database that cannot answer raises, and is retried."""
        from conveyor.documents.stores import DocumentMissing
        from conveyor.documents.stores.reader import document_file

        if not isinstance(payload, dict) or not isinstance(payload.get("sha256"), str):
            raise PermanentFailure(
                "the payload names no document: it needs a 'sha256' of a stored file "
                "(submit files with `conveyor submit FILE --agent AGENT` or POST /api/documents)"
            )
        sha256 = payload["sha256"]
        if not _SHA256.match(sha256):
            raise PermanentFailure(f"{sha256!r} is not a sha256 (64 hex digits)")
        try:
            path = await document_file(await self.app.database(), self.app.settings, sha256)
        except DocumentMissing as exc:
            raise PermanentFailure(str(exc)) from None
        name = payload.get("name")
        return path, name if isinstance(name, str) else None

    async def extract(self, task: Task, doc_type: str | None) -> dict[str, Any] | Spawn:
        from conveyor.documents.text import extract_text

        if parts.is_part(task.payload):
            return await parts.read_part(self, task)
        path, name = await self.document_path(task.payload)
        media_type = task.payload.get("media_type") or PDF
        if media_type == XML:
            return await self.extract_xml(doc_type, path, name)
        if media_type != PDF:
            return await self.extract_image(task, doc_type, path, name, media_type)
        try:
            text = await asyncio.to_thread(extract_text, path, name=name)
        except UnreadableDocument as exc:
            raise PermanentFailure(str(exc)) from None
        if doc_type in ("invoice", None):
            # E-invoices first: the XML a PDF carries is the invoice, read exactly.
            einvoice = await asyncio.to_thread(einvoice_from_pdf, path, text)
            if einvoice is not None:
                return einvoice.model_dump(mode="json")
        children = await task.children()
        if children and all(child.succeeded for child in children):
            # Run again, its page-range children done (document_parts). After a retry of a
            # parent whose child failed, it spawns again: only that child runs again.
            extraction = await parts.fan_in(self, doc_type, text, children)
            return _noted(extraction, doc_type, f"classified as {extraction.type}")
        split = self.fanout
        if text.scanned_pages and ocr.available() and not self.app.settings.llm_vision:
            # A vision model reads scanned pages from their images; nothing else can.
            try:
                text = await asyncio.to_thread(ocr.read_scanned, text, path)
            except UnreadableDocument as exc:
                raise PermanentFailure(str(exc)) from None
            split = False  # a child reads its pages from the PDF, without this OCR
        return await self.extract_from_text(task, doc_type, text, path, name, split=split)

    async def extract_from_text(
        self,
        task: Task,
        doc_type: str | None,
        text: DocumentText,
        path: Path,
        name: str | None,
        *,
        pdf: bool = True,
        split: bool = False,
    ) -> dict[str, Any] | Spawn:
        """The offline or LLM extraction of a document's text (`pdf`: `path` is the PDF
        it came from, not a picture; `split`: a text longer than one request is read by
        page-range children, `conveyor.agents.document_parts`)."""
        from conveyor.agents.offline import classify, extract_offline

        kind: str = doc_type if doc_type is not None else await asyncio.to_thread(classify, text)
        client = self.client()
        extraction: Extraction
        if client is None:
            extraction = await asyncio.to_thread(extract_offline, text, kind)
        else:
            settings = self.app.settings
            try:
                ranges = parts.ranges_for(self, text, kind) if split and pdf else []
                if ranges:
                    outcome = await parts.spawn(self, task, kind, text, ranges)
                    if isinstance(outcome, Spawn):
                        return outcome
                    extraction = outcome
                elif settings.llm_mode == "hybrid" and not text.scanned_pages:
                    # Scanned pages are the model's to read (vision): rules have no text.
                    extraction = await extract_hybrid(
                        client,
                        task,
                        text,
                        kind,
                        name=name or f"document {path.name[:12]}",
                        chunk_tokens=settings.llm_chunk_tokens,
                    )
                else:
                    extraction = await extract_llm(
                        client,
                        task,
                        text,
                        kind,
                        pdf=path if pdf else None,
                        name=name or f"document {path.name[:12]}",
                        chunk_tokens=settings.llm_chunk_tokens,
                        parallel=self.parallel,
                    )
            finally:
                await client.aclose()
        return _noted(extraction, doc_type, f"classified as {kind}")

    async def extract_xml(
        self, doc_type: str | None, path: Path, name: str | None
    ) -> dict[str, Any]:
        """An uploaded XML: read as an e-invoice, or refused saying what it is."""
        which = f"{name!r}" if name else "the XML"
        if doc_type not in ("invoice", None):
            raise PermanentFailure(
                f"{which} is XML: only an e-invoice is read from XML, by the invoice and "
                f"document agents, not by {doc_type!r}"
            )
        data = await asyncio.to_thread(path.read_bytes)
        try:
            extraction = await asyncio.to_thread(einvoice_from_xml, data)
        except NotAnInvoice as exc:
            raise PermanentFailure(f"{which} is not an e-invoice: {exc}") from None
        return extraction.model_dump(mode="json")

    async def extract_image(
        self, task: Task, doc_type: str | None, path: Path, name: str | None, media_type: str
    ) -> dict[str, Any] | Spawn:
        """A picture of a document: only a vision model reads it (there is no text)."""
        client = self.client()
        if (client is None or not client.vision) and ocr.available():
            # No model reads pictures here: OCR turns the picture into text to read.
            await _close(client)
            try:
                text = await asyncio.to_thread(ocr.read_picture, path, name)
            except UnreadableDocument as exc:
                raise PermanentFailure(str(exc)) from None
            return await self.extract_from_text(task, doc_type, text, path, name, pdf=False)
        if client is None or not client.vision or media_type not in VISION_TYPES:
            if media_type not in VISION_TYPES:
                why = f"models take PNG, JPEG, GIF and WebP, not {media_type}"
            else:
                why = (
                    "it needs a model that reads images: CONVEYOR_LLM_MODEL, CONVEYOR_LLM_VISION=1"
                )
            await _close(client)
            raise PermanentFailure(f"this document is a picture ({media_type}): {why}")
        data = await asyncio.to_thread(path.read_bytes)
        url = f"data:{media_type};base64,{base64.b64encode(data).decode()}"
        page = PageText(number=1, text="", has_text_layer=False, chars=0)
        try:
            kind = doc_type or await classify_image(client, task, url)
            extraction = await extract_llm(
                client,
                task,
                DocumentText(pages=[page], name=name),
                kind,
                page_images={1: url},
                name=name or f"document {path.name[:12]}",
                chunk_tokens=self.app.settings.llm_chunk_tokens,
            )
        finally:
            await client.aclose()
        if doc_type is None:
            extraction.notes.insert(0, f"classified as {kind} by the model")
        return extraction.model_dump(mode="json")


def _noted(extraction: Extraction, doc_type: str | None, classified: str) -> dict[str, Any]:
    """The result; the `document` agent's says what it classified the document as."""
    if doc_type is None:
        extraction.notes.insert(0, f"{classified} by the words of its first pages")
    return extraction.model_dump(mode="json")


async def _close(client: LLMClient | None) -> None:
    if client is not None:
        await client.aclose()


def declare_document_agents(
    app: App,
    *,
    names: dict[str, str | None] | None = None,
    limits: dict[str, Any] | None = None,
    parallel: int = PARALLEL_REQUESTS,
    fanout: bool = True,
) -> None:
    """Declare the document agents on `app` (all of AGENTS, or the `names` given), each
    with the `limits` given (`max_concurrent`, `max_tpm`, ... as `App.agent` takes them).
    `parallel`: chunk requests at a time within one attempt; `fanout` False: a long
    document is read by one attempt, chunk after chunk, as before child tasks."""
    agents = DocumentAgents(app, parallel=parallel, fanout=fanout)
    for agent, doc_type in (names or AGENTS).items():
        raw = _estimator(app, doc_type or "generic", fanout=fanout)
        app.agent(
            agent,
            max_attempts=3,
            lease_seconds=LEASE_SECONDS,
            estimate_tokens=_corrected(agents, agent, raw),
            **(limits or {}),
        )(_agent(agents, doc_type, raw))


def _agent(
    agents: DocumentAgents, doc_type: str | None, raw: Callable[[Any], int]
) -> Callable[[Task], Any]:
    async def extract(task: Task) -> dict[str, Any] | Spawn:
        correction = await agents.correction(task.agent, raw)
        result = await agents.extract(task, doc_type)
        used = task.usage.input_tokens + task.usage.output_tokens
        if used:
            correction.learn(raw(task.payload), used)
        return result

    extract.__name__ = f"extract_{doc_type or 'document'}"
    return extract


def _estimator(app: App, doc_type: str, *, fanout: bool = False) -> Callable[[Any], int]:
    def estimate(payload: Any) -> int:
        # Offline, a document costs no tokens: it reserves none of a token budget.
        if not app.settings.llm_model:
            return 0
        chunk_tokens = app.settings.llm_chunk_tokens
        tokens = estimate_tokens(payload, doc_type=doc_type, chunk_tokens=chunk_tokens)
        if fanout and not parts.is_part(payload) and tokens > chunk_tokens + ANSWER_TOKENS_MAX:
            # More than one request: its page-range children will ask the model and each
            # reserves its own pages' tokens; the parent's attempts ask nothing. Were it
            # to reserve the whole document, its last run (the merge) would wait for a
            # window its own children filled.
            return 0
        return tokens

    return estimate


def _corrected(
    agents: DocumentAgents, agent: str, raw: Callable[[Any], int]
) -> Callable[[Any], int]:
    """The estimate, corrected by the agent's attempts (conveyor.llm.estimates)."""

    def estimate(payload: Any) -> int:
        return agents.corrections.apply(agent, raw, payload)

    return estimate
