"""A long document read by child tasks, as the document agents run them (the split and the
merge themselves are `conveyor.agents.fanout`'s; the child tasks, `docs/children.md`).

1. A parent's first run: the document's text needs more than one request, so the attempt
   ends by spawning one child per page range (`Spawn`), of the parent's own agent, with
   the parent's document and a `part` in the payload: the range, the document type, and in
   hybrid mode what to ask the model (the rules read the whole document first, as
   `conveyor.agents.hybrid` does: a document they vouch for spawns nothing). Each child
   reserves the tokens of its own pages (`estimated_tokens`), so the agent's token budget
   paces the children across workers as it paces any task, and its concurrency cap bounds
   them; the parent, waiting, holds no slot and reserves nothing.
2. A child reads its pages only and asks the model for them, as one chunk of the
   sequential path would (`extract_llm` over the range): its result is that partial
   extraction, its tokens and cost its own.
3. The parent runs again when the last child has ended (a failed child fails it, naming
   the child): it reads the document's text again, merges the parts in page order with the
   evidence of every page (`fanout.assemble`), and, in hybrid mode, with the rules'
   reading (`hybrid.merged`). Its own attempts call no model.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from conveyor.agents.fanout import (
    PageRange,
    assemble,
    document_evidence,
    page_ranges,
    read_range,
)
from conveyor.agents.hybrid import TRUST, hints_for, merged, plan_for, schema_for_fields
from conveyor.agents.llm import extract_llm
from conveyor.agents.llm_budget import ANSWER_TOKENS, estimate_tokens
from conveyor.documents.amounts import item_rows
from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.text import DocumentText
from conveyor.documents.types import Extraction, json_schema
from conveyor.errors import PermanentFailure
from conveyor.queue import Child, ChildResult, Spawn
from conveyor.task import Task

if TYPE_CHECKING:
    from conveyor.agents.documents import DocumentAgents

PART = "part"
"""The payload key that makes a document task a child reading a page range."""

_DOCUMENT_KEYS = ("sha256", "name", "media_type", "pages")


def is_part(payload: Any) -> bool:
    return isinstance(payload, dict) and PART in payload


def ranges_for(agents: DocumentAgents, text: DocumentText, kind: str) -> list[PageRange]:
    """The page ranges to fan out into; [] when one request reads the document."""
    try:
        return page_ranges(text, kind, agents.app.settings.llm_chunk_tokens)
    except ValueError as exc:  # a chunk budget too small for any page: a setting to fix
        raise PermanentFailure(str(exc)) from None


async def spawn(
    agents: DocumentAgents, task: Task, kind: str, text: DocumentText, ranges: list[PageRange]
) -> Spawn | Extraction:
    """The children of a long document, or, in hybrid mode, the rules' reading when they
    vouch for every key field (nothing to ask the model)."""
    settings = agents.app.settings
    asked: dict[str, Any] = {}
    if settings.llm_mode == "hybrid" and not text.scanned_pages:
        from conveyor.agents.offline import extract_offline

        offline = await asyncio.to_thread(extract_offline, text, kind)
        plan = plan_for(kind, offline)
        if not plan.ask:
            offline.notes.append(
                f"every key field read by the rules scored >= {TRUST} and the checks agree: "
                "the model was not asked"
            )
            offline.extractor = f"hybrid:{settings.llm_model}"
            return offline
        asked = {"hints": hints_for(offline, plan)}
        if not plan.whole:
            asked["ask"] = plan.ask
    payload = task.payload if isinstance(task.payload, dict) else {}
    document = {k: payload[k] for k in _DOCUMENT_KEYS if k in payload}
    children = []
    for pages in ranges:
        texts = [p.text for p in text.pages[pages.first - 1 : pages.last]]
        chars = sum(len(t) + 2 for t in texts)
        child = {
            **document,
            "chars": chars,
            "item_rows": sum(item_rows(t) for t in texts),  # what its answer restates
            PART: {"range": pages.to_json(), "type": kind, **asked},
        }
        # Its pages' own estimate, uncorrected: the agent's correction is learnt from
        # whole documents, of which the parent's (0) says nothing.
        tokens = estimate_tokens(child, doc_type=kind, chunk_tokens=settings.llm_chunk_tokens)
        children.append(
            Child(
                task.agent,
                child,
                key=f"pages-{pages.first}-{pages.last}",
                estimated_tokens=tokens,
            )
        )
    return Spawn(children, on_failure="fail")


async def read_part(agents: DocumentAgents, task: Task) -> dict[str, Any]:
    """A child: the model's reading of its page range, as a partial extraction."""
    payload = task.payload
    part = payload[PART]
    kind = part.get("type") if isinstance(part, dict) else None
    if kind not in ANSWER_TOKENS:
        raise PermanentFailure(f"a document part names no document type it can read: {part!r}")
    path, name = await agents.document_path(payload)
    try:
        # Checked against the PDF's own page count by read_range.
        pages = PageRange.from_json(part.get("range"), 10**9)
        text = await asyncio.to_thread(read_range, path, pages, name=name)
    except UnreadableDocument as exc:
        raise PermanentFailure(str(exc)) from None
    except ValueError as exc:
        raise PermanentFailure(f"this document part cannot be read: {exc}") from None
    ask = part.get("ask")
    hints = part.get("hints")
    if ask is not None and not (isinstance(ask, list) and all(isinstance(a, str) for a in ask)):
        raise PermanentFailure(f"a document part's 'ask' is a list of fields, not {ask!r}")
    client = agents.client()
    if client is None:
        raise PermanentFailure(
            "a document part is read by a model, and this worker has none (CONVEYOR_LLM_MODEL)"
        )
    try:
        extraction = await extract_llm(
            client,
            task,
            text,
            kind,
            pdf=path,
            name=name or f"document {path.name[:12]}",
            chunk_tokens=agents.app.settings.llm_chunk_tokens,
            parallel=agents.parallel,
            schema=schema_for_fields(json_schema(kind), ask) if ask else None,
            hints=hints if isinstance(hints, str) else None,
        )
    finally:
        await client.aclose()
    return extraction.model_dump(mode="json")


