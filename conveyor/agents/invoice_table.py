"""Line items: the rows under a table header recognised by its words, across pages.

The header is a line naming at least three kinds of column (description, quantity,
price, amount, ...: invoice_columns.COLUMN_LABELS) and printing no amount. Below it, a row
is a line whose numbers read as quantity x unit price = amount (with a discount column,
x (1 - discount)), or whose amount stands in the amount column; a line of numbers alone
completes the row above it (renderings that print a row's amount a line lower); a line
of words in the description column continues the description. Section and subtotal
rows do not end the table; a sum, a tax summary or the payment terms do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from conveyor.agents.invoice_columns import TABLE_END, column_kind, column_label
from conveyor.agents.invoice_labels import fold, sum_label
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import PERCENT, currency_of, tex_euro
from conveyor.documents.layout import Cell, Line
from conveyor.documents.types import LineItem

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
LONG_DESCRIPTION = 4  # lines: a name and a few lines of detail
CENT = Decimal("0.01")
# A quantity with its unit: "10 Stk", "2 Tag(e)", "250 m²", "6,5 Stk", "1 Stk 0 % VAT".
_QTY = re.compile(r"^(?P<n>\d+(?:[.,]\d+)*)(?:\s*(?P<unit>[^\W\d_][^\s\d]{0,10}))(?:\s|$)")
_POS = re.compile(r"^\d{1,6}(?:\.\d{1,3})?$")


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


@dataclass
class Row:
    item: LineItem
    confidence: float
    description: list[str] = field(default_factory=list)
    complete: bool = True


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


def _header_rest(line: Line, head: Line, sheet: Sheet) -> bool:
    """A line of words just under (or over) a header, with no number: more header."""
    if line.y0 - head.y1 > 1.5 * head.height:
        return False
    return not any(ch.isdigit() for ch in line.text)


# Sum labels that may stand in an item table as rows of their own ("Versandkosten").
_IN_TABLE = ("charge", "discount")


def _ends(line: Line) -> bool:
    first = fold(line.cells[0].text)
    if TABLE_END.match(first):
        return True
    label = sum_label(line.cells[0].text)
    if label and not label[0].startswith("-") and label[0] not in _IN_TABLE:
        return True
    return _a_row_of_sum_labels(line)


def _a_row_of_sum_labels(line: Line) -> bool:
    """Whether `line` is a row of three labels or more, words only, one of them a tax's
    ("Stawka podatku | Kwota netto | Kwota podatku | Kwota brutto"): the head of the
    sums' table under the items, which ends them."""
    if len(line.cells) < 3 or any(ch.isdigit() for ch in line.text):
        return False
    return any((label := sum_label(c.text)) and label[0] == "tax" for c in line.cells)


# How many lines past a section's subtotal the next section's first row may be (its
# heading, "Services", stands between).
SECTION_GAP = 3


def _section_subtotal(sheet: Sheet, index: int, section: list[Row], header: Header) -> bool:
    """Whether the net label on line `index` closes a section of the table, not the
    table: its amount is what the section's rows make, and more rows follow a few
    lines below ("Articles" rows, "Sous-total (HT) : 55,00", "Services" rows, ...)."""
    line = sheet.lines[index]
    label = sum_label(line.cells[0].text)
    if not label or label[0] != "net" or not section:
        return False
    amounts = [row.item.amount for row in section]
    if None in amounts:
        return False
    value = sheet.amount(line.cells[-1].text)
    # Each row's amount was rounded to the cent on its own: the section's sum may be off
    # by up to half a cent a row (five rows of hours at a rate: 419.09 printed as 419.08).
    slack = Decimal("0.005") * len(section)
    made = sum((a for a in amounts if a), Decimal(0))
    if not isinstance(value, Decimal) or abs(value - made) > slack:
        return False
    for j in range(index + 1, min(len(sheet.lines), index + 1 + SECTION_GAP)):
        other = sheet.lines[j]
        if other.page != line.page or sum_label(other.cells[0].text):
            return False  # the sums go on: a discount, shipping, the tax
        row = read_row(other, header, sheet)
        # An item, with its quantity or price: a line of an amount alone after a net is
        # more likely a sum whose label is not known ("Consumption tax 10% | 885").
        if row is not None and (row.item.quantity is not None or row.item.unit_price is not None):
            return True
    return False


