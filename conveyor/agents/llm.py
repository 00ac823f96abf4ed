"""The LLM extractor: a document's pages in, a validated Extraction out.

    extraction = await extract_llm(client, task, document, "invoice", pdf=path, name=name)

How a document becomes requests. Its text pages are packed, in order, into chunks whose
prompt (instructions, schema, page headers and text) fits `chunk_tokens` (estimated as the
simulator and OpenAI's rule of thumb do: a token per four characters); a page larger than
that alone is cut at line ends. Each chunk is one structured-output request for the
document type's schema, at most `parallel` of them at a time. Scanned pages (no text
layer) are rendered to PNG with PDFium and sent as images, a few per request, when the
model is declared vision-capable (CONVEYOR_LLM_VISION=1); otherwise the result notes that
OCR is needed for them.

How the answers become one. Per type:
- invoice: header fields (number, dates, parties, currency, totals) from the first chunk
  that has each of them; line items concatenated in page order;
- contract: the first non-null value of each field; parties de-duplicated by name;
- generic: key-value pairs concatenated, exact repeats dropped.
Chunks that disagree on a field keep the first value, with a note and a lower confidence.

How long an answer may be (`answer_limit`, sent as `max_tokens`): twice the chunk's text
(a page restated as JSON, keys and all) plus the type's answer budget. An answer can say
no more than what it reads; one that goes on is a loop, and a model held to a grammar may
loop until the server's context is full (seen with the stock llama.cpp server: 1,088
tokens and counting for an invoice without line items, 14 minutes on a CPU). Bounded, it
is cut, and the fields it completed before the cut are kept (`conveyor.llm.salvage`:
the field it was cut in is dropped whole, a cut list of line items not being the list),
with a note; an answer cut before it completed one field is a clear, permanent attempt
error (`LLMAnswerCut`), or the rules' reading in hybrid.

Confidence. Each field found scores 0.95; 0.6 when chunks disagreed on it; 0.4 when its
value is not printed in the document's text (`conveyor.agents.grounding`: a misread or
invented value, the error cross-checks cannot see); 0.1 when the model's value for it did
not validate and was left empty (`conveyor.llm.salvage`, with a note naming it); and at
most 0.5 when a failed cross-check names it. A key field not found scores 0. The
document's confidence is `document_confidence()` over those (shared with the offline
extractor), capped like a failed check (0.85) when some value is not in the text: the
model's answer is trusted as far as the document shows it and its numbers agree.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import math
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from conveyor.agents.grounding import Evidence, grounded
from conveyor.documents.text import DocumentText, PageText
from conveyor.documents.types import (
    FAILED_CHECK_CEILING,
    Extraction,
    LineItem,
    cross_checks,
    json_schema,
    make_extraction,
    model_for,
)
from conveyor.llm.client import LLMClient
from conveyor.task import Task

CHARS_PER_TOKEN = 4
DEFAULT_CHUNK_TOKENS = 6000
IMAGES_PER_REQUEST = 4
IMAGE_SCALE = 1.5  # 108 dpi: small print stays legible, a page stays under ~200 KB
PARALLEL_REQUESTS = 4
TOKENS_PER_PAGE = 800  # a dense page of text, for estimates before the text is read
ANSWER_TOKENS = {"invoice": 600, "contract": 300, "generic": 800}

KEY_FIELDS = {
    "invoice": ["number", "issue_date", "vendor.name", "currency", "total"],
    "contract": ["parties", "effective_date", "term_months"],
    "generic": ["items"],
}

SYSTEM_PROMPT = (
    "You read business documents and extract their data as JSON of the given schema. "
    "Use only what the document shows; null for anything it does not state, never a guess. "
    "Dates as YYYY-MM-DD; amounts and quantities as plain decimals ('1234.56', no thousands "
    "separator, no currency sign); currency as its ISO 4217 code. "
    "A long document comes in parts: extract what this part shows."
)


@dataclass(frozen=True)
class Chunk:
    pages: tuple[int, ...]  # 1-based page numbers
    text: str = ""
    images: tuple[str, ...] = ()  # data: URLs of PNGs

    @property
    def label(self) -> str:
        first, last = self.pages[0], self.pages[-1]
        return f"page {first}" if first == last else f"pages {first}-{last}"


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def answer_limit(doc_type: str, chunk: Chunk) -> int:
    """The most tokens an answer about `chunk` may take (the module says why)."""
    read = text_tokens(chunk.text) + TOKENS_PER_PAGE * len(chunk.images)
    return 2 * read + ANSWER_TOKENS.get(doc_type, ANSWER_TOKENS["generic"])


def framing_tokens() -> int:
    """Prompt tokens of a request besides its pages and any schema: the instructions and
    the framing of the messages (roles, the document's name, the part's label)."""
    return text_tokens(SYSTEM_PROMPT) + 100


def overhead_tokens(doc_type: str) -> int:
    """Prompt tokens of a request besides the pages: instructions, schema, framing. The
    schema is in the prompt on every rung of `conveyor.llm.formats` but the first, so a
    chunk leaves room for it."""
    schema = json.dumps(json_schema(doc_type), separators=(",", ":"))
    return framing_tokens() + text_tokens(schema)


# What an answer holds, for the types whose answer grows with the document: an invoice's
# header fields (names, addresses, a tax id, its number and dates, three amounts: about
# 250 characters as printed) and one item per line item, each its description, quantity
# and two amounts (about 50 characters as printed). Keys, quotes and nulls are counted
# from the type's empty answer (`answer_chars`), so a field added to the schema is
# counted without a change here.
HEAD_VALUE_CHARS = {"invoice": 250}
ROW_VALUE_CHARS = {"invoice": 50}


@functools.cache
def answer_chars(doc_type: str) -> tuple[int, int]:
    """Characters of an answer of a type with line items (ROW_VALUE_CHARS): its header
    (the empty answer's keys, quotes, braces and nulls, and HEAD_VALUE_CHARS of values),
    and each item (an empty line item, its comma, and ROW_VALUE_CHARS)."""
    header = len(model_for(doc_type)().model_dump_json()) + HEAD_VALUE_CHARS[doc_type]
    item = len(LineItem().model_dump_json()) + 1 + ROW_VALUE_CHARS[doc_type]
    return header, item


def answer_tokens(doc_type: str, rows: int | None, chunks: int) -> int:
    """Tokens of the answers to a document's `chunks` requests: each chunk restates the
    header, each item row (`item_rows`) is restated once. Where the rows are not known
    (an older payload, a type without line items), the type's flat budget per chunk
    (ANSWER_TOKENS), as estimates were before the rows were counted."""
    if rows is None or doc_type not in ROW_VALUE_CHARS:
        return chunks * ANSWER_TOKENS.get(doc_type, ANSWER_TOKENS["generic"])
    header, item = answer_chars(doc_type)
    return math.ceil((chunks * header + rows * item) / CHARS_PER_TOKEN)


def estimate_tokens(payload: Any, *, doc_type: str, chunk_tokens: int) -> int:
    """Tokens a document task will spend, for admission: from its text length when the
    payload has it (`chars`), else from its page count (`pages`, set at upload).

    With its item rows counted too (`item_rows`, carried beside `chars`), what is sent and
    what comes back: the text and each request's framing, and an answer that grows with
    the rows (`answer_tokens`). The schema is not counted then: on the first rung of
    `conveyor.llm.formats` (json_schema, strict) a server enforces it and puts none of it
    in the prompt, on the others it is sent; which rung a server takes is learnt by the
    client of the process that asks it, not known where a task is enqueued. The per-agent
    correction (`conveyor.llm.estimates`) carries it as part of its intercept, as it
    carries what a tokenizer makes of four characters. A payload without `item_rows`
    estimates as before they were counted: schema and flat answer budget included."""
    data = payload if isinstance(payload, dict) else {}
    chars = data.get("chars")
    pages = data.get("pages")
    rows = data.get("item_rows")
    pages = pages if isinstance(pages, int) and pages > 0 else 1
    if isinstance(chars, int) and chars >= 0:
        text = math.ceil(chars / CHARS_PER_TOKEN)
    else:
        text = pages * TOKENS_PER_PAGE
    kind = doc_type if doc_type in ANSWER_TOKENS else "generic"
    overhead = overhead_tokens(kind)
    room = max(1, chunk_tokens - overhead)
    chunks = max(1, math.ceil(text / room))
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
        return text + chunks * overhead + answer_tokens(kind, None, chunks)
    return text + chunks * framing_tokens() + answer_tokens(kind, rows, chunks)


# ---------------------------------------------------------------------------- chunking


def chunk_text_pages(pages: Sequence[PageText], room_tokens: int) -> list[Chunk]:
    """Pages with text, packed in order into chunks of at most `room_tokens` of text."""
    chunks: list[Chunk] = []
    numbers: list[int] = []
    parts: list[str] = []
    used = 0
    room_chars = max(1, room_tokens) * CHARS_PER_TOKEN

    def flush() -> None:
        nonlocal numbers, parts, used
        if parts:
            chunks.append(Chunk(pages=tuple(numbers), text="\n\n".join(parts)))
        numbers, parts, used = [], [], 0

    for page in pages:
        if not page.has_text_layer:
            continue
        for piece in _pieces(page, room_chars):
            size = len(piece) + 2
            if used and used + size > room_chars:
                flush()
            if not numbers or numbers[-1] != page.number:
                numbers.append(page.number)
            parts.append(piece)
            used += size
    flush()
    return chunks


def _pieces(page: PageText, room_chars: int) -> list[str]:
    """The page with its header, cut at line ends into pieces that fit (rarely needed)."""
    header = f"--- page {page.number} ---\n"
    if len(header) + len(page.text) + 2 <= room_chars:
        return [header + page.text]
    limit = max(1, room_chars - len(header) - 2)
    pieces: list[str] = []
    current = ""
    for line in page.text.split("\n"):
        while len(line) > limit:  # a line longer than a chunk: cut it anywhere
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        if current and len(current) + 1 + len(line) > limit:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        pieces.append(current)
    return [header + piece for piece in pieces]


def render_pages(pdf: Path, numbers: Sequence[int], scale: float = IMAGE_SCALE) -> list[str]:
    """PNG data URLs of the given 1-based pages (grayscale). Blocking: run in a thread."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    from conveyor.documents.pdf import PDFIUM_LOCK

    urls = []
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(pdf)
        try:
            for number in numbers:
                page = document[number - 1]
                bitmap = page.render(scale=scale, grayscale=True)
                try:
                    png = _png_gray(
                        bitmap.width, bitmap.height, bytes(bitmap.buffer), bitmap.stride
                    )
                finally:
                    bitmap.close()
                    page.close()
                urls.append("data:image/png;base64," + base64.b64encode(png).decode())
        finally:
            document.close()
    return urls


def _png_gray(width: int, height: int, pixels: bytes, stride: int) -> bytes:
    """An 8-bit grayscale PNG (no Pillow needed: a PNG is zlib'd rows in three chunks)."""
    rows = b"".join(b"\x00" + pixels[y * stride : y * stride + width] for y in range(height))

    def part(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + part(b"IHDR", header)
        + part(b"IDAT", zlib.compress(rows, 6))
        + part(b"IEND", b"")
    )


# ------------------------------------------------------------------------- extracting


@dataclass
class _Merged:
    data: dict[str, Any] = field(default_factory=dict)
    disagreements: dict[str, list[Any]] = field(default_factory=dict)


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
        salvaged=[_field_of(where) for where in salvaged],
        pages=document.page_count,
        extractor=f"llm:{client.model}",
    )


