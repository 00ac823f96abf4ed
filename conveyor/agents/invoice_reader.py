"""Invoices read from the layout of their pages: labels in six languages, values beside
or below them, the parties by evidence, the items by column, the sums by arithmetic.

    read_invoice_layout(text) -> (Invoice, per-field confidences)

The pieces: invoice_sheet (lines and cells), invoice_labels, invoice_sum_labels,
invoice_party_labels and invoice_columns (the vocabulary), invoice_number, invoice_dates
and invoice_currency (with invoice_fields, what they share), invoice_parties,
invoice_table (with invoice_table_header and invoice_table_row), invoice_sums.
The number style is tried in each candidate (values.number_styles) and the reading whose
cross-checks fail least wins.

Net and tax are returned as the document states them (docs/document-agents.md): the net
(the total without tax, EN 16931 BT-109) when a net or subtotal of the whole invoice is
printed, when a tax is printed as zero, or when an exemption is stated in words
(invoice_sum_labels.NO_VAT; then the net is the total and the tax 0), or when a printed
total and tax imply it. A document that prints a total and no tax at all gets net and tax
None: the total may hold a tax it does not itemise (a receipt), so it is no net.
"""

from __future__ import annotations

from decimal import Decimal

from conveyor.agents import (
    invoice_currency,
    invoice_dates,
    invoice_fields,
    invoice_labels,
    invoice_number,
    invoice_parties,
    invoice_positions,
    invoice_sum_model,
    invoice_sums,
    invoice_table,
)
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import NumberStyle
from conveyor.documents.text import DocumentText
from conveyor.documents.types import Customer, Invoice, LineItem, Vendor, cross_checks

CENT = Decimal("0.01")


def read_invoice_layout(text: DocumentText) -> tuple[Invoice, dict[str, float]]:
    sheet = Sheet.of(text)
    _, invoice, fields = _best_reading(sheet)
    return invoice, fields


def absent_scored(
    text: DocumentText, invoice: Invoice, fields: dict[str, float]
) -> dict[str, float]:
    """`fields` with a net and a tax absent as the document states them (a total and
    no net or tax printed: invoice_sums.absent_as_stated) scored as read, whichever
    reader read the invoice; absent because unread, they keep their 0."""
    if invoice.subtotal is not None or invoice.tax is not None or invoice.total is None:
        return fields
    lines_total = lines_total_of(invoice.line_items)
    if invoice.line_items and lines_total is None:
        return fields  # an item without its amount: whether they make the total is unknown
    absent = invoice_sums.absent_as_stated(
        Sheet.of(text), invoice.total, fields.get("total", 0.0), lines_total
    )
    if absent <= max(fields.get("subtotal", 0.0), fields.get("tax", 0.0)):
        return fields
    return {**fields, "subtotal": absent, "tax": absent}


def _best_reading(sheet: Sheet) -> tuple[NumberStyle, Invoice, dict[str, float]]:
    best: tuple[tuple[int, int, int], NumberStyle, Invoice, dict[str, float]] | None = None
    # The voted styles first, then the other decimal separator's: a page of opening hours
    # ("08.30 - 12.30 Uhr") can outvote its amounts. The reading that misses fewest key
    # fields, then reads more of the sums' amounts, then fails fewer checks, wins.
    other = "," if sheet.style.decimal == "." else "."
    styles = [*sheet.styles, NumberStyle(other, "." if other == "," else ",")]
    for style in styles:
        sheet.style = style
        invoice, fields = _read(sheet)
        failed = cross_checks("invoice", invoice)
        missing = sum(check.startswith("no ") for check in failed)
        standing = (missing, -len(invoice_sums.candidates(sheet)), len(failed))
        if best is None or standing < best[0]:
            best = (standing, style, invoice, fields)
    assert best is not None
    return best[1], best[2], best[3]


def styled_sheet(text: DocumentText) -> tuple[Sheet, list[LineItem], int | None]:
    """The pages in the number style the layout reader reads them in, their items and
    the line after the item table: what the learned sums chooser is trained on."""
    sheet = Sheet.of(text)
    sheet.style = _best_reading(sheet)[0]
    items, _, end = invoice_table.read_items(sheet)
    return sheet, items or invoice_positions.read_positions(sheet), end


def lines_total_of(items: list[LineItem]) -> Decimal | None:
    """The items' amounts added up; None when an item has none (or there are none)."""
    amounts = [item.amount for item in items]
    if not items or None in amounts:
        return None
    return sum((a for a in amounts if a is not None), Decimal(0))


