"""A reviewed task's document: its pages as PNG (pypdfium2) and the words on them.

The review screen shows a page as an image with the words behind each field outlined on
top; the boxes are in PDF points (y from the top), and the screen scales them by the
image's width over the page's. Rendering and reading words are CPU work under PDFium's
lock: callers run them in a thread.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.layout import PageLayout
from conveyor.documents.pdf import PDFIUM_LOCK, open_pdf
from conveyor.documents.sniff import PDF

PAGE_WIDTH_PX = 1100  # what the screen shows a page at; twice a page's points at most
MAX_SCALE = 2.0
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Document:
    sha256: str
    pages: int


def document_of(payload: Any) -> Document | None:
    """The stored PDF a task's payload names (`sha256`, `media_type`, `pages`), if any."""
    if not isinstance(payload, dict):
        return None
    sha256 = payload.get("sha256")
    if not isinstance(sha256, str) or not _SHA256.match(sha256):
        return None
    if (payload.get("media_type") or PDF) != PDF:
        return None
    pages = payload.get("pages")
    return Document(sha256, pages if isinstance(pages, int) and pages > 0 else 1)


def render_png(path: Path, number: int) -> bytes:
    """Page `number` (1-based) as a PNG, PAGE_WIDTH_PX wide (at most MAX_SCALE x points)."""
    with open_pdf(path, "the document") as document:
        if not 1 <= number <= len(document):
            raise UnreadableDocument(f"the document has no page {number} (it has {len(document)})")
        with PDFIUM_LOCK:
            page = document[number - 1]
            try:
                width, _ = page.get_size()
                scale = min(MAX_SCALE, PAGE_WIDTH_PX / max(width, 1.0))
                bitmap = page.render(scale=scale)
                image = bitmap.to_pil()
                bitmap.close()
            finally:
                page.close()
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


def page_layouts(path: Path, count: int) -> list[PageLayout]:
    """The words of the first `count` pages, with their boxes."""
    from conveyor.documents.text import read_layouts

    with open_pdf(path, "the document") as document:
        count = min(count, len(document))
    layouts = read_layouts(path, list(range(1, count + 1)))
    return [layouts[n] for n in sorted(layouts)]