def extraction_of_parts(
    doc_type: str,
    merged: _Merged,
    evidence: Evidence | None,
    *,
    notes: list[str],
    read_note: str | None,
    salvaged: Sequence[str],
    pages: int,
    extractor: str,
) -> Extraction:
    """One extraction from the merge of a document's parts (the requests of one attempt,
    or the child tasks of a fan-out): disagreements settled by what the text shows,
    every field grounded in it (`evidence`, None when pages were read from images) and
    cross-checked, `salvaged` fields (what failed validation) scored as such."""
    model = model_for(doc_type)
    for where, values in list(merged.disagreements.items()):
        shown = ", ".join(repr(v) for v in values[:3])
        settled = _settle(merged, where, values, evidence)
        if settled is None:
            notes.append(f"parts of the document disagree on {where} ({shown}); kept the first")
        else:
            notes.append(
                f"parts of the document disagree on {where} ({shown}); kept {settled!r}, "
                "the only one the text shows"
            )
    if read_note:
        notes.append(read_note)
    data = model.model_validate(merged.data)
    answer = data.model_dump(mode="json")
    fields = field_confidences(doc_type, answer, merged.disagreements, evidence)
    unseen = [w for w, score in fields.items() if score == UNGROUNDED]
    if unseen:
        notes.append(f"not printed in the document as answered: {', '.join(unseen)}")
    for name in dict.fromkeys(salvaged):
        fields[name] = SALVAGED
    checks = cross_checks(doc_type, data)
    if checks:
        fields = _implicated(fields, checks)
    extraction = make_extraction(
        doc_type,
        data,
        fields=fields,
        notes=notes,
        pages=pages,
        extractor=extractor,
        key_fields=KEY_FIELDS.get(doc_type),
    )
    if unseen:
        # As with a failed cross-check: a value the document does not show is a likely
        # error, wherever it is; the document is not one to trust without a look.
        ceiling = min(extraction.confidence, FAILED_CHECK_CEILING)
        extraction = extraction.model_copy(update={"confidence": ceiling})
    return extraction


