"""Where the words of a page are: the one word type of the text path, and lines of them.

    Word        a word and its box, in PDF points with y from the top of the page
    PageLayout  a page's size and its words (from PDFium's text layer, or from OCR)
    Line        words on one baseline, cut into cells where the gap is wide
    lines_of()  a page's words -> lines, top to bottom, left to right

Every reader of a document's layout (the invoice rules, OCR) speaks these types, so they
are deliberately plain: frozen dataclasses of floats and strings. A text layer gives each
word a `score` of 1.0; an OCR engine gives its own confidence in [0, 1].

Lines are made by vertical overlap, not by drawing order: two blocks side by side on the
same baseline (a seller's address beside the invoice date) make one line of two cells,
and a table row is one line whose cells are its columns, whatever order the PDF drew
them in.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace
from itertools import pairwise


@dataclass(frozen=True, slots=True)
class Word:
    """A word and its box: PDF points, y from the top of the page (y0 < y1)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    page: int  # 1-based
    score: float = 1.0  # OCR confidence; 1.0 for a text layer

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass(frozen=True)
class PageLayout:
    """A page's words, with its size in points (the words' coordinate space)."""

    number: int  # 1-based
    width: float
    height: float
    words: tuple[Word, ...] = ()


# A gap wider than this many line heights between two words starts a new cell: a word
# space is about a third of the font size, a column gap is wider than the font is tall.
CELL_GAP = 1.0


@dataclass(frozen=True)
class Cell:
    """Words of one line with no wide gap between them: a label, a value, a column."""

    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1