def _read(sheet: Sheet) -> tuple[Invoice, dict[str, float]]:
    fields: dict[str, float] = {}
    numbers = invoice_number.numbers(sheet)
    number = numbers[0] if numbers else None
    fields["number"] = number.confidence if number else 0.0
    if number and any(
        n.value != number.value and n.confidence >= number.confidence for n in numbers
    ):
        fields["number"] = min(fields["number"], invoice_fields.WEAK)
    currency, fields["currency"] = invoice_currency.currency(sheet)
    issue, fields["issue_date"], due, fields["due_date"] = invoice_dates.choose_dates(
        sheet, currency
    )
    vendor, customer = invoice_parties.parties(sheet)
    fields["vendor.name"] = _corroborated(sheet, vendor) if vendor.name else 0.0
    if vendor.name and _two_cells_of_a_line(sheet, vendor.name):
        fields["vendor.name"] = min(fields["vendor.name"], invoice_fields.WEAK)
    fields["vendor.address"] = invoice_fields.WEAK if vendor.address else 0.0
    fields["vendor.tax_id"] = invoice_fields.LIKELY if vendor.tax_id else invoice_fields.WEAK
    fields["customer.name"] = _corroborated(sheet, customer) if customer.name else 0.0
    fields["customer.address"] = invoice_fields.WEAK if customer.address else 0.0
    items, fields["line_items"], table_end = invoice_table.read_items(sheet)
    if not items:
        # No table: the items may be blocks of labelled values, one a position.
        items = invoice_positions.read_positions(sheet)
        fields["line_items"] = invoice_fields.LIKELY if items else fields["line_items"]
    lines_total = lines_total_of(items)
    sums = invoice_sums.choose(sheet, lines_total)
    rules_sums = (sums.net, sums.tax, sums.withheld, sums.gross)
    learned = LEARNED_SUMS and _learned_where_unsure(sheet, sums, lines_total, table_end)
    if learned:
        invoice_sums.as_stated(sheet, sums)  # an exemption in words, which it cannot read
    fields.update(sums.conf)
    if sums.tax is None and sums.net is not None and sums.net == sums.gross and _taxed(items):
        # Items whose amounts are more than quantity times price carry their tax: they
        # make the total, and the net without tax is printed nowhere.
        sums.net, fields["subtotal"] = None, 0.0
    if (
        items
        and sums.net is not None
        and lines_total is not None
        and abs(lines_total - sums.net) > CENT
    ):
        fields["line_items"] = min(fields["line_items"], invoice_fields.WEAK)
    elif items and not _add_up(lines_total, sums):
        # Every row may read right and a row still be missing: only a printed sum that
        # the items make tells they are all there.
        fields["line_items"] = min(fields["line_items"], invoice_fields.FAIR)
    invoice = Invoice(
        number=str(number.value) if number else None,
        issue_date=issue,
        due_date=due,
        vendor=Vendor(name=vendor.name, address=vendor.address, tax_id=vendor.tax_id),
        customer=Customer(name=customer.name, address=customer.address),
        currency=currency,
        line_items=items,
        subtotal=sums.net,
        tax=sums.tax,
        withheld=sums.withheld,
        total=sums.gross,
    )
    if learned and misread(_with_sums(invoice, *rules_sums)):
        # Read with the rules' own sums the document does not hold together, so the rules
        # misread it somewhere; sums that add up by the learned chooser's reading say
        # nothing of where. Its fields stay doubted, as they would have been (DOUBT).
        fields = {name: min(conf, DOUBT) for name, conf in fields.items()}
    return invoice, fields


# A document whose fields do not hold together (its sums do not add up, a key field is
# missing, a table row read without its amount) was misread somewhere; where is not
# known, so no field of it is trusted.
DOUBT = 0.85


def misread(invoice: Invoice) -> bool:
    """Whether the invoice's cross-checks say it was misread somewhere."""
    return any(_misread(check) for check in cross_checks("invoice", invoice))


def _misread(check: str) -> bool:
    return check.startswith("no ") or "not the total" in check or "have no amount" in check


def _with_sums(
    invoice: Invoice,
    net: Decimal | None,
    tax: Decimal | None,
    withheld: Decimal | None,
    gross: Decimal | None,
) -> Invoice:
    return invoice.model_copy(
        update={"subtotal": net, "tax": tax, "withheld": withheld, "total": gross}
    )


