"""Every line of an invoice that prints a number, as a candidate item row for a learned
chooser (invoice_item_model), with features that name no header word, layout, vendor or
language: how the line's numbers multiply out (quantity x unit price = amount), how its
amount lines up with the lines around it, whether the amounts of its run of lines add up
to a sum printed under them, how its text is shaped, whether a sum's label begins it.

    candidates(sheet) -> list[Candidate]   # one per line with a number, in page order

The rules (invoice_table) decide which lines are rows from the header's words: a header in
words they do not know ("Wat | Prijs", "Usługa | Ilość | Cena | Wart.") reads no table at
all. Here no header is needed: each line's numbers are read on their own (the reading of
invoice_table_row without a header: the amount the last number that another two multiply
out to, else the last number), and the model says which lines are items.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

from conveyor.agents.invoice_columns import TABLE_END, column_kind
from conveyor.agents.invoice_labels import fold, sum_label
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import PERCENT, currency_of, dates_in, tex_euro
from conveyor.documents.layout import Cell, Line, Word

FEATURES = (
    "numbers",  # how many numbers, / 5, at most 1
    "one_number",
    "fits",  # two of its numbers multiply out to a third
    "fits_adjacent",  # ... the price just before the amount
    "fits_discount",  # ... after a percentage printed on the line taken off
    "fits_taxed",  # ... with a percentage printed on the line added (its VAT), after another off
    "count_whole",  # the quantity of the fit is a whole number
    "amount_last",  # the amount is the line's last number
    "amount_largest",
    "amount_cents",  # the amount prints two decimals
    "text",  # words beside the numbers
    "text_first",  # the words before the numbers
    "text_length",  # characters / 40, at most 1
    "text_digits",  # the share of digits in the words
    "cells",  # cells / 8, at most 1
    "percent",
    "date",
    "sum_label",  # begins with a sum's label (net, tax, total, ...)
    "table_end",  # begins with a word that ends a table (invoice_columns.TABLE_END)
    "colon",  # a label and its value ("Total: 703.15")
    "aligned_above",  # its amount ends where the amount of the line above does
    "aligned_below",
    "aligned",  # above or below
    "run_last",  # the last line of its run
    "fits_above",  # the line above multiplies out too
    "fits_below",
    "run",  # log(lines in its run of aligned amounts) / 3
    "run_sums",  # the amounts of its run add up to an amount printed just under it
    "run_first",  # the first line of its run
    "header_above",  # a line of words of two cells or more just over its run
    "header_kinds",  # how many column kinds that line names (invoice_columns), / 4
    "page_height",  # how far down its page, 0 the top
    "column",  # how many other lines' amounts end where its amount does, / 10, at most 1
    "same_cells",  # as many cells as the line above or below it
    "bias",
)

_FIGURE = re.compile(r"^[-+]?[$€£¥₹]?\d[\d.,']*(?:%|[$€£¥₹])?$")
_UNIT = re.compile(r"^[^\W\d_][^\s\d]{0,8}$")
_UNIT_AFTER = re.compile(r"^\d[\d.,]*\s*[^\W\d_]")
CENT = Decimal("0.01")
# How far apart two amounts may end and still be one column, in points.
ALIGN = 4.0
# How many lines under a run of amounts the sum they make may be printed.
SUM_REACH = 6


@dataclass
class Reading:
    """What a line's numbers say as an item: any of the three may be missing."""

    quantity: Decimal | None
    unit_price: Decimal | None
    amount: Decimal
    description: list[str]
    amount_cell: Cell


@dataclass
class Candidate:
    index: int  # into sheet.lines
    reading: Reading
    features: dict[str, float] = field(default_factory=dict)

    def vector(self) -> list[float]:
        return [self.features.get(name, 0.0) for name in FEATURES]


