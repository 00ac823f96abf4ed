"""Page counts of PDFs, with PDFium (pypdfium2).

PDFium is not thread-safe: no two calls may run at once in a process, even on different
documents. Everything in Conveyor that calls it holds PDFIUM_LOCK (document agents that
render pages in threads must too).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conveyor.documents.errors import UnreadableDocument

PDFIUM_LOCK = threading.Lock()


@contextmanager
def open_pdf(source: Path | bytes, which: str = "the PDF") -> Iterator[Any]:
    """The PDFium document at `source`, opened and closed under PDFIUM_LOCK; between the
    two the caller takes the lock for each call it makes (page by page, so that another
    thread's document gets its turn). UnreadableDocument, saying why, if PDFium cannot
    open it (damaged, protected by a password) or the file cannot be read."""
    # Imported here: processes that never read PDFs do not load PDFium.
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"{which} cannot be opened: {_reason(exc)}") from None
        except OSError as exc:  # a path that is not there, or not readable
            raise UnreadableDocument(f"{which} cannot be read: {exc.strerror or exc}") from None
    try:
        yield document
    finally:
        with PDFIUM_LOCK:
            document.close()


def _reason(exc: Exception) -> str:
    message = str(exc)
    if "password" in message.lower():
        return "it is protected by a password (send it decrypted)"
    return f"it is damaged or not a PDF ({message})"


def page_count(path: Path, name: str | None = None) -> int:
    """The number of pages of the PDF at `path`; UnreadableDocument if PDFium cannot open
    it (damaged beyond repair, or protected by a password) or it has no page."""
    which = f"{name!r}" if name else "the PDF"
    with open_pdf(path, which) as document, PDFIUM_LOCK:
        pages = len(document)
    if pages < 1:
        raise UnreadableDocument(f"{which} has no pages")
    return int(pages)