async def fan_in(
    agents: DocumentAgents,
    doc_type: str | None,
    text: DocumentText,
    children: list[ChildResult],
) -> Extraction:
    """The parent run again: one extraction from its children's (all succeeded: a failed
    one has failed the parent already)."""
    settings = agents.app.settings
    try:
        parts = [Extraction.model_validate(child.result) for child in children]
    except ValidationError as exc:
        raise PermanentFailure(f"a document part's result is not an extraction: {exc}") from None
    kinds = {part.type for part in parts}
    if len(kinds) != 1 or (doc_type is not None and kinds != {doc_type}):
        raise PermanentFailure(f"the document's parts read different types: {sorted(kinds)}")
    (kind,) = kinds
    model = settings.llm_model or "unknown"
    labels = [_label(child.key) for child in children]
    images = bool(text.scanned_pages and settings.llm_vision)
    # Built once, for the merge of the parts and, in hybrid mode, for the merge with the
    # rules' reading (the same text, no images there): the whole merge's largest cost.
    evidence = await asyncio.to_thread(document_evidence, text, images_read=images)
    answer = await asyncio.to_thread(
        assemble,
        kind,
        text,
        parts,
        model=model,
        labels=labels,
        images_read=images,
        evidence=evidence,
    )
    if settings.llm_mode != "hybrid" or text.scanned_pages:
        return answer
    from conveyor.agents.offline import extract_offline

    offline = await asyncio.to_thread(extract_offline, text, kind)
    plan = plan_for(kind, offline)
    return merged(kind, offline, answer, plan, evidence, model)


def _label(key: str) -> str:
    """The pages a child read, from its key (`pages-41-45`: pages 41-45)."""
    first, _, last = key.removeprefix("pages-").partition("-")
    if first.isdigit() and last.isdigit():
        return PageRange(int(first), int(last)).label
    return key
