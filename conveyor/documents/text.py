"""The text of a PDF, page by page, with PDFium (pypdfium2).

PDFium's text page gives the characters in reading order and breaks lines where the
glyphs do, so a table row drawn on one baseline stays one line ("Widget 3 9.50 28.50"):
line-oriented rules can read it. A page whose text layer is empty but that shows an image
is a scan: it is listed in `scanned_pages` and the result says that OCR would be needed.

Where the words are (layout.py) is read only when a reader asks for it
(`DocumentText.layouts()`): a word's box costs two PDFium calls (its first and last
character's loose box), which on a dense page is several times the cost of its text, and
most readers (contracts, classification) need the text alone. An invoice asks, for its
few pages. A page whose words came from elsewhere (OCR) carries them in `PageText.layout`.

PDFium is not thread-safe: every call holds PDFIUM_LOCK (see pdf.py), taken once per page
so that threads reading other documents wait a page, not a whole 200-page contract.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.layout import PageLayout, Word, text_layout
from conveyor.documents.pdf import PDFIUM_LOCK, open_pdf

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
    layout: PageLayout | None = None  # the words and where they are; None: not known


@dataclass(frozen=True)
class DocumentText:
    pages: list[PageText]
    name: str | None = None
    # The PDF the text came from, for layouts(); None for text made some other way.
    source: Path | bytes | None = field(default=None, repr=False, compare=False)
    _text: str = field(init=False, repr=False, compare=False)
    _layouts: dict[int, PageLayout] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_text", PAGE_SEPARATOR.join(p.text for p in self.pages))

    def layouts(self, first: int | None = None) -> list[PageLayout]:
        """The words of every page (or of the `first` pages) and where they are, each page
        read once: from the page itself when it has them (OCR), else from the PDF, else
        laid out from the page's text as if it were printed in a fixed-pitch font (text
        made without a PDF: a snippet, a test)."""
        pages = self.pages if first is None else self.pages[:first]
        known = self._layouts
        wanted = [
            p.number
            for p in pages
            if p.number not in known and p.layout is None and p.has_text_layer
        ]
        if wanted and self.source is not None:
            # A PDF gone since its text was read: its text is laid out instead (below).
            with contextlib.suppress(UnreadableDocument):
                known.update(read_layouts(self.source, wanted))
        for page in pages:
            if page.number not in known:
                known[page.number] = page.layout or text_layout(page.number, page.text)
        return [known[page.number] for page in pages]

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
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    which = f"{name!r}" if name else "the PDF"
    pages: list[PageText] = []
    with open_pdf(source, which) as document:
        with PDFIUM_LOCK:
            count = len(document)
        try:
            for index in range(count):
                # The lock is taken page by page: another thread's document gets its turn
                # between two pages of a long one.
                with PDFIUM_LOCK:
                    pages.append(page_text(document, index))
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(
                f"page {len(pages) + 1} of {which} cannot be read: {exc}"
            ) from None
    if not pages:
        raise UnreadableDocument(f"{which} has no pages")
    return DocumentText(pages=pages, name=name, source=source)


def read_layouts(source: Path | bytes, numbers: list[int]) -> dict[int, PageLayout]:
    """The words of pages `numbers` (1-based) of the PDF at `source`, with their boxes."""
    import pypdfium2 as pdfium

    layouts: dict[int, PageLayout] = {}
    with open_pdf(source) as document:
        try:
            for number in numbers:
                with PDFIUM_LOCK:
                    layouts[number] = _page_layout(document, number)
        except pdfium.PdfiumError as exc:
            raise UnreadableDocument(f"page {number} cannot be read: {exc}") from None
    return layouts


def _page_layout(document: Any, number: int) -> PageLayout:
    page = document[number - 1]
    try:
        width, height = page.get_size()
        textpage = page.get_textpage()
        try:
            chars = int(textpage.count_chars())
            raw = textpage.get_text_range() if chars else ""
            words = _words(textpage, raw, chars, number, float(height)) if chars else ()
        finally:
            textpage.close()
        return PageLayout(number, float(width), float(height), words)
    finally:
        page.close()


def page_text(document: Any, index: int) -> PageText:
    """The text of page `index` (0-based) of an open pypdfium2 document."""
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
            number=index + 1,
            text=text,
            has_text_layer=bool(text),
            chars=chars,
            blank=blank,
        )
    finally:
        page.close()


_WORD = re.compile(r"[^\s\ufffe\x00]+")


def _words(textpage: Any, raw: str, chars: int, number: int, height: float) -> tuple[Word, ...]:
    """The page's words, each boxed by its first and last characters' loose boxes (the
    font's ascent to descent: every word of a line gets the same height, whatever its
    letters)."""
    import ctypes

    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    if len(raw) != chars:
        # PDFium's text and its character indexes disagree (rare: characters it drops from
        # the text): read the text character by character so that indexes line up.
        get = pdfium_c.FPDFText_GetUnicode
        # A character outside the BMP is two UTF-16 halves, each an index of its own.
        raw = "".join(_char(get(textpage.raw, i)) for i in range(chars))
    rect = pdfium_c.FS_RECTF()
    box = pdfium_c.FPDFText_GetLooseCharBox
    handle, pointer = textpage.raw, ctypes.byref(rect)
    words = []
    for match in _WORD.finditer(raw):
        box(handle, match.start(), pointer)
        left, top, bottom = rect.left, rect.top, rect.bottom
        box(handle, match.end() - 1, pointer)
        right = rect.right
        top, bottom = max(top, rect.top), min(bottom, rect.bottom)
        text = match.group(0).translate(_CLEANUP)
        if text:
            words.append(Word(text, left, height - top, right, height - bottom, number))
    return tuple(words)


def _char(code: int) -> str:
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code or 32)