@dataclass(frozen=True)
class Line:
    """Words on one baseline, left to right, and the cells they form."""

    words: tuple[Word, ...]
    cells: tuple[Cell, ...] = field(default=())

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def page(self) -> int:
        return self.words[0].page

    @property
    def y0(self) -> float:
        return min(w.y0 for w in self.words)

    @property
    def y1(self) -> float:
        return max(w.y1 for w in self.words)

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def lines_of(page: PageLayout) -> list[Line]:
    """The page's words grouped into lines (top to bottom), each cut into cells."""
    rows: list[list[Word]] = []
    spans: list[tuple[float, float]] = []
    # A word many times taller than the page's words is drawn rotated (a "SPECIMEN" or
    # "PAID" stamp across the page): it makes a line of its own, and its band, half the
    # page high, takes no other word in.
    heights = sorted(w.height for w in page.words if w.text.strip())
    tall = 4 * heights[len(heights) // 2] if heights else float("inf")
    for word in sorted(page.words, key=lambda w: (w.middle, w.x0)):
        if not word.text.strip():
            continue
        if word.height > tall:
            rows.append([word])
            spans.append((word.middle, word.middle))
            continue
        # A word joins the last line when its middle lies within that line's band: the
        # words of a line overlap vertically even when their fonts differ in size.
        if rows and spans[-1][0] <= word.middle <= spans[-1][1]:
            # The band stays the first word's: widening it would chain lines together.
            rows[-1].append(word)
        else:
            rows.append([word])
            spans.append((word.y0, word.y1))
    return [_line(compose_accents(sorted(row, key=lambda w: w.x0))) for row in rows]


# The spacing accents TeX draws over a letter as glyphs of their own ("Numéro" comes out
# of the text layer as "Numero" and an acute accent over its e), as the combining marks
# they stand for.
_ACCENTS = {
    "\u00b4": "\u0301",  # acute
    "`": "\u0300",  # grave
    "\u02c6": "\u0302",  # circumflex
    "\u00a8": "\u0308",  # diaeresis
    "\u02dc": "\u0303",  # tilde
    "\u00b8": "\u0327",  # cedilla
    "\u02c7": "\u030c",  # caron
    "\u02d8": "\u0306",  # breve
    "\u02da": "\u030a",  # ring
}
_VOWELS = frozenset("aeiouyAEIOUY")


def compose_accents(words: list[Word]) -> list[Word]:
    """A line's words (left to right) with each spacing accent that lies over a letter of
    another word put on that letter ("Numero" and an acute -> "Numéro"), and the pieces of a word
    the accents cut apart, which touch, joined again ("Quantit" "é" -> "Quantité")."""
    if not any(w.text in _ACCENTS for w in words):
        return words
    texts = [w.text for w in words]
    # Hosts are words of the line's size: a rotated watermark's box covers everything.
    heights = sorted(w.height for w in words)
    tall = 2 * heights[len(heights) // 2]
    accented = [False] * len(words)
    dropped = [False] * len(words)
    for k, accent in enumerate(words):
        if accent.text not in _ACCENTS:
            continue
        middle = (accent.x0 + accent.x1) / 2
        host = next(
            (
                j
                for j, w in enumerate(words)
                if w.text not in _ACCENTS and w.x0 <= middle <= w.x1 and w.height <= tall
            ),
            None,
        )
        if host is None:
            continue
        word = words[host]
        at = _accented_letter(texts[host], (middle - word.x0) / max(word.x1 - word.x0, 0.01))
        if at is None:
            continue
        letter = unicodedata.normalize("NFC", texts[host][at] + _ACCENTS[accent.text])
        if len(letter) != 1:
            continue
        texts[host] = texts[host][:at] + letter + texts[host][at + 1 :]
        accented[host] = True
        dropped[k] = True
    out: list[Word] = []
    out_accented: list[bool] = []
    for j, word in enumerate(words):
        if dropped[j]:
            continue
        if out and abs(word.x0 - out[-1].x1) <= 0.5 and (accented[j] or out_accented[-1]):
            last = out[-1]
            out[-1] = Word(
                last.text + texts[j],
                last.x0,
                min(last.y0, word.y0),
                word.x1,
                max(last.y1, word.y1),
                last.page,
                min(last.score, word.score),
            )
            out_accented[-1] = True
            continue
        out.append(word if texts[j] == word.text else replace(word, text=texts[j]))
        out_accented.append(accented[j])
    return out


def _accented_letter(text: str, fraction: float) -> int | None:
    """The letter of `text` an accent at `fraction` of its width stands over: the one
    there by character count, or a neighbour, a vowel first (letters differ in width)."""
    guess = min(len(text) - 1, max(0, int(fraction * len(text))))
    near = [i for i in (guess, guess - 1, guess + 1) if 0 <= i < len(text)]
    letters = [i for i in near if text[i].isalpha()]
    vowels = [i for i in letters if text[i] in _VOWELS]
    return (vowels or letters)[0] if letters else None


def _line(words: list[Word]) -> Line:
    heights = sorted(w.height for w in words)
    height = heights[len(heights) // 2] or 1.0
    cells: list[list[Word]] = [[words[0]]]
    for before, word in pairwise(words):
        if word.x0 - before.x1 > CELL_GAP * height:
            cells.append([word])
        else:
            cells[-1].append(word)
    return Line(words=tuple(words), cells=tuple(Cell(tuple(c)) for c in cells))


# The pitch of text_layout's imagined font: two spaces make a gap wider than a line is
# tall (a new cell), one space does not.
_PITCH = 6.0
_LEADING = 12.0
_SIZE = 10.0


def text_layout(number: int, text: str) -> PageLayout:
    """Words for a page known only as text, laid out as a fixed-pitch print of it: a
    character per 6 points, a line per 12. Runs of two or more spaces become cell gaps,
    so text that lines up with spaces reads like a page that lines up by position."""
    words: list[Word] = []
    lines = text.splitlines()
    for row, line in enumerate(lines):
        column = 0
        for token in line.split(" "):
            if token:
                x0 = column * _PITCH
                y0 = row * _LEADING
                words.append(Word(token, x0, y0, x0 + len(token) * _PITCH, y0 + _SIZE, number))
            column += len(token) + 1
    width = max((len(line) for line in lines), default=0) * _PITCH
    return PageLayout(number, width, len(lines) * _LEADING, tuple(words))
