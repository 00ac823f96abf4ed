"""The LLM extractor: a document's pages in, a validated Extraction out.

    extraction = await extract_llm(client, task, document, "invoice", pdf=path, name=name)

How a document becomes requests. Its text pages are packed, in order, into chunks whose
prompt (instructions, schema, page headers and text) fits `chunk_tokens`
(`conveyor.agents.llm_pages`; what a request costs, its answer's limit included, is
`conveyor.agents.llm_budget`). Each chunk is one structured-output request for the
document type's schema, at most `parallel` of them at a time. Scanned pages (no text
layer) are rendered to PNG with PDFium and sent as images, a few per request, when the
model is declared vision-capable (CONVEYOR_LLM_VISION=1); otherwise the result notes that
OCR is needed for them. The answers are merged into one extraction, each field scored by
what the text shows (`conveyor.agents.llm_merge`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from conveyor.agents.grounding import Evidence
from conveyor.agents.llm_budget import (
    DEFAULT_CHUNK_TOKENS,
    SYSTEM_PROMPT,
    Chunk,
    answer_limit,
    overhead_tokens,
)
from conveyor.agents.llm_merge import extraction_of_parts, field_of, merge
from conveyor.agents.llm_pages import IMAGES_PER_REQUEST, chunk_text_pages, render_pages
from conveyor.documents.text import DocumentText
from conveyor.documents.types import Extraction, json_schema, model_for
from conveyor.llm.client import LLMClient
from conveyor.task import Task

PARALLEL_REQUESTS = 4


async def extract_llm(
    client: LLMClient,
    task: Task | None,
    document: DocumentText,
    doc_type: str,
    *,
    pdf: Path | None = None,
    page_images: dict[int, str] | None = None,
    name: str | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    parallel: int = PARALLEL_REQUESTS,
    deadline: float | None = None,
    schema: dict[str, Any] | None = None,
    hints: str | None = None,
) -> Extraction:
    """Extract a `doc_type` ("invoice", "contract", "generic") from the document's pages.
    Scanned pages are rendered from `pdf`, or taken from `page_images` (page number ->
    data: URL) for a document that is an image. `deadline` (the event loop's clock) bounds
    every request; `schema` (a part of the type's) and `hints` (what is known already)
    are the hybrid extractor's (`conveyor.agents.hybrid`)."""
    model = model_for(doc_type)
    schema = schema or json_schema(doc_type)
    room = chunk_tokens - overhead_tokens(doc_type)
    if room < 200:
        raise ValueError(
            f"a chunk of {chunk_tokens} tokens leaves no room for pages beside the "
            f"{doc_type} schema and instructions; allow more (CONVEYOR_LLM_CHUNK_TOKENS)"
        )
    chunks = chunk_text_pages(document.pages, room)
    notes: list[str] = []
    scanned = document.scanned_pages
    read_images = bool(scanned and client.vision and (pdf is not None or page_images))
    if read_images:
        if page_images:
            images = [page_images[n] for n in scanned]
        else:
            assert pdf is not None
            images = await asyncio.to_thread(render_pages, pdf, scanned)
        for i in range(0, len(scanned), IMAGES_PER_REQUEST):
            chunks.append(
                Chunk(
                    pages=tuple(scanned[i : i + IMAGES_PER_REQUEST]),
                    images=tuple(images[i : i + IMAGES_PER_REQUEST]),
                )
            )
        chunks.sort(key=lambda c: c.pages[0])
        notes.append(f"{len(scanned)} scanned page(s) read from images by the model")
    else:
        notes.extend(document.notes)  # "OCR would be needed" for scans
    if not chunks:
        notes.append("no page has text to send to the model")
    label = name or "document"
    gate = asyncio.Semaphore(max(1, parallel))
    salvaged: list[str] = []

    async def ask(chunk: Chunk) -> dict[str, Any]:
        async with gate:
            answer = await client.extract_partial(
                task,
                _messages(label, doc_type, document.page_count, chunk, hints),
                model,
                name=doc_type,
                json_schema=schema,
                max_tokens=answer_limit(doc_type, chunk),
                deadline=deadline,
            )
        salvaged.extend(answer.dropped)
        if answer.cut is not None:
            if answer.cut:
                salvaged.append(answer.cut)
            notes.append(
                f"the answer was cut at the token limit ({chunk.label}) in "
                f"{answer.cut or 'the space between two fields'}: the fields before it "
                "kept, that one and those after it not answered"
            )
        if answer.repaired:
            notes.append(f"read as numbers ({chunk.label}): {'; '.join(answer.repaired)}")
        return answer.value.model_dump(mode="json")

    asked = [asyncio.ensure_future(ask(c)) for c in chunks]
    try:
        parts = list(await asyncio.gather(*asked))
    except BaseException:
        # One chunk failed (a 429, an outage): the attempt is over, so are its other
        # requests; none may go on reporting usage to an attempt that has ended.
        for future in asked:
            future.cancel()
        await asyncio.gather(*asked, return_exceptions=True)
        raise
    merged = merge(doc_type, parts)
    if salvaged:
        notes.append(
            "the model's answer did not validate for "
            f"{', '.join(dict.fromkeys(salvaged))}: left empty"
        )
    # What the model read from images cannot be checked against the text layer.
    evidence = None
    if document.text.strip() and not read_images:
        evidence = await asyncio.to_thread(Evidence.of, document.text)
    return extraction_of_parts(
        doc_type,
        merged,
        evidence,
        notes=notes,
        read_note=f"read in {len(chunks)} requests" if len(chunks) > 1 else None,
        salvaged=[field_of(where) for where in salvaged],
        pages=document.page_count,
        extractor=f"llm:{client.model}",
    )


def _messages(
    name: str, doc_type: str, pages: int, chunk: Chunk, hints: str | None = None
) -> list[dict[str, Any]]:
    intro = f"Document {name!r}, a {doc_type} of {pages} page(s). This part: {chunk.label}."
    if hints:
        intro = f"{intro}\n{hints}"
    if not chunk.images:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"{intro}\n\n{chunk.text}"},
        ]
    content: list[dict[str, Any]] = [{"type": "text", "text": f"{intro} Scanned pages:"}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in chunk.images]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


class _Kind(BaseModel):
    type: Literal["invoice", "contract", "generic"]


async def classify_image(client: LLMClient, task: Task | None, image_url: str) -> str:
    """The document type of a picture of a document, asked of a vision model."""
    messages = [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "What is this document: an invoice, a contract, or something "
                    "else (generic)?",
                },
                {"type": "image_url", "image_url": {"url": image_url}},
            ],
        }
    ]
    answer = await client.extract(task, messages, _Kind, name="document_type")
    return answer.type
