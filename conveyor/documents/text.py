"""The text of a PDF, page by page, with PDFium (pypdfium2).

PDFium's text page gives the characters in reading order and breaks lines where the
glyphs do, so a table row drawn on one baseline stays one line ("Widget 3 9.50 28.50"):
line-oriented rules can read it. A page whose text layer is empty but that shows an image
is a scan: it is listed in `scanned_pages` and the result says that OCR would be needed.

PDFium is not thread-safe: every call holds PDFIUM_LOCK (see pdf.py), taken once per page
so that threads reading other documents wait a page, not a whole 200-page contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.pdf import PDFIUM_LOCK

PAGE_SEPARATOR = "\n\n"

# PDFium's markers: U+FFFE for a soft hyphen at a line end, U+0002 for a hyphen it
# could not map. Neither is text a reader wants.
_CLEANUP = str.maketrans({"\ufffe": None, "\x02": "-", "\x00": None, "\r": None})


@dataclass(frozen=True)
class PageText:
    number: int  # 1-based
    text: str
    has_text_layer: bool
    chars: int  # characters in the text layer, as PDFium counts them
    blank: bool = False  # no text and nothing drawn: an empty page, not a scan


@dataclass(frozen=True)
class DocumentText:
    pages: list[PageText]
    name: str | None = None
    _text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_text", PAGE_SEPARATOR.join(p.text for p in self.pages))

    @property
    def page_count(self) -> int:
        return len(self.pages)

    @property
    def text(self) -> str:
        """All pages' text, separated by a blank line."""
        return self._text

    @property
    def scanned_pages(self) -> list[int]:
        """1-based numbers of the pages with no text layer that show something: scans."""
        return [p.number for p in self.pages if not p.has_text_layer and not p.blank]

    @property
    def notes(self) -> list[str]:
        """What a reader of an extraction needs to know about the text it came from."""
        scanned = self.scanned_pages
        if not scanned:
            return []
        if len(scanned) == self.page_count:
            return ["no page has a text layer (a scanned document); OCR would be needed to read it"]
        which = _ranges(scanned)
        noun = "page" if len(scanned) == 1 else "pages"
        verb = "has" if len(scanned) == 1 else "have"
        return [f"{noun} {which} {verb} no text layer; OCR would be needed"]


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3, 7, 9-10'."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def extract_text(source: Path | bytes, *, name: str | None = None) -> DocumentText:
    """The text of every page of the PDF at `source` (a path, or the bytes themselves).

    UnreadableDocument when PDFium cannot open it (damaged beyond repair, truncated before
    its pages, protected by a password) or it has no page."""
    # Imported here: processes that never read PDFs do not load PDFium.
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    which = f"{name!r}" if name else "the PDF"
    pages: list[PageText] = []
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
            count = len(document)
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"{which} cannot be opened: {_reason(exc)}") from None
        except OSError as exc:  # a path that is not there, or not readable
            raise UnreadableDocument(f"{which} cannot be read: {exc.strerror or exc}") from None
    try:
        for index in range(count):
            # The lock is taken page by page: another thread's document gets its turn
            # between two pages of a long one.
            with PDFIUM_LOCK:
                pages.append(_page_text(document, index))
    except pdfium.PdfiumError as exc:
        raise UnreadableDocument(
            f"page {len(pages) + 1} of {which} cannot be read: {exc}"
        ) from None
    finally:
        with PDFIUM_LOCK:
            document.close()
    if not pages:
        raise UnreadableDocument(f"{which} has no pages")
    return DocumentText(pages=pages, name=name)


def _page_text(document: Any, index: int) -> PageText:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            chars = int(textpage.count_chars())
            raw = textpage.get_text_range() if chars else ""
        finally:
            textpage.close()
        text = raw.translate(_CLEANUP).strip()
        blank = False
        if not text:
            # Only for pages without text: is anything drawn on it at all? A scan is an
            # image; a page with nothing on it is blank, and needs no OCR.
            blank = not any(True for _ in page.get_objects(max_depth=2))
        return PageText(
            number=index + 1, text=text, has_text_layer=bool(text), chars=chars, blank=blank
        )
    finally:
        page.close()


def _reason(exc: Exception) -> str:
    message = str(exc)
    if "password" in message.lower():
        return "it is protected by a password (send it decrypted)"
    return f"it is damaged or not a PDF ({message})"
