"""Page counts of PDFs, with PDFium (pypdfium2).

PDFium is not thread-safe: no two calls may run at once in a process, even on different
documents. Everything in Conveyor that calls it holds PDFIUM_LOCK (document agents that
render pages in threads must too).
"""

from __future__ import annotations

import threading
from pathlib import Path

from conveyor.documents.errors import UnreadableDocument

PDFIUM_LOCK = threading.Lock()


def page_count(path: Path, name: str | None = None) -> int:
    """The number of pages of the PDF at `path`; UnreadableDocument if PDFium cannot open
    it (damaged beyond repair, or protected by a password) or it has no page."""
    # Imported here: processes that never count pages do not load PDFium.
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    which = f"{name!r}" if name else "the PDF"
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(path)
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"{which} cannot be opened: {exc}") from None
        try:
            pages = len(document)
        finally:
            document.close()
    if pages < 1:
        raise UnreadableDocument(f"{which} has no pages")
    return int(pages)