def _tokens(line: Line, sheet: Sheet) -> list[tuple[Cell, Decimal | None]]:
    """The line's cells, each with its value if a number: a cell of figures set too close
    for a gap split into one a figure ("1 usł. 2845,53 2845,53 23% 654,47"), and a
    quantity at the end of a description's cell cut off it ("... PoC 12 h")."""
    out: list[tuple[Cell, Decimal | None]] = []
    for cell in line.cells:
        value = sheet.amount(cell.text)
        if isinstance(value, Decimal):
            out.append((cell, value))
            continue
        words = cell.words
        figures = [w for w in words if _FIGURE.match(w.text)]
        if (
            len(words) >= 2
            and figures
            and words[0] in figures
            and all(w in figures or _UNIT.match(w.text) for w in words)
        ):
            for w in words:
                number = sheet.amount(w.text) if w in figures else None
                out.append((Cell((w,)), number if isinstance(number, Decimal) else None))
            continue
        colon = next((k for k, w in enumerate(words[:-1]) if w.text.endswith(":")), None)
        if colon is not None:
            after = Cell(words[colon + 1 :])
            number = sheet.amount(after.text)
            if isinstance(number, Decimal):  # "Totaal: 703.15": a label and its amount
                out += [(Cell(words[: colon + 1]), None), (after, number)]
                continue
        tail = _counted_tail(words, sheet)
        if tail:
            out.append((Cell(words[:-tail]), None))
            number = sheet.amount(words[-tail].text)
            out.append((Cell(words[-tail:]), number if isinstance(number, Decimal) else None))
            continue
        out.append((cell, None))
    return out


def _counted_tail(words: tuple[Word, ...], sheet: Sheet) -> int:
    """How many words at the end of a cell of text are a count and its unit ("12 h",
    "20 Stk"): 2, or 0 when they are not."""
    if len(words) < 3 or not _UNIT.match(words[-1].text) or not words[-2].text.isdigit():
        return 0
    return 2 if words[-3].text[-1:].isalpha() or words[-3].text[-1:] in ",." else 0


def _taxed(net: Decimal, amount: Decimal, rates: list[Decimal]) -> bool:
    """Whether `amount` is `net` with one of the line's rates added as its VAT, after
    another of them taken off as a discount or none ("14 | 458,845.25 | 7% | 14.5% |
    6,840,419.10"): a row whose amount is gross, its price the unit's."""
    for vat in rates:
        gross = net * (1 + vat / 100)
        if _close(gross, amount):
            return True
        if any(_close(gross * (1 - off / 100), amount) for off in rates if off is not vat):
            return True
    return False


def _close(a: Decimal, b: Decimal) -> bool:
    return abs(a - b) <= max(CENT / 2, abs(b) * Decimal("0.0001"))


def _counted(tokens: list[tuple[Cell, Decimal | None]], k: int) -> int:
    """How much the token at `k` looks like a count: a unit in its cell or after it ("10
    Stk", "10 | Stk"), no decimals printed ("10" beside "4,50", "3,9000")."""
    text = tokens[k][0].text
    after = _UNIT_AFTER.match(text)
    unit = after is not None and currency_of(f"1 {text[after.end() - 1 :]}") is None
    unit = unit and not tex_euro(text)  # "10,00 e": the euro sign of some TeX fonts
    if k + 1 < len(tokens) and tokens[k + 1][1] is None:
        follows = tokens[k + 1][0].text
        unit = unit or (bool(_UNIT.match(follows)) and currency_of(f"1 {follows}") is None)
    return 2 * int(unit) + int(not re.search(r"[.,]\d+\D*$", text))