def _field_of(where: str) -> str:
    """The field a salvaged path belongs to: line_items.2.quantity is line_items."""
    parts = where.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i])
    return where


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


# ---------------------------------------------------------------------------- merging


def merge(doc_type: str, parts: Sequence[dict[str, Any]]) -> _Merged:
    """One answer from the answers of a document's chunks, in page order."""
    merged = _Merged()
    for part in parts:
        _merge_into(merged, merged.data, part, "", doc_type)
    return merged


def _merge_into(
    merged: _Merged, into: dict[str, Any], part: dict[str, Any], prefix: str, doc_type: str
) -> None:
    for key, value in part.items():
        where = f"{prefix}{key}"
        current = into.get(key)
        if isinstance(value, dict):
            into.setdefault(key, {})
            _merge_into(merged, into[key], value, f"{where}.", doc_type)
        elif isinstance(value, list):
            into[key] = _merge_list(where, current or [], value)
        elif current is None:
            into[key] = value
        elif value is not None and value != current:
            seen = merged.disagreements.setdefault(where, [current])
            if value not in seen:
                seen.append(value)


def _settle(merged: _Merged, where: str, values: list[Any], evidence: Evidence | None) -> Any:
    """Settle a disagreement by the text: if exactly one of the values is printed in the
    document, it wins and the field is no longer disputed. Else None (the first stays)."""
    if evidence is None:
        return None
    shown = [v for v in values if grounded(where, v, evidence) is True]
    if len(shown) != 1:
        return None
    *parents, leaf = where.split(".")
    node = merged.data
    for key in parents:
        node = node[key]
    node[leaf] = shown[0]
    del merged.disagreements[where]
    return shown[0]


