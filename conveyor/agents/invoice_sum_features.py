"""Every amount an invoice prints, as a candidate for its net, tax and gross, with the
features a learned chooser (invoice_sum_model) weighs: what labels it, where it stands,
how it adds up with the others. No feature names a layout, a language or a vendor: a
label counts by its kind only (invoice_sum_labels' vocabulary), a place by page and
height, a value by its size among the others and by arithmetic.

    amounts(sheet, lines_total, table) -> list[Candidate]   # one per distinct value

A value printed several times is one candidate: its features are those of any of its
places (a label beside one of them counts), so how often it is printed is a feature too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

from conveyor.agents.invoice_labels import sum_label
from conveyor.agents.invoice_sheet import BELOW_LINES, SIDE_SLACK, Sheet
from conveyor.agents.invoice_table_header import find_header
from conveyor.agents.values import PERCENT, cell_amounts, currency_of, dates_in
from conveyor.documents.layout import Cell

CENT = Decimal("0.01")
KINDS = ("net", "lines", "tax", "gross", "due", "charge", "discount", "withheld", "-sum")
# The rates VAT, GST and sales taxes are charged at, in hundredths: a tax is one of them
# of its net (several rates together land between them, so the test is a loose one).
RATES: tuple[float, ...] = (0, 2.5, 3.7, 5, 6, 7, 7.7, 8, 8.1, 9, 10, 12, 13, 14, 15, 16, 17)
RATES += (18, 19, 20, 21, 22, 23, 24, 25, 27)
MAX_PAIRS = 60  # distinct values tried for the arithmetic: a long table's are not sums

FEATURES = (
    *(f"left_{k}" for k in KINDS),
    *(f"above_{k}" for k in KINDS),
    "left_words",  # words that are no sum's label left of it on its line
    "no_label",
    "label_near",  # 1 / (1 + cells between it and its label)
    "same_cell_label",
    "rank",  # its place by size among the values, 0 the largest, 1 the smallest
    "largest",
    "second",
    "share_of_largest",
    "printed",  # log(1 + times printed)
    "pages_from_end",
    "last_page",
    "height",  # how far down its page, 0 the top, 1 the bottom
    "in_table",
    "outside_table",
    "below_table",
    "items_sum",
    "two_make_it",  # a + b = it, b a usual rate of a
    "net_of_pair",  # it + t = g, t a usual rate of it
    "tax_of_pair",  # n + it = g, it a usual rate of n
    "sum_of_taxes",  # the sum of the other values a tax's label names (one per rate)
    "one_of_taxes",  # one of two or more such values that another one sums
    "row3_net",
    "row3_tax",
    "row3_gross",
    "cents",
    "currency",
    "rate_on_line",
    "amounts_on_line",
    "rightmost",
    "negative",
    "zero",
    "whole",
    "bias",
)


@dataclass
class Candidate:
    value: Decimal
    features: dict[str, float] = field(default_factory=dict)
    times: int = 0  # how often the pages print it

    def vector(self) -> list[float]:
        return [self.features.get(name, 0.0) for name in FEATURES]


@dataclass(frozen=True)
class _Place:
    value: Decimal
    line: int
    cell: int
    text: str
    label_in_cell: str | None


def _cell_values(sheet: Sheet, cell: Cell) -> list[tuple[Decimal, str | None]]:
    """The amounts a cell prints: the cell itself, several run together, or the end of
    a label's cell ("Total: 12,50", "Summe EUR 1.234,56"), with that label's kind."""
    value = sheet.amount(cell.text)
    if isinstance(value, Decimal):
        return [(value, None)]
    several = cell_amounts(cell.text, sheet.style)
    if several:
        return [(v, None) for v in several]
    words = cell.text.split()
    if dates_in(cell.text):
        return []  # "facture du 2 novembre 2019": the date's year is no amount
    for n in (3, 2, 1):
        if len(words) <= n:
            continue
        tail = sheet.amount(" ".join(words[-n:]))
        if isinstance(tail, Decimal):
            label = sum_label(" ".join(words[:-n]))
            return [(tail, label[0] if label else "words")]
    return []


def _places(sheet: Sheet) -> list[_Place]:
    found = []
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            for value, label in _cell_values(sheet, cell):
                found.append(_Place(value, i, c, cell.text, label))
    return found


def _label_left(sheet: Sheet, place: _Place) -> tuple[str | None, int]:
    """The kind of the nearest label left of a place on its line ("words": words that
    are no sum's label), and how many cells lie between."""
    if place.label_in_cell:
        return place.label_in_cell, 0
    cells = sheet.lines[place.line].cells
    for gap, c in enumerate(range(place.cell - 1, -1, -1)):
        text = cells[c].text
        if isinstance(sheet.amount(text), Decimal) or PERCENT.match(text.strip()):
            continue
        label = sum_label(text)
        if label:
            return label[0], gap + 1
        if re.search(r"[^\W\d_]{2}", text):
            return "words", gap + 1
    return None, 0


def _label_above(sheet: Sheet, place: _Place) -> str | None:
    """The kind of a sum's label over a place, in the two lines above it on its page."""
    line = sheet.lines[place.line]
    cell = line.cells[place.cell]
    for j in range(place.line - 1, max(-1, place.line - 3), -1):
        other = sheet.lines[j]
        if other.page != line.page or line.y0 - other.y1 > BELOW_LINES * other.height:
            return None
        for over in other.cells:
            if over.x1 >= cell.x0 - SIDE_SLACK and over.x0 <= cell.x1 + SIDE_SLACK:
                label = sum_label(over.text)
                if label:
                    return label[0]
    return None


def _usual_rate(net: Decimal, tax: Decimal) -> bool:
    if net <= 0 or tax < 0:
        return False
    return any(abs(net * Decimal(str(r)) / 100 - tax) <= max(CENT, tax / 200) for r in RATES)


def _row_of_three(values: list[Decimal]) -> tuple[Decimal, Decimal, Decimal] | None:
    for a in range(len(values)):
        for b in range(len(values)):
            for g in range(len(values)):
                net, tax, gross = values[a], values[b], values[g]
                if len({a, b, g}) == 3 and 0 <= tax < net and abs(net + tax - gross) <= CENT:
                    return net, tax, gross
    return None


_RATE = re.compile(r"(?<![\d.,])(\d{1,2}(?:[.,]\d{1,2})?)\s?%")


def printed_rates(sheet: Sheet) -> frozenset[Decimal]:
    """The rates, as shares, printed on the lines a tax's label begins ("VAT 20 %")."""
    found = set()
    for line in sheet.lines:
        if any((label := sum_label(c.text)) and label[0] == "tax" for c in line.cells):
            found |= {Decimal(r.replace(",", ".")) / 100 for r in _RATE.findall(line.text)}
    return frozenset(found)


def table_region(sheet: Sheet, end: int | None) -> tuple[int, int] | None:
    """The lines of the item table: from its first header to the line after it."""
    start = next((i for i, line in enumerate(sheet.lines) if find_header(line)), None)
    if start is None:
        return None
    return start, end if end is not None else len(sheet.lines)


def amounts(
    sheet: Sheet, lines_total: Decimal | None, table: tuple[int, int] | None
) -> list[Candidate]:
    places = _places(sheet)
    if not places:
        return []
    last_page = max(line.page for line in sheet.lines)
    values = sorted({p.value for p in places}, reverse=True)
    largest = max(values)
    rank = {v: i / max(1, len(values) - 1) for i, v in enumerate(values)}
    pool = [v for v in values if v > 0][:MAX_PAIRS]
    pool_set = set(pool)
    by_line: dict[int, list[Decimal]] = {}
    for p in places:
        by_line.setdefault(p.line, []).append(p.value)
    # Every n + t = g among the values (to the cent: a tax rounded apart), t a usual rate
    # of n: once, for all of them.
    pairs = [
        (n, t, g)
        for n in pool
        for t in pool
        if t < n and _usual_rate(n, t)
        for g in (n + t - CENT, n + t, n + t + CENT)
        if g in pool_set
    ]
    out: dict[Decimal, Candidate] = {}
    for p in places:
        cand = out.setdefault(p.value, Candidate(p.value))
        f = cand.features
        line = sheet.lines[p.line]
        left, gap = _label_left(sheet, p)
        if left == "words":
            f["left_words"] = 1.0
        elif left:
            f[f"left_{left}"] = 1.0
            f["label_near"] = max(f.get("label_near", 0.0), 1 / (1 + gap))
            f["same_cell_label"] = max(f.get("same_cell_label", 0.0), float(gap == 0))
        above = _label_above(sheet, p)
        if above:
            f[f"above_{above}"] = 1.0
        cand.times += 1
        f["pages_from_end"] = min(f.get("pages_from_end", 99.0), float(last_page - line.page))
        f["height"] = max(f.get("height", 0.0), line.y0 / sheet.page_height(line.page))
        inside = table is not None and table[0] < p.line < table[1]
        f["in_table" if inside else "outside_table"] = 1.0
        if table is not None and p.line >= table[1]:
            f["below_table"] = 1.0
        row = by_line[p.line]
        three = _row_of_three(row) if 3 <= len(row) <= 6 else None
        if three:
            for name, v in zip(("row3_net", "row3_tax", "row3_gross"), three, strict=True):
                if v == p.value:
                    f[name] = 1.0
        if re.search(rf"\d{re.escape(sheet.style.decimal)}\d{{2}}(?!\d)", p.text):
            f["cents"] = 1.0
        if currency_of(p.text) or any(
            currency_of(c.text) and not isinstance(sheet.amount(c.text), Decimal)
            for c in line.cells[max(0, p.cell - 1) : p.cell + 2]
            if c.text != p.text
        ):
            f["currency"] = 1.0
        if "%" in line.text:
            f["rate_on_line"] = 1.0
        f["amounts_on_line"] = max(f.get("amounts_on_line", 0.0), min(len(row), 6) / 6)
        if p.cell == len(line.cells) - 1:
            f["rightmost"] = 1.0
    for v, cand in out.items():
        f = cand.features
        if not any(f.get(f"left_{k}") or f.get(f"above_{k}") for k in KINDS):
            f["no_label"] = 1.0
        f["rank"] = rank[v]
        f["largest"] = float(v == largest)
        f["second"] = float(len(values) > 1 and v == values[1])
        f["share_of_largest"] = float(v / largest) if largest > 0 else 0.0
        f["printed"] = math.log1p(cand.times)
        f["pages_from_end"] = min(f["pages_from_end"], 3.0) / 3
        f["last_page"] = float(f["pages_from_end"] == 0)
        f["items_sum"] = float(lines_total is not None and abs(lines_total - v) <= CENT)
        f["negative"] = float(v < 0)
        f["zero"] = float(v == 0)
        f["whole"] = float(v == v.to_integral_value())
        f["bias"] = 1.0
        if v > 0 and v in pool_set:
            f["two_make_it"] = float(any(g == v for _, _, g in pairs))
            f["net_of_pair"] = float(any(n == v for n, _, _ in pairs))
            f["tax_of_pair"] = float(any(t == v for _, t, _ in pairs))
    _taxes_added(out)
    return list(out.values())


def _taxes_added(out: dict[Decimal, Candidate]) -> None:
    """Mark a value a tax's label names that is the sum of the others so named ("VAT 9 %
    1.49", "VAT 19 % 17.56", "VAT 19.05"), and those it sums."""
    taxed = [
        v
        for v, c in out.items()
        if v > 0 and (c.features.get("left_tax") or c.features.get("above_tax"))
    ]
    if len(taxed) < 3:
        return
    whole = sum(taxed, Decimal(0))
    for v in taxed:
        if abs(whole - v - v) <= CENT:
            out[v].features["sum_of_taxes"] = 1.0
            for other in taxed:
                if other != v:
                    out[other].features["one_of_taxes"] = 1.0
