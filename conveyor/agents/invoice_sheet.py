"""An invoice's pages as lines of cells, and where the value of a label may be.

A label's value is printed in one of three places: in the same cell after it ("Rechnung
Nr. 42", "Invoice #: A-17"), in the next cell of the same line ("Datum | 11.10.2025"),
or below it, in the same column ("Fälligkeit" over "21.11.2018", a header row over its
values). `values_of` lists them in that order; the rules decide which one fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property

from conveyor.agents.invoice_labels import fold
from conveyor.agents.values import NumberStyle, cell_amount, number_styles
from conveyor.documents.layout import Cell, Line, PageLayout, lines_of
from conveyor.documents.text import DocumentText

# How far below a label its value may be, in line heights, and how far to the side.
BELOW_LINES = 2.6
# Pages read for their layout: an invoice says what it is within these; a 2,000-page
# upload is not worth 2,000 pages of word boxes.
MAX_PAGES = 30
SIDE_SLACK = 24.0
# A value beside its label may sit this many line heights lower and still be beside it.
LOWER_RIGHT = 0.8


@dataclass(frozen=True)
class Spot:
    """A place a value may be: its text, how it relates to the label, and where."""

    text: str
    how: str  # "same", "right" or "below"
    line: int  # index into Sheet.lines
    cell: Cell | None = None


def _rotated(line: Line) -> bool:
    """Whether `line` is only words set at a slant, as a watermark is ("COPY", "MUSTER",
    "SPECIMEN" across the page): the box of a word of four letters or more is about as
    tall as it is wide, where a word set straight is two to five times wider than tall."""
    words = [w for w in line.words if len(w.text) >= 4]
    return bool(words) and all(w.y1 - w.y0 >= 0.9 * (w.x1 - w.x0) for w in words)


# The hyphens of Unicode that are no minus and no dash: a font may print a number or a
# date with them ("IOPOLE\u2010jdz7", "18\u201008\u20102026"), where a reader looks for "-".
# And the full-width forms of East Asian text (U+FF01-U+FF5E: its digits, colon, brackets
# and Latin letters), read as the ASCII characters they are NFKC-equivalent to, the
# full-width yen sign as the yen sign and the ideographic space as a space: one character
# for one, so that positions in the text stay.
_HYPHENS = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\uffe5": "\u00a5",
        "\u3000": " ",
        **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
    }
)
_PLAIN = re.compile("[\u2010\u2011\u3000\uff01-\uff5e\uffe5]")


def _plain_hyphens(page: PageLayout) -> PageLayout:
    """The page with its words' Unicode hyphens (U+2010, U+2011) read as "-", and their
    full-width forms as ASCII."""
    if not any(_PLAIN.search(w.text) for w in page.words):
        return page
    words = tuple(replace(w, text=w.text.translate(_HYPHENS)) for w in page.words)
    return replace(page, words=words)


def _goes_on(tail: str, head: str, words: frozenset[str]) -> bool:
    """Whether `head`, beginning a line, goes on the word `tail` ended the line above
    with: it is in lower case, or in capitals after capitals ("FORNI" / "TURA" in a text
    set in capitals), and the text layer has the two as one word."""
    case = head[:1].islower() or (head.isupper() and tail.isupper())
    return case and tail + head in words


@dataclass
class Sheet:
    lines: list[Line]
    pages: list[PageLayout]
    style: NumberStyle
    styles: list[NumberStyle]
    plain: str = ""  # the pages' text as the text layer gives it (conveyor.documents.text)

    @classmethod
    def of(cls, text: DocumentText) -> Sheet:
        pages = [_plain_hyphens(page) for page in text.layouts(MAX_PAGES)]
        lines = [line for page in pages for line in lines_of(page) if not _rotated(line)]
        plain = "\n".join(p.text for p in text.pages[:MAX_PAGES]).translate(_HYPHENS)
        styles = number_styles(plain)
        return cls(lines, pages, styles[0], styles, plain)

    @cached_property
    def plain_words(self) -> frozenset[str]:
        """The words of the text layer. It joins a word broken at a line's end by a soft
        hyphen ("Unter" / "suchung" is "Untersuchung" there), where the word boxes do not."""
        return frozenset(re.findall(r"[^\W\d_]+", self.plain))

    def joined(self, parts: list[str]) -> str:
        """Lines of one text joined with spaces, but a word the line's end broke joined
        again, when the text layer reads it as one word (in lower case, or in capitals
        after capitals)."""
        out = ""
        for part in parts:
            part = " ".join(part.split())
            if not part:
                continue
            tail, head = re.search(r"[^\W\d_]+$", out), re.match(r"[^\W\d_]+", part)
            if tail and head and _goes_on(tail.group(0), head.group(0), self.plain_words):
                out += part
            else:
                out = f"{out} {part}" if out else part
        return out

    @cached_property
    def text(self) -> str:
        """Every line's text, one a line."""
        return "\n".join(line.text for line in self.lines)

    @cached_property
    def head(self) -> str:
        """The text of the first 60 lines, where a page names its parties' countries."""
        return "\n".join(line.text for line in self.lines[:60])

    @cached_property
    def folded(self) -> str:
        """Every line's text, folded (`invoice_labels.fold`), for what is looked for
        anywhere on the pages."""
        return " ".join(fold(line.text) for line in self.lines)

    def page_height(self, number: int) -> float:
        for page in self.pages:
            if page.number == number:
                return page.height or 842.0
        return 842.0

    def page_width(self, number: int) -> float:
        for page in self.pages:
            if page.number == number:
                return page.width or 595.0
        return 595.0

    def amount(self, text: str) -> object:
        return cell_amount(text, self.style)

    def values_of(self, index: int, cell_index: int, end: int, below: int = 2) -> list[Spot]:
        """Where the value of the label that ends at `end` in cell `cell_index` of line
        `index` may be: the rest of its cell, the next cells, the cells below it."""
        line = self.lines[index]
        cell = line.cells[cell_index]
        spots = []
        rest = cell.text[end:].strip(" :#\t").lstrip(".").strip()
        if rest:
            spots.append(Spot(rest, "same", index, cell))
        for right in line.cells[cell_index + 1 : cell_index + 3]:
            spots.append(Spot(right.text.strip(" :"), "right", index, right))
        if cell_index + 1 == len(line.cells):
            spots += self._lower_right(index, cell)
        spots += self.below(index, cell, below)
        return spots

    def _lower_right(self, index: int, cell: Cell) -> list[Spot]:
        """A value drawn beside its label but a little lower, so that it makes a line of
        its own ("Datum splatnosti" and, half a line lower, "19/03/2016")."""
        line = self.lines[index]
        if index + 1 >= len(self.lines):
            return []
        other = self.lines[index + 1]
        if other.page != line.page or other.y0 - line.y0 > LOWER_RIGHT * line.height:
            return []
        nearest = [c for c in other.cells if cell.x1 < c.x0 < cell.x1 + 200]
        if not nearest:
            return []
        return [Spot(nearest[0].text.strip(" :"), "right", index + 1, nearest[0])]

    def below(self, index: int, cell: Cell, count: int = 2) -> list[Spot]:
        """Cells under `cell` (overlapping its columns), in the next lines of its page."""
        line = self.lines[index]
        spots = []
        bottom = line.y1
        for j in range(index + 1, min(len(self.lines), index + 8)):
            other = self.lines[j]
            if other.page != line.page or other.y0 - bottom > BELOW_LINES * line.height:
                break
            near = [
                c
                for c in other.cells
                if c.x1 >= cell.x0 - SIDE_SLACK and c.x0 <= cell.x1 + SIDE_SLACK
            ]
            if near:
                # The cell most in line with the label: left edges, then middles.
                best = min(near, key=lambda c: min(abs(c.x0 - cell.x0), abs(c.x1 - cell.x1)))
                spots.append(Spot(best.text, "below", j, best))
                bottom = other.y1
            if len(spots) >= count:
                break
        return spots