def read_line(line: Line, sheet: Sheet) -> tuple[Reading, dict[str, float]] | None:
    """The line's numbers read as an item, and the features of that reading alone."""
    tokens = _tokens(line, sheet)
    numbers = [
        (k, v) for k, (c, v) in enumerate(tokens) if v is not None and not PERCENT.match(c.text)
    ]
    if not numbers:
        return None
    percents = []
    for c, _ in tokens:
        if PERCENT.match(c.text.strip()):
            try:
                percents.append(Decimal(c.text.strip().rstrip("%").strip().replace(",", ".")))
            except ArithmeticError:
                continue
    values = [v for _, v in numbers]
    best: tuple[tuple[int, ...], int, int, int, bool, bool] | None = None
    for a in range(len(values) - 1, 1, -1):
        for p in range(a - 1, -1, -1):
            for q in range(a):
                if q == p:
                    continue
                count, each, line_amount = values[q], values[p], values[a]
                if count == 0 or line_amount == 0:
                    continue
                plain = _close(count * each, line_amount)
                off = any(_close(count * each * (1 - d / 100), line_amount) for d in percents)
                taxed = not plain and not off and _taxed(count * each, line_amount, percents)
                if not plain and not off and not taxed:
                    continue
                counted = _counted(tokens, numbers[q][0]) - _counted(tokens, numbers[p][0])
                rank = (
                    int(not taxed),
                    int(a == len(values) - 1),
                    int(plain),
                    counted,
                    int(q < p),
                    -(a - p),
                )
                if best is None or rank > best[0]:
                    best = (rank, q, p, a, plain, taxed)
    features: dict[str, float] = {}
    quantity: Decimal | None = None
    price: Decimal | None = None
    if best is not None:
        _, q, p, a, plain, taxed = best
        quantity, price = values[q], values[p]
        features["fits"] = 1.0
        features["fits_adjacent"] = float(p == a - 1)
        features["fits_discount"] = float(not plain and not taxed)
        features["fits_taxed"] = float(taxed)
        features["count_whole"] = float(quantity == quantity.to_integral_value())
    else:
        a = len(values) - 1
        if any(v == values[a] for v in values[:a]):
            quantity, price = Decimal(1), values[a]  # a lump sum: one of itself
    amount = values[a]
    amount_cell = tokens[numbers[a][0]][0]
    used = {numbers[a][0]}
    if best is not None:
        used |= {numbers[best[1]][0], numbers[best[2]][0]}
    texts = [c.text for c, v in tokens if v is None and not PERCENT.match(c.text.strip())]
    words = " ".join(texts)
    features["numbers"] = min(len(values) / 5, 1.0)
    features["one_number"] = float(len(values) == 1)
    features["amount_last"] = float(a == len(values) - 1)
    features["amount_largest"] = float(amount == max(values))
    features["amount_cents"] = float(bool(re.search(r"[.,]\d\d\D*$", amount_cell.text)))
    features["text"] = float(bool(words.strip()))
    features["text_first"] = float(bool(tokens) and tokens[0][1] is None)
    features["text_length"] = min(len(words) / 40, 1.0)
    features["text_digits"] = sum(ch.isdigit() for ch in words) / max(len(words), 1)
    features["cells"] = min(len(line.cells) / 8, 1.0)
    features["percent"] = float(bool(percents))
    features["date"] = float(bool(dates_in(line.text)))
    first = line.cells[0].text
    features["sum_label"] = float(sum_label(first) is not None)
    features["table_end"] = float(bool(TABLE_END.match(fold(first))))
    features["colon"] = float(":" in first)
    reading = Reading(quantity, price, amount, texts, amount_cell)
    return reading, features


def _completed(
    sheet: Sheet, index: int, features: dict[str, float]
) -> tuple[Reading, dict[str, float]] | None:
    """The line read with the amount alone on the line under it, when its numbers do not
    multiply out and with that amount they do: a row whose amount is printed a line
    lower ("1 Miettage 86,5500 2 Tag(e) 19 %" over "173,10")."""
    if features.get("fits") or index + 1 >= len(sheet.lines):
        return None
    line, under = sheet.lines[index], sheet.lines[index + 1]
    if under.page != line.page or under.y0 - line.y1 > 1.5 * line.height:
        return None
    if len(under.cells) != 1 or not isinstance(sheet.amount(under.cells[0].text), Decimal):
        return None
    both = Line(line.words + under.words, line.cells + under.cells)
    read = read_line(both, sheet)
    return read if read is not None and read[1].get("fits") else None


def _header_kinds(line: Line) -> int:
    return len({k for c in line.cells if (k := column_kind(c.text))})


def _words_only(line: Line) -> bool:
    return len(line.cells) >= 2 and not any(ch.isdigit() for ch in line.text)