# Whether the learned chooser reads the sums the rules are unsure of. OFF: retrained on the
# truths that follow the net and tax convention (this module's docstring), it reads fewer
# sums than the rules by whole-reader leave-one-source-out (335/351 against 337/351), and
# on, round 7 and round 8 read fewer fields and twelve snippet tests fail (a total from a
# net alone, a total implied by its net and tax, a row of sum labels, a net that a page
# without VAT makes the total; docs/benchmarks.md, #11, the net and tax convention settled).
# Turned on by benchmarks/train_sums.py --pipeline-loso to measure.
LEARNED_SUMS = False
# The rules' sums at or above this confidence are kept as they are: read so, they are right
# 97-100 % of the time on the opened and the held-out sets alike (docs/benchmarks.md).
RULES_SURE = 0.9
# Whether a rules' unsure sum that the learned chooser reads too keeps the rules' confidence
# (else it takes the chooser's, at most invoice_sum_model.TRUST).
KEEP_AGREED = True
_ROLES = (("net", "subtotal"), ("tax", "tax"), ("gross", "total"))


def _learned_where_unsure(
    sheet: Sheet, sums: invoice_sums.Sums, lines_total: Decimal | None, table_end: int | None
) -> bool:
    """The sums the rules are unsure of, chosen by the learned chooser instead.

    The rules' sure sums are fixed and the chooser (invoice_sum_model) picks the others
    given them, so that net + tax = gross is judged with the sure ones; no sure sum, it
    reads all three. Written on the opened sets' layouts, the rules lost fields there when
    the chooser replaced them outright, and read fewer of the layouts they were not
    written on: their confidence says which of their sums to keep. A chooser's sum is
    never sure (<= TRUST), so every field at >= 0.9 is still one the rules read so."""
    sure = {
        role: getattr(sums, role) for role, name in _ROLES if sums.conf.get(name, 0.0) >= RULES_SURE
    }
    if len(sure) == len(_ROLES):
        return False
    choice = invoice_sum_model.choose(sheet, lines_total, table_end, fixed=sure)
    changed = False
    for role, name in _ROLES:
        value = getattr(choice, role)
        if role in sure:
            continue
        if value == getattr(sums, role) and KEEP_AGREED:
            continue
        changed = changed or value != getattr(sums, role)
        setattr(sums, role, value)
        sums.conf[name] = choice.conf[name]
    if changed and sums.withheld is not None:
        # A tax withheld is what made the rules' sums add up: not the chooser's.
        sums.withheld = None
        sums.conf.pop("withheld", None)
    return changed


def _corroborated(sheet: Sheet, party: invoice_parties.Party) -> float:
    """A party's name is trusted (>= 0.9) only with more than where it stood behind it: an
    address or a tax id read with it, or the same name printed again on the pages."""
    if party.address or party.tax_id or party.name_conf < 0.9 or not party.name:
        return party.name_conf
    name = invoice_labels.fold(party.name)
    if sum(invoice_labels.fold(line.text).count(name) for line in sheet.lines) >= 2:
        return party.name_conf
    return min(party.name_conf, invoice_fields.FAIR)


def _two_cells_of_a_line(sheet: Sheet, name: str) -> bool:
    """Whether a seller's name of one word is both cells of a line ("Adres | Adres" over
    the seller's and the buyer's blocks): it heads both columns, as a label does. (A
    buyer's name may well be printed twice side by side, under "Bill to" and "Ship to".)"""
    folded = invoice_labels.fold(name)
    return len(name.split()) == 1 and any(
        len(line.cells) == 2 and all(invoice_labels.fold(c.text) == folded for c in line.cells)
        for line in sheet.lines
    )


def _taxed(items: list[LineItem]) -> bool:
    """Whether some item's amount is its quantity times its price and more: its tax."""
    return any(
        item.quantity is not None
        and item.unit_price is not None
        and item.amount is not None
        and item.amount - item.quantity * item.unit_price > CENT
        for item in items
    )


def _add_up(lines_total: Decimal | None, sums: invoice_sums.Sums) -> bool:
    """The items' amounts make the net, or the total of an invoice that shows no tax."""
    if lines_total is None:
        return False
    printed = sums.net if sums.net is not None else sums.gross if sums.tax is None else None
    return printed is not None and abs(lines_total - printed) <= CENT
