"""Line items: the rows under a table header (invoice_table_header), across pages, each
read by invoice_table_row.

A line of numbers alone completes the row above it (renderings that print a row's amount
a line lower); a line of words in the description column continues the description.
Section and subtotal rows do not end the table; a sum, a tax summary or the payment
terms do.
"""

from __future__ import annotations

from decimal import Decimal

from conveyor.agents.invoice_columns import TABLE_END
from conveyor.agents.invoice_labels import fold, sum_label
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_table_header import Header, find_header, header_rest
from conveyor.agents.invoice_table_row import FAIR, WEAK, Row, complete_row, price_under, read_row
from conveyor.documents.layout import Line
from conveyor.documents.types import LineItem

LONG_DESCRIPTION = 4  # lines: a name and a few lines of detail


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
            and header_rest(line, head, sheet)
        ):
            # The second line of a header ("Price w/o" over "Tax"), also of the header
            # repeated on the next page ("Wartość" over "netto", no sum's "netto"), or
            # the upper line of the first row's description.
            lone = (line, None) if len(line.cells) == 1 and _in_description(line, header) else None
            continue
        if _ends(line):
            if rows and _above_the_header_again(sheet, i, header, previous):
                continue  # the next page's letterhead ("Balance Due: ..."), not the sums
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
                complete_row(last, amount)
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
        if last is not None and _near(line, previous) and price_under(line, last, sheet):
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


# How many lines of a page's letterhead (its number, dates, balance) may stand above the
# item table's header repeated on the next page.
PAGE_HEAD = 12


def _above_the_header_again(sheet: Sheet, index: int, header: Header, last: Line | None) -> bool:
    """Whether line `index`, on the page after the table's last row, stands above the same
    header repeated on its own page, a few lines lower, and the rows before ran to their
    page's foot with no sum after them: the table goes on under it, and what ends it here
    is the page's letterhead ("Balance Due: $1,602.25"), not its sums. (A copy of the whole
    invoice on the next page has its sums under its rows.)"""
    line = sheet.lines[index]
    if last is None or line.page != last.page + 1:
        return False
    after = next(j for j, other in enumerate(sheet.lines) if other is last)
    if any(
        _ends(other) or _sums(other)
        for other in sheet.lines[after + 1 : index]
        if other.page == last.page
    ):
        return False
    kinds = {c.kind for c in header.columns}
    for other in sheet.lines[index + 1 : index + PAGE_HEAD]:
        if other.page != line.page:
            return False
        found = find_header(other)
        if found is not None:
            return {c.kind for c in found.columns} == kinds
    return False


def _sums(line: Line) -> bool:
    """Whether a cell of `line` is labelled a net, a tax, a gross or an amount due."""
    kinds = ("net", "tax", "gross", "due")
    return any((label := sum_label(c.text)) and label[0] in kinds for c in line.cells)


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