# Taxes printed under each item ("Traslado 001 - IVA | 16.00", "Retención ISR | 10.00"),
# with more items after them: the item's taxes, not the sums under the table.
_ITEM_TAXES = ("tax", "withheld")


def _item_tax(sheet: Sheet, index: int, header: Header) -> bool:
    line = sheet.lines[index]
    label = sum_label(line.cells[0].text)
    if not label or label[0] not in _ITEM_TAXES:
        return False
    for j in range(index + 1, min(len(sheet.lines), index + 1 + SECTION_GAP)):
        other = sheet.lines[j]
        if other.page != line.page:
            return False
        later = sum_label(other.cells[0].text)
        if later and later[0] in _ITEM_TAXES:
            continue  # the item's next tax
        if later:
            return False
        row = read_row(other, header, sheet)
        return row is not None and row.item.quantity is not None and row.item.unit_price is not None
    return False


def _sums_the_rows(row: Row, rows: list[Row]) -> bool:
    """Whether `row` is no item but the sum of the rows above it: an amount alone, without
    a quantity or a price, that the items' amounts make ("18/08/2022: The bill is paid. |
    Subtotal without tax | 165.00" under seven items that make 165.00)."""
    item = row.item
    if item.amount is None or item.quantity is not None or item.unit_price is not None:
        return False
    amounts = [r.item.amount for r in rows]
    if len(amounts) < 2 or None in amounts:
        return False
    return sum((a for a in amounts if a is not None), Decimal(0)) == item.amount


def read_items(sheet: Sheet) -> tuple[list[LineItem], float, int | None]:
    """The items, their confidence and the index of the line after the table."""
    rows: list[Row] = []
    header: Header | None = None
    end: int | None = None
    last: Row | None = None
    last_bottom = 0.0
    previous: Line | None = None  # the last line read into the last row
    seen: Line | None = None  # the last line of the table's region
    # The last line of words alone in the description column, and the row it was read
    # into as the rest of its description, if it was.
    lone: tuple[Line, Row | None] | None = None
    section = 0  # where the rows of the current section begin
    for i, line in enumerate(sheet.lines):
        found = find_header(line)
        if found is not None:
            if (
                header is not None
                and {c.kind for c in found.columns} != {c.kind for c in header.columns}
                and rows
            ):
                end = i
                break
            found.line = i
            header, last, seen = found, None, None
            continue
        if header is None:
            continue
        head = sheet.lines[header.line]
        if (
            (not rows or (last is None and i == header.line + 1))
            and line.page == head.page
            and _header_rest(line, head, sheet)
        ):
            # The second line of a header ("Price w/o" over "Tax"), also of the header
            # repeated on the next page ("Wartość" over "netto", no sum's "netto"), or
            # the upper line of the first row's description.
            lone = (line, None) if len(line.cells) == 1 and _in_description(line, header) else None
            continue
        if _ends(line):
            if rows and _item_tax(sheet, i, header):
                continue  # the tax of the row above, not the table's
            if rows and _section_subtotal(sheet, i, rows[section:], header):
                # The next section's heading ("Services") continues no row of this one.
                section, last, lone = len(rows), None, None
                continue
            end = i
            if rows:
                break
            header = None
            continue
        if last is not None and not last.complete and line.y0 - last_bottom < 2.5 * line.height:
            amount = _trailing_amount(line, header, sheet)
            if amount is not None:
                _complete(last, amount)
                last.description += [
                    c.text for c in line.cells[:-1] if not isinstance(sheet.amount(c.text), Decimal)
                ]
                continue
        if _apart(line, seen or head):
            continue  # a footer far below the rows on their page, not one of them
        seen = line
        row = read_row(line, header, sheet)
        if row is not None and _sums_the_rows(row, rows):
            end = i  # a subtotal printed as a row: the sums begin here
            break
        if row is not None:
            begins = [c.x0 for c in line.cells if c.text in row.description]
            if begins:
                header.left = min(begins + ([header.left] if header.left is not None else []))
            if not row.description and lone is not None and _just_above(lone[0], line):
                # A row's numbers centred on a description of two lines ("Web design"
                # over the row, its details under it): the line just above is its own.
                if lone[1] is not None and lone[1].description[-1:] == [lone[0].text]:
                    lone[1].description.pop()
                row.description.append(lone[0].text)
            rows.append(row)
            last, last_bottom, previous = row, line.y1, line
            lone = None
            continue
        if last is not None and _near(line, previous) and _price_under(line, last, sheet):
            previous = line
            continue
        lone = (line, None) if len(line.cells) == 1 and _in_description(line, header) else None
        if last is not None and _continues(line, header, last) and _near(line, previous):
            last.description.append(line.text)
            previous = line
            if header.left is not None:
                header.left = min(header.left, line.x0)
            lone = (line, last) if lone else None
    items = []
    confidences = []
    for row in rows:
        description = sheet.joined(row.description) or None
        items.append(row.item.model_copy(update={"description": description}))
        confidence = row.confidence if row.item.amount is not None else WEAK
        if len(row.description) > LONG_DESCRIPTION:
            # Where a long text under a row stops being its description, and whether its
            # words were split across lines, the layout cannot say for sure.
            confidence = min(confidence, FAIR)
        confidences.append(confidence)
    return items, (min(confidences) if confidences else 0.0), end


