"""Page counts of PDFs, with PDFium (pypdfium2).

PDFium is not thread-safe: no two calls may run at once in a process, even on different
documents. Everything in Conveyor that calls it holds PDFIUM_LOCK (document agents that
render pages in threads must too).
"""

from __future__ import annotations

import re
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
    open it (damaged, protected by a password, without pages) or the file cannot be read."""
    # Imported here: processes that never read PDFs do not load PDFium.
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
        except pdfium.PdfiumError:
            raise UnreadableDocument(f"{which} {_refused(source)}") from None
        except OSError as exc:  # a path that is not there, or not readable
            raise UnreadableDocument(f"{which} cannot be read: {exc.strerror or exc}") from None
    try:
        yield document
    finally:
        with PDFIUM_LOCK:
            document.close()


# Why PDFium refused a file is read from the file itself: PDFium's error code is its
# *last* error, which may be left over from another document (a zero-page PDF read after
# an encrypted one was reported as "protected by a password").
_ENCRYPTED = re.compile(rb"/Encrypt\b")
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_NO_KIDS = re.compile(rb"/Count\s+0(?![0-9.])")
_FIRST_BYTES = 32 * 1024 * 1024  # enough for any trailer we would believe


def _refused(source: Path | bytes) -> str:
    """What to say about a PDF PDFium cannot open: protected, without pages, or damaged."""
    try:
        data = source if isinstance(source, bytes) else _head(source)
    except OSError:
        data = b""
    if _ENCRYPTED.search(data):
        return "cannot be opened: it is protected by a password (send it decrypted)"
    if data.startswith(b"%PDF") and _NO_KIDS.search(data) and not _PAGE.search(data):
        return "has no pages"
    return "cannot be opened: it is damaged or not a PDF"


def _head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(_FIRST_BYTES)


def page_count(path: Path, name: str | None = None) -> int:
    """The number of pages of the PDF at `path`; UnreadableDocument if PDFium cannot open
    it (damaged beyond repair, or protected by a password) or it has no page."""
    which = f"{name!r}" if name else "the PDF"
    with open_pdf(path, which) as document, PDFIUM_LOCK:
        pages = len(document)
    if pages < 1:
        raise UnreadableDocument(f"{which} has no pages")
    return int(pages)
