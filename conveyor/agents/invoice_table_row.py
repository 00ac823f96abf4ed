"""One row of an item table: a line cut into cells at the header's columns, whose numbers
read as quantity x unit price = amount (with a discount column, x (1 - discount); with
the row's VAT rate, its gross amount), or whose amount stands in the amount column; and
a row completed by the line under it (its amount printed a line lower, or its unit price
labelled there).

Apart from the table (invoice_table), which decides which lines are rows and where the
table ends: here is only what one row's numbers say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from conveyor.agents.invoice_labels import sum_label
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_table_header import Header
from conveyor.agents.values import PERCENT, currency_of, tex_euro
from conveyor.documents.layout import Cell, Line
from conveyor.documents.types import LineItem

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
CENT = Decimal("0.01")
# A quantity with its unit: "10 Stk", "2 Tag(e)", "250 m²", "6,5 Stk", "1 Stk 0 % VAT".
_QTY = re.compile(r"^(?P<n>\d+(?:[.,]\d+)*)(?:\s*(?P<unit>[^\W\d_][^\s\d]{0,10}))(?:\s|$)")
_POS = re.compile(r"^\d{1,6}(?:\.\d{1,3})?$")


@dataclass
class Row:
    item: LineItem
    confidence: float
    description: list[str] = field(default_factory=list)
    complete: bool = True


# A number as a table cell prints it: "14", "$458,845.25", "7%", "1.234,56 €".
_FIGURE = re.compile(r"^[-+]?[$€£¥₹]?\d[\d.,']*(?:%|[$€£¥₹])?$")


def _split_figures(cells: list[Cell], header: Header) -> list[Cell]:
    """A cell of numbers alone that stand under different columns, set too close for a gap
    ("14 $458,845.25" under "Qty | Price", "7% 14.5%" under "Dsc | VAT"): one cell a column."""
    out: list[Cell] = []
    for cell in cells:
        words = cell.words
        if len(words) < 2 or not all(_FIGURE.match(w.text) for w in words):
            out.append(cell)
            continue
        kinds = [header.column_of(Cell((w,))) for w in words]
        if len(set(kinds)) < len(kinds):
            out.append(cell)  # "1 234,56": groups of one number under one column
            continue
        out += [Cell((w,)) for w in words]
    return out


def _cut_at_columns(cells: list[Cell], header: Header) -> list[Cell]:
    """A row's cells cut where a quantity printed close to its description stands under
    the quantity column: "Concept work, PoC 12 h" under "Description | Quantity" is two."""
    cells = _split_figures(cells, header)
    column = next((c for c in header.columns if c.kind == "quantity"), None)
    if column is None:
        return cells
    out: list[Cell] = []
    for cell in cells:
        words = cell.words
        for size in (2, 1):  # "12 h", "12"
            tail = words[-size:]
            if len(words) <= size or words[0].x1 > column.x0:
                continue  # a cell that starts under the quantity column is the quantity
            inside = all(column.x0 - 4 <= (w.x0 + w.x1) / 2 <= column.x1 + 4 for w in tail)
            text = " ".join(w.text for w in tail)
            if inside and (_QTY.match(text + " ") or _POS.match(text)):
                out += [Cell(words[:-size]), Cell(tail)]
                break
        else:
            out.append(cell)
    return out


def _numbers(cells: list[Cell], sheet: Sheet) -> list[tuple[Decimal, Cell, bool]]:
    """The row's numbers: (value, cell, is a quantity with a unit)."""
    out = []
    for cell in cells:
        text = cell.text.strip()
        if PERCENT.match(text):
            continue
        match = _QTY.match(text)
        if match and _words_after_unit(text, match):
            match = None  # "1 Prace programistyczne": a position and a description
        # "450,00 e": the euro sign as some TeX fonts give it, not a unit.
        if match and tex_euro(text):
            match = None
        if match and match.group("unit") and currency_of(f"1 {match.group('unit')}") is None:
            number = sheet.amount(match.group("n"))
            if isinstance(number, Decimal):
                out.append((number, cell, True))  # "10 Stk", "10.000 kWh": a quantity
                continue
        value = sheet.amount(text)
        if not isinstance(value, Decimal):
            value = _net_qualified(text, sheet)
        if isinstance(value, Decimal):
            out.append((value, cell, False))
    return out


def _net_qualified(text: str, sheet: Sheet) -> Decimal | None:
    """An amount followed by the words that say it is without tax, and nothing more
    ("1.050,00€ exkl. Ust", "80.00 excl. VAT"): the amount."""
    head, _, tail = text.partition(" ")
    label = sum_label(tail) if tail else None
    if not label or label[0] != "net" or tail[label[1] :].strip(" .)"):
        return None
    value = sheet.amount(head)
    return value if isinstance(value, Decimal) else None


