"""An item table's header: a line naming at least three kinds of column (description,
quantity, price, amount, ...: invoice_columns.COLUMN_LABELS) and printing no amount,
read into its columns and their x-ranges; and the line of words just under it that is
more of the header.

A module of its own because the sums' reader (invoice_sums) finds a table's header too,
and reads nothing of its rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conveyor.agents.invoice_columns import column_kind, column_label
from conveyor.agents.invoice_labels import fold
from conveyor.agents.invoice_sheet import Sheet
from conveyor.documents.layout import Cell, Line


@dataclass
class Column:
    kind: str
    x0: float
    x1: float


@dataclass
class Header:
    line: int
    columns: list[Column]
    # Where the rows' descriptions read so far begin, the furthest left: under a header
    # centred over a wide column, left of the header's own word.
    left: float | None = None

    def column_of(self, cell: Cell) -> str | None:
        middle = (cell.x0 + cell.x1) / 2
        best, distance = None, 1e9
        for column in self.columns:
            if column.x0 - 4 <= middle <= column.x1 + 4:
                return column.kind
            gap = min(abs(middle - column.x0), abs(middle - column.x1))
            if gap < distance:
                best, distance = column.kind, gap
        return best

    def x_of(self, kind: str) -> float | None:
        return next((c.x0 for c in self.columns if c.kind == kind), None)


def find_header(line: Line) -> Header | None:
    columns: list[Column] = []
    for cell in line.cells:
        if any(ch.isdigit() for ch in cell.text) and not re.search(r"[a-z]", fold(cell.text)):
            return None
        labels = _labels_of(cell)
        whole = column_kind(cell.text)
        if whole and len(labels) <= 1:
            columns.append(Column(whole, cell.x0, cell.x1))
            continue
        for kind, x0, x1 in labels:
            # Words of one column's label ("Menge Einheit") side by side are one column;
            # two prices side by side are two: the unit's and the line's.
            if columns and columns[-1].kind == kind != "price" and x0 - columns[-1].x1 < 8:
                columns[-1].x1 = x1
            else:
                columns.append(Column(kind, x0, x1))
    _last_price_is_the_amount(columns)
    kinds = {c.kind for c in columns}
    if len(kinds) >= 3 and kinds & {"description", "amount", "price"} and len(columns) >= 3:
        return Header(-1, columns)
    # A table of services: a description and an amount, nothing else.
    if kinds == {"description", "amount"} and len(line.cells) == 2:
        return Header(-1, columns)
    return None


def _labels_of(cell: Cell) -> list[tuple[str, float, float]]:
    """The column labels in a header cell, each with its x-range: labels of several words
    ("Unit price", "Prix unitaire") are one, found from each word on."""
    starts, at = [], 0
    for word in cell.words:
        starts.append(at)
        at += len(word.text) + 1
    text, found, k = cell.text, [], 0
    while k < len(cell.words):
        label = column_label(text, starts[k])
        if label is None:
            k += 1
            continue
        last = k
        while last + 1 < len(cell.words) and starts[last + 1] < label[1]:
            last += 1
        found.append((label[0], cell.words[k].x0, cell.words[last].x1))
        k = last + 1
    return found


def _last_price_is_the_amount(columns: list[Column]) -> None:
    """A header with no amount column: its last price column is the line's amount, when
    there are two ("Unit price | Price") or none says what is counted ("Prices in EUR")."""
    if any(c.kind == "amount" for c in columns):
        return
    prices = [c for c in columns if c.kind == "price"]
    counted = any(c.kind == "quantity" for c in columns)
    if len(prices) >= 2 or (len(prices) == 1 and not counted):
        prices[-1].kind = "amount"


def header_rest(line: Line, head: Line, sheet: Sheet) -> bool:
    """A line of words just under (or over) a header, with no number: more header."""
    if line.y0 - head.y1 > 1.5 * head.height:
        return False
    return not any(ch.isdigit() for ch in line.text)