def _in_description(line: Line, header: Header) -> bool:
    x = header.x_of("description")
    return x is not None and abs(line.x0 - x) < 12 and not line.text[:1].isdigit()


def _just_above(above: Line, row: Line) -> bool:
    """Whether `above` begins less than a line above `row`: the upper half of a block of
    text the row's numbers stand in the middle of."""
    return above.page == row.page and 0 <= row.y0 - above.y0 < 0.9 * max(row.height, 8.0)


def _trailing_amount(line: Line, header: Header, sheet: Sheet) -> Decimal | None:
    """The amount a line just under a row prints in the amount column, alone or after a
    code or a base quantity ("4123456000014 | 52,00", "/V2A | Basismenge: 1 Stk | 850,00")."""
    last = line.cells[-1]
    value = sheet.amount(last.text)
    x = header.x_of("amount")
    if not isinstance(value, Decimal) or (x is not None and last.x1 < x - 10):
        return None
    if len(line.cells) > 3:
        return None  # a row of its own, not the rest of the one above
    return value


_LABELLED_AMOUNT = re.compile(r"^[^\d:]{3,40}:\s*(?P<amount>\S+)$")


def _price_under(line: Line, row: Row, sheet: Sheet) -> bool:
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


def _complete(row: Row, amount: Decimal) -> None:
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


# How far below the last row (or the header) a line may stand on the same page and still
# be a row of the table, in line heights: rows follow each other; a footer stands apart.
ROW_GAP = 12.0


def _apart(line: Line, above: Line) -> bool:
    return line.page == above.page and line.y0 - above.y1 > ROW_GAP * max(above.height, 8.0)


def _near(line: Line, previous: Line | None) -> bool:
    """Whether `line` can go on the row that `previous` ended: on its page, a few lines
    below it. A footer at the foot of the page, or the top of the next one, is not."""
    if previous is None or line.page != previous.page:
        return False
    return line.y0 - previous.y1 < 3.0 * max(previous.height, 8.0)


def _continues(line: Line, header: Header, row: Row) -> bool:
    x = header.x_of("description")
    if x is None or len(line.cells) > 2 or len(row.description) >= 40:
        return False
    # A line that begins under a column after the description's ("Total due: 17 115,45"
    # under the prices, beside the last row) is none of its text.
    following = [c.x0 for c in header.columns if c.x0 > x + 12 and c.kind != "description"]
    if following and line.x0 >= min(following) - 6:
        return False
    return line.x0 >= x - 12 or _under_its_description(line, header, x)


def _under_its_description(line: Line, header: Header, x: float) -> bool:
    """Whether `line` stands in the description's column though it begins left of the
    column's header: a description centred in a wide column (each of its lines begins
    elsewhere) or its bullets set out to the left, under a header centred over it. It
    begins no further left than the rows' descriptions do, give or take a bullet's
    indent, and ends before the next column begins."""
    following = [c.x0 for c in header.columns if c.x0 > x]
    if header.left is None or not following or header.left >= x - 12:
        return False
    return line.x0 >= header.left - 24 and line.x1 < min(following) - 6