def _words_after_unit(text: str, match: re.Match[str]) -> bool:
    """Whether what looked like a unit begins words: a unit is short, or alone."""
    unit = match.group("unit") or ""
    rest = text[match.end() :].strip()
    return len(unit) >= 4 and bool(re.match(r"[^\W\d_]{2,}", rest))


def _discounts(cells: list[Cell]) -> list[Decimal]:
    found = []
    for cell in cells:
        if PERCENT.match(cell.text.strip()):
            try:
                found.append(Decimal(cell.text.strip().rstrip("%").strip().replace(",", ".")))
            except ArithmeticError:
                continue
    return found


def _with_vat(net: Decimal, amount: Decimal, rates: list[Decimal]) -> bool:
    """Whether `amount` is `net` with one of the row's rates added as VAT, after another
    of them taken off as a discount or none ("14 | 458,845.25 | 7% | 14.5% | 6,840,419.10")."""
    for vat in rates:
        with_vat = net * (1 + vat / 100)
        if _close(with_vat, amount):
            return True
        if any(_close(with_vat * (1 - off / 100), amount) for off in rates if off is not vat):
            return True
    return False


def _close(a: Decimal, b: Decimal) -> bool:
    exponent = b.as_tuple().exponent
    unit = Decimal(1).scaleb(exponent) if isinstance(exponent, int) else CENT
    return abs(a - b) <= max(unit / 2, CENT)


def read_row(line: Line, header: Header, sheet: Sheet) -> Row | None:
    cells = _cut_at_columns(list(line.cells), header)
    counted = bool(cells) and header.column_of(cells[0]) == "quantity"
    if (cells and _POS.match(cells[0].text.strip()) and header.columns[0].kind == "pos") or (
        cells
        and _POS.match(cells[0].text.strip())
        and cells[0].x1 < (header.x_of("description") or 0)
        and not counted  # "QTY | Description | Price | Amount": the first number counts
    ):
        cells = cells[1:]
    numbers = _numbers(cells, sheet)
    texts = [
        c for c in cells if c not in {n[1] for n in numbers} and not PERCENT.match(c.text.strip())
    ]
    description = [
        c.text
        for c in texts
        if header.column_of(c) in ("description", None, "pos") or len(texts) == 1
    ] or [c.text for c in texts]
    discounts = _discounts(cells)
    # Every (quantity, price, amount) in the row's order; the amount is the last of them.
    values = [n[0] for n in numbers]
    fits: list[tuple[int, int, int, Decimal | None]] = []
    taxed: list[tuple[int, int, int, Decimal | None]] = []
    gross_row = False
    under = _under_amount(numbers, header)
    # The amount is the last number, or the one under the amount header when a gross
    # column follows it ("Wartość netto | Wartość brutto").
    for a in dict.fromkeys([len(values) - 1, *([under] if under is not None else [])]):
        for p in range(a - 1, -1, -1):
            for q in range(a):
                if q == p or values[q] == 0:
                    continue
                quantity, price, amount = values[q], values[p], values[a]
                if _close(quantity * price, amount):
                    fits.append((q, p, a, None))
                for rate in discounts:
                    if _close(quantity * price * (1 - rate / 100), amount):
                        fits.append((q, p, a, rate))
                if not fits and _with_vat(quantity * price, amount, discounts):
                    taxed.append((q, p, a, None))
    if not fits and taxed:
        # The row's amount includes its VAT (and its discount) at the row's rates: the
        # printed price is the unit price. The columns tell which number is which.
        fits, gross_row = taxed, True
    if fits:
        q, p, a, d = max(fits, key=lambda fit: (*_fit_score(fit, numbers, header), fit[2]))
        unit = values[p]
        if d is not None:
            unit = (unit * (1 - d / 100)).quantize(CENT, ROUND_HALF_UP)
        if gross_row:
            return Row(
                LineItem(description=None, quantity=values[q], unit_price=unit, amount=values[a]),
                FAIR,
                description,
            )
        item = LineItem(description=None, quantity=values[q], unit_price=unit, amount=values[a])
        return Row(item, SURE if d is None else LIKELY, description)
    amount_x = header.x_of("amount")
    if numbers and description:
        last = numbers[under] if under is not None else numbers[-1]
        if amount_x is not None and last[1].x1 >= amount_x - 10:
            # No reading multiplies out: the numbers under the quantity and price headers.
            count = next((n[0] for n in numbers[:-1] if n[2]), None)
            if count is None:
                count = next(
                    (n[0] for n in numbers[:-1] if header.column_of(n[1]) == "quantity"), None
                )
            each = next(
                (n[0] for n in numbers[:-1] if header.column_of(n[1]) == "price" and not n[2]),
                None,
            )
            if each is None:  # a number under no header, never the quantity's own
                each = next(
                    (
                        n[0]
                        for n in reversed(numbers[:-1])
                        if not n[2] and header.column_of(n[1]) != "quantity"
                    ),
                    None,
                )
            if each is not None and count is None and each == last[0]:
                count = Decimal(1)  # "Pauschal": a lump sum is one of itself
            return Row(
                LineItem(description=None, quantity=count, unit_price=each, amount=last[0]),
                WEAK,
                description,
            )
        if len(numbers) >= 2 or numbers[0][2]:
            # The amount is missing from this line: it may be printed on the next one.
            # The quantity: the number with its unit, or the one under the quantity's
            # header ("Aantal | Eenheid | Tarief" over "160 | Uren | € 140,00"), or the last.
            count = next((n[0] for n in numbers if n[2]), None)
            if count is None:
                count = next(
                    (n[0] for n in numbers if header.column_of(n[1]) == "quantity"),
                    numbers[-1][0],
                )
            each = next((n[0] for n in numbers if not n[2] and n[0] != count), None)
            return Row(
                LineItem(description=None, quantity=count, unit_price=each, amount=None),
                WEAK,
                description,
                complete=False,
            )
    return None