def _merge_list(where: str, current: list[Any], new: list[Any]) -> list[Any]:
    if where == "parties":  # the same party named on several pages
        names = {_name_key(p.get("name")) for p in current if isinstance(p, dict)}
        out = list(current)
        for party in new:
            key = _name_key(party.get("name")) if isinstance(party, dict) else None
            if key and key in names:
                for known in out:
                    if _name_key(known.get("name")) == key and not known.get("role"):
                        known["role"] = party.get("role")
                continue
            names.add(key)
            out.append(party)
        return out
    if where == "items":  # key-value pairs: a repeated pair is one pair
        return current + [kv for kv in new if kv not in current]
    return current + new  # line items: each chunk has its own lines


def _name_key(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    return re.sub(r"[^0-9a-z]+", " ", name.casefold()).strip() or None


# ------------------------------------------------------------------------- confidence

FOUND, DISPUTED, IMPLICATED, UNGROUNDED, SALVAGED = 0.95, 0.6, 0.5, 0.4, 0.1


def field_confidences(
    doc_type: str,
    data: dict[str, Any],
    disagreements: dict[str, list[Any]],
    evidence: Evidence | None = None,
) -> dict[str, float]:
    """Per-field confidence, dotted names: found 0.95, disputed 0.6, not in the text 0.4,
    key field missing 0. Missing minor fields are left out: null is a fine answer for a
    due date the document does not print."""
    fields: dict[str, float] = {}
    for where, value in _leaves(data):
        if value in (None, "", []):
            continue
        if evidence is not None and grounded(where, value, evidence) is False:
            fields[where] = UNGROUNDED
        else:
            fields[where] = DISPUTED if where in disagreements else FOUND
    for key in KEY_FIELDS.get(doc_type, []):
        fields.setdefault(key, 0.0)
    return fields


def _leaves(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            out.extend(_leaves(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))  # a list is one field
    return out


def _implicated(fields: dict[str, float], checks: list[str]) -> dict[str, float]:
    """Fields a failed cross-check names ("subtotal", "line items", "due date") are
    not to be trusted more than IMPLICATED."""
    text = " ".join(checks).lower()
    out = dict(fields)
    for where, score in fields.items():
        label = where.rsplit(".", 1)[-1].replace("_", " ")
        if label in text or (label == "line items" and "line " in text):
            out[where] = min(score, IMPLICATED)
    return out