def candidates(sheet: Sheet) -> list[Candidate]:
    found: list[Candidate] = []
    skip = -1
    for index, line in enumerate(sheet.lines):
        if index == skip:
            continue
        read = read_line(line, sheet)
        if read is None:
            continue
        completed = _completed(sheet, index, read[1])
        if completed is not None:
            read, skip = completed, index + 1
        found.append(Candidate(index, read[0], {**read[1], "bias": 1.0}))
        height = sheet.page_height(line.page)
        found[-1].features["page_height"] = min(max(line.y0 / height, 0.0), 1.0)
    for k, cand in enumerate(found):
        for step, name in ((-1, "above"), (1, "below")):
            j = k + step
            if 0 <= j < len(found) and _neighbours(sheet, found[min(k, j)], found[max(k, j)]):
                other = found[j]
                aligned = abs(other.reading.amount_cell.x1 - cand.reading.amount_cell.x1) < ALIGN
                cand.features[f"aligned_{name}"] = float(aligned)
                cand.features[f"fits_{name}"] = other.features.get("fits", 0.0)
    _runs(sheet, found)
    for cand in found:
        x1 = cand.reading.amount_cell.x1
        page = sheet.lines[cand.index].page
        others = sum(
            abs(o.reading.amount_cell.x1 - x1) < ALIGN and sheet.lines[o.index].page == page
            for o in found
        )
        cand.features["column"] = min((others - 1) / 10, 1.0)
    for k, cand in enumerate(found):
        cells = len(sheet.lines[cand.index].cells)
        near = [found[j] for j in (k - 1, k + 1) if 0 <= j < len(found)]
        cand.features["same_cells"] = float(
            any(len(sheet.lines[o.index].cells) == cells for o in near)
        )
    return found


def _neighbours(sheet: Sheet, upper: Candidate, lower: Candidate) -> bool:
    """Two candidate lines on one page, no more than three lines of text apart."""
    a, b = sheet.lines[upper.index], sheet.lines[lower.index]
    return a.page == b.page and lower.index - upper.index <= 3


def _labelled_sum(cand: Candidate) -> bool:
    return bool(cand.features.get("sum_label") or cand.features.get("table_end"))


# Runs longer than this are summed whole only, not in every slice.
SLICED = 60


def _summed(sheet: Sheet, run: list[Candidate]) -> set[int]:
    """The positions in `run` of the lines of a slice of it (two lines or more, one after
    the other) whose amounts make an amount printed in the lines just under the run: the
    rows of a table, not the line above them that is in their column ("Check | 1000")."""
    last = run[-1].index
    printed = set()
    for line in sheet.lines[last + 1 : last + 1 + SUM_REACH]:
        for cell in line.cells:
            for part in (cell.text.split(":")[-1].strip(), cell.text.split(" ")[-1]):
                value = sheet.amount(part)
                if isinstance(value, Decimal):
                    printed.add(value)
    n = len(run)
    slices = [(0, n)] if n > SLICED else [(i, j) for i in range(n) for j in range(i + 2, n + 1)]
    out: set[int] = set()
    for i, j in slices:
        if j - i >= 2 and sum((c.reading.amount for c in run[i:j]), Decimal(0)) in printed:
            out.update(range(i, j))
    return out


def _runs(sheet: Sheet, found: list[Candidate]) -> None:
    """Runs of candidates whose amounts are aligned one under the other, and for each the
    features of its run: its length, whether its amounts (or those of lines of it one
    after the other, with it) add up to an amount printed a few lines under it, and the
    header-like line of words just over it."""
    k = 0
    while k < len(found):
        end = k
        while end + 1 < len(found) and found[end + 1].features.get("aligned_above"):
            if _labelled_sum(found[end + 1]) and not _labelled_sum(found[end]):
                break  # the sum under the rows, in their column, ends their run
            end += 1
        run = found[k : end + 1]
        summed = _summed(sheet, run)
        top = run[0].index
        header = next(
            (
                sheet.lines[j]
                for j in range(top - 1, max(top - 4, -1), -1)
                if _words_only(sheet.lines[j])
            ),
            None,
        )
        for position, cand in enumerate(run):
            cand.features["run"] = math.log(len(run)) / 3
            cand.features["run_sums"] = float(position in summed)
            cand.features["run_first"] = float(position == 0)
            cand.features["run_last"] = float(position == len(run) - 1)
            cand.features["aligned"] = max(
                cand.features.get("aligned_above", 0.0), cand.features.get("aligned_below", 0.0)
            )
            if header is not None:
                cand.features["header_above"] = 1.0
                cand.features["header_kinds"] = min(_header_kinds(header) / 4, 1.0)
        k = end + 1