def _under_amount(numbers: list[tuple[Decimal, Cell, bool]], header: Header) -> int | None:
    """The index of the row's number under the amount header, if one is: the first one
    set in an amount column's span, else the first one nearest an amount column. (A
    quantity under a header of no known word, "Unités", is nearest the amount's "Total
    Net" at its right, and is no amount when a number stands under that header.)"""
    spans = [(c.x0, c.x1) for c in header.columns if c.kind == "amount"]
    for k, (_, cell, _) in enumerate(numbers):
        if any(cell.x1 >= x0 - 4 and cell.x0 <= x1 + 4 for x0, x1 in spans):
            return k
    for k, (_, cell, _) in enumerate(numbers):
        if header.column_of(cell) == "amount":
            return k
    return None


def _fit_score(
    fit: tuple[int, int, int, Decimal | None],
    numbers: list[tuple[Decimal, Cell, bool]],
    header: Header,
) -> tuple[int, int, int]:
    """Which reading of a row's numbers is likeliest: the quantity is the one printed
    with a unit or under the quantity header, the price under the price header; else
    the usual order (quantity before price) and no discount."""
    q, p, _, d = fit
    quantity, price = numbers[q], numbers[p]
    evidence = (2 if quantity[2] else 0) + (header.column_of(quantity[1]) == "quantity")
    evidence += header.column_of(price[1]) == "price"
    return evidence, int(d is None), int(q < p)


_LABELLED_AMOUNT = re.compile(r"^[^\d:]{3,40}:\s*(?P<amount>\S+)$")


def price_under(line: Line, row: Row, sheet: Sheet) -> bool:
    """A row read without its unit price, and under it a line of one labelled amount that
    times the row's quantity makes the row's amount ("7 Stunden | 1.050,00€" over "Preis
    pro Stunde: 150€"): the unit price, now the row's. The row's reading stays doubted
    (0.75): the label is not known."""
    item = row.item
    if item.unit_price is not None or not item.quantity or item.amount is None:
        return False
    match = _LABELLED_AMOUNT.match(line.text.strip()) if len(line.cells) == 1 else None
    price = sheet.amount(match.group("amount")) if match else None
    if not isinstance(price, Decimal) or not _close(item.quantity * price, item.amount):
        return False
    row.item = item.model_copy(update={"unit_price": price})
    row.confidence = min(row.confidence, WEAK)
    return True


def complete_row(row: Row, amount: Decimal) -> None:
    """The amount of a row printed a line below it; the unit price from it if missing."""
    item = row.item
    quantity, price = item.quantity, item.unit_price
    if quantity is not None and price is None and quantity:
        price = (amount / quantity).quantize(CENT, ROUND_HALF_UP)
        row.confidence = WEAK
    elif quantity is not None and price is not None and _close(quantity * price, amount):
        row.confidence = LIKELY
    else:
        row.confidence = WEAK  # a price per 100 units, or a discount: read as printed
    row.item = LineItem(description=None, quantity=quantity, unit_price=price, amount=amount)
    row.complete = True
