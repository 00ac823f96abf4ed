"""The words on the page behind each field of a result: what the review screen highlights.

An extraction records values, not where they were printed. So the review screen looks for
each value among the words of the document's pages (conveyor.documents.layout), the way a
reviewer would, in the forms documents print values:

- a text (a name, an address, a number as printed): its words, in order, on one page,
  compared by their letters and digits only ("ACME Ltd." is "acme ltd"), across lines;
- an amount or a quantity ("1234.56"): a word that reads as that number in any of the
  number styles (1,234.56 / 1.234,56 / 1234.56), currency signs aside;
- a date ("2026-04-03"): a date printed on a line in any style conveyor.agents.values
  reads (both readings of an ambiguous 03/04/2026).

A value found nowhere gets no box (the screen says so); an amount printed several times
gets up to MAX_BOXES of them. A result that carries its own `evidence` ({field: [{page,
x0, y0, x1, y1}]}, from an extractor that knows) is taken as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from conveyor.agents.values import NumberStyle, dates_in
from conveyor.documents.layout import PageLayout, Word, lines_of

MAX_BOXES = 3
MAX_PAGES = 20  # a review screen shows the first pages; later ones are not searched
_ALNUM = re.compile(r"[^\W_]+", re.UNICODE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_STYLES = (NumberStyle(".", ","), NumberStyle(",", "."), NumberStyle(".", ""))
_SIGNS = "$€£¥₹%()"


@dataclass(frozen=True)
class Box:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def of(cls, word: Word) -> Box:
        return cls(word.page, word.x0, word.y0, word.x1, word.y1)

    def as_json(self) -> dict[str, float]:
        return {"page": self.page, "x0": self.x0, "y0": self.y0, "x1": self.x1, "y1": self.y1}


def leaves(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every scalar in `data`: `vendor.name`, `line_items.0.amount`."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, f"{prefix}{key}.")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from leaves(value, f"{prefix}{i}.")
    else:
        yield prefix[:-1], data


def locate(data: Any, pages: list[PageLayout]) -> dict[str, list[dict[str, float]]]:
    """Each field of `data` -> the boxes of the words it was read from (possibly none)."""
    prepared = [_Page.of(page) for page in pages[:MAX_PAGES]]
    found: dict[str, list[dict[str, float]]] = {}
    for path, value in leaves(data):
        boxes = _find(value, prepared)
        found[path] = [b.as_json() for b in boxes]
    return found


@dataclass(frozen=True)
class _Page:
    words: list[Word]  # reading order: lines top to bottom, left to right
    tokens: list[tuple[str, int]]  # (normalised token, index of its word)
    lines: list[list[int]]  # word indexes of each line

    @classmethod
    def of(cls, page: PageLayout) -> _Page:
        words: list[Word] = []
        lines: list[list[int]] = []
        for line in lines_of(page):
            lines.append(list(range(len(words), len(words) + len(line.words))))
            words.extend(line.words)
        tokens = [(t.lower(), i) for i, w in enumerate(words) for t in _ALNUM.findall(w.text)]
        return cls(words, tokens, lines)


def _find(value: Any, pages: list[_Page]) -> list[Box]:
    if isinstance(value, bool) or value is None:
        return []
    text = str(value).strip()
    if not text:
        return []
    if _ISO_DATE.match(text):
        return _find_date(text, pages)
    if _NUMBER.match(text):
        return _find_number(Decimal(text), pages) or _find_text(text, pages)
    return _find_text(text, pages)


def _find_text(text: str, pages: list[_Page]) -> list[Box]:
    wanted = [t.lower() for t in _ALNUM.findall(text)]
    if not wanted:
        return []
    n = len(wanted)
    for page in pages:
        tokens = [t for t, _ in page.tokens]
        for start in range(len(tokens) - n + 1):
            if tokens[start : start + n] == wanted:
                indexes = sorted({page.tokens[k][1] for k in range(start, start + n)})
                return [Box.of(page.words[i]) for i in indexes]
    return []


def _number_of(word: str) -> set[Decimal]:
    text = word.strip().strip(_SIGNS).rstrip(".,;:")
    for sign in _SIGNS:
        text = text.replace(sign, "")
    if not text or not any(c.isdigit() for c in text):
        return set()
    values = set()
    for style in _STYLES:
        try:
            value = style.parse(text)
        except InvalidOperation:
            value = None
        if value is not None:
            values.add(value)
    return values


def _find_number(value: Decimal, pages: list[_Page]) -> list[Box]:
    boxes: list[Box] = []
    for page in pages:
        for word in page.words:
            if value in _number_of(word.text):
                boxes.append(Box.of(word))
                if len(boxes) >= MAX_BOXES:
                    return boxes
    return boxes


def _find_date(text: str, pages: list[_Page]) -> list[Box]:
    import datetime

    wanted = datetime.date.fromisoformat(text)
    for page in pages:
        for line in page.lines:
            words = [page.words[i] for i in line]
            joined = " ".join(w.text for w in words)
            for token in dates_in(joined):
                readings = {token.date, *(token.both or ())}
                if wanted not in readings:
                    continue
                start = joined.find(token.text)
                if start < 0:
                    continue
                return _words_in(words, start, start + len(token.text))
    return []


def _words_in(words: list[Word], start: int, end: int) -> list[Box]:
    """The words of a line joined by spaces whose characters overlap [start, end)."""
    boxes = []
    at = 0
    for word in words:
        if at < end and at + len(word.text) > start:
            boxes.append(Box.of(word))
        at += len(word.text) + 1
    return boxes
