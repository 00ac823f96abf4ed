"""A long document in parallel: the page ranges its child tasks read, and one extraction
from their answers.

    ranges = page_ranges(document, "contract", chunk_tokens=6000)    # [] : one request will do
    part = read_range(path, ranges[2], name=name)                    # a child's pages only
    extraction = assemble("contract", document, parts, model="gpt-4o-mini")

The split follows the LLM extractor's chunking (`conveyor.agents.llm_pages.chunk_text_pages`):
the pages a chunk of `chunk_tokens` holds are one range, so a child sends the requests the
sequential path would have sent for those pages, no more (a page too long for one chunk is
cut there as it is here, and stays in one range: a range never splits a page). Scanned
pages belong to the range before them (or the first one): a child renders its own.

The merge is the chunk merge (`conveyor.agents.llm_merge.merge`: invoice headers from the first
part that has them, line items concatenated, contract fields first non-null, parties once)
over the parts in page order, with the evidence of the whole document's text, which no
child has: a disagreement between two parts is settled by the one value the document
prints, and every field is grounded against all of its pages, as the sequential path does.
What a child noted about its own answer (values read as numbers, values that did not
validate) is kept with its range; what the parent decides again (groundedness,
disagreements, the number of requests) is decided once, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conveyor.agents.grounding import Evidence
from conveyor.agents.llm_budget import overhead_tokens
from conveyor.agents.llm_merge import SALVAGED, extraction_of_parts, merge
from conveyor.agents.llm_pages import chunk_text_pages
from conveyor.documents.text import DocumentText, PageText
from conveyor.documents.types import Extraction

MIN_ROOM_TOKENS = 200  # as the LLM extractor: a chunk must leave room for pages

# Notes a child's extraction makes that the parent makes again over the whole document.
_REDONE = ("read in ", "not printed in the document", "parts of the document disagree")


@dataclass(frozen=True)
class PageRange:
    """Pages `first` to `last` (1-based, inclusive) of a document."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if not 1 <= self.first <= self.last:
            raise ValueError(f"not a page range: {self.first}-{self.last}")

    @property
    def label(self) -> str:
        return (
            f"page {self.first}" if self.first == self.last else f"pages {self.first}-{self.last}"
        )

    def to_json(self) -> list[int]:
        return [self.first, self.last]

    @classmethod
    def from_json(cls, value: Any, pages: int) -> PageRange:
        """The range a child's payload names; ValueError when it is not one of `pages`."""
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            raise ValueError(f"a page range is [first, last], not {value!r}")
        found = cls(value[0], value[1])
        if found.last > pages:
            raise ValueError(f"{found.label} is past the document's {pages} page(s)")
        return found


def page_ranges(document: DocumentText, doc_type: str, chunk_tokens: int) -> list[PageRange]:
    """The page ranges of one chunk each; [] when the document's text fits one request (no
    fan-out: the sequential path is the same work with no children to wait for)."""
    room = chunk_tokens - overhead_tokens(doc_type)
    if room < MIN_ROOM_TOKENS:
        raise ValueError(
            f"a chunk of {chunk_tokens} tokens leaves no room for pages beside the "
            f"{doc_type} schema and instructions; allow more (CONVEYOR_LLM_CHUNK_TOKENS)"
        )
    starts: list[int] = []
    last_page = 0
    for chunk in chunk_text_pages(document.pages, room):
        if chunk.pages[0] > last_page:  # else it goes on cutting a page: the same range
            starts.append(chunk.pages[0])
        last_page = chunk.pages[-1]
    if len(starts) < 2:
        return []
    starts[0] = 1  # scanned or blank pages before the first text go with it
    ends = [s - 1 for s in starts[1:]] + [document.page_count]
    return [PageRange(a, b) for a, b in zip(starts, ends, strict=True)]


def part_of(document: DocumentText, pages: PageRange) -> DocumentText:
    """The document with only the range's pages: the others blank (no text, nothing to
    render), so page numbers, the page count and the chunk labels stay the document's."""
    kept = [
        page if pages.first <= page.number <= pages.last else _blank(page.number)
        for page in document.pages
    ]
    return DocumentText(pages=kept, name=document.name, source=document.source)


def read_range(path: Path, pages: PageRange, *, name: str | None = None) -> DocumentText:
    """The text of the range's pages of the PDF at `path` (the others blank), reading no
    other page: a child of a 200-page contract reads its five. Blocking: run in a thread.
    UnreadableDocument as `extract_text`; ValueError when the range is past the end."""
    from conveyor.documents.pdf import PDFIUM_LOCK, open_pdf
    from conveyor.documents.text import page_text

    which = f"{name!r}" if name else "the PDF"
    with open_pdf(path, which) as document:
        with PDFIUM_LOCK:
            count = len(document)
        if pages.last > count:
            raise ValueError(f"{pages.label} is past the {count} page(s) of {which}")
        read: dict[int, PageText] = {}
        for number in range(pages.first, pages.last + 1):
            with PDFIUM_LOCK:
                read[number] = page_text(document, number - 1)
    kept = [read.get(n) or _blank(n) for n in range(1, count + 1)]
    return DocumentText(pages=kept, name=name, source=path)


def _blank(number: int) -> PageText:
    return PageText(number=number, text="", has_text_layer=False, chars=0, blank=True)


def document_evidence(document: DocumentText, *, images_read: bool = False) -> Evidence | None:
    """What the merge grounds fields against: the whole document's text. None when it has
    no text, or when some pages were read from images (`images_read`), which the text
    cannot confirm, so nothing is grounded (as the sequential path). Blocking: 0.5 s of
    CPU for a 200-page contract; run in a thread."""
    if not document.text.strip() or images_read:
        return None
    return Evidence.of(document.text)


def assemble(
    doc_type: str,
    document: DocumentText,
    parts: Sequence[Extraction],
    *,
    model: str,
    labels: Sequence[str] | None = None,
    images_read: bool = False,
    evidence: Evidence | None = None,
) -> Extraction:
    """One extraction of `document` from its parts' extractions, in page order (`labels`:
    what each part read, for its notes). `evidence`: document_evidence(document,
    images_read=images_read), when the caller has it already; else it is built here."""
    merged = merge(doc_type, [part.data for part in parts])
    notes: list[str] = []
    salvaged: list[str] = []
    for i, part in enumerate(parts):
        label = labels[i] if labels is not None else f"part {i + 1}"
        notes.extend(f"{label}: {n}" for n in part.notes if not n.startswith(_REDONE))
        salvaged.extend(w for w, score in part.fields.items() if score == SALVAGED)
    if evidence is None:
        evidence = document_evidence(document, images_read=images_read)
    return extraction_of_parts(
        doc_type,
        merged,
        evidence,
        notes=notes,
        read_note=f"read in {len(parts)} parts, one child task each",
        salvaged=salvaged,
        pages=document.page_count,
        extractor=f"llm:{model}",
    )
