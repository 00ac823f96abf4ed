"""Invoices read by rules: labels, the line structure PDFium keeps, and arithmetic.

The text arrives as lines in drawing order (text.py): blocks one after the other, a table
row per line. The rules, in the order they run:

1. the number style (1,234.56 or 1.234,56 or ...), by vote; when in doubt the invoice is
   read in each candidate style and the reading whose sums agree wins;
2. label lines ("Invoice No.: 17", "Due date 2026-03-01"), or a row of labels with their
   values on the next line;
3. the vendor: the block before the title and labels; its tax id behind a known label;
4. the customer: the block after "Bill to" (and its kin);
5. the line items: rows after a table header, read from the right (amount, unit price,
   quantity), checked by quantity x price = amount;
6. the sums: subtotal, tax and total behind their labels, "Balance due" kept apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import combinations

from conveyor.agents.date_order import slash_date_order
from conveyor.agents.invoice_labels import fold
from conveyor.agents.invoice_marks import not_a_name
from conveyor.agents.invoice_party_labels import party_heading
from conveyor.agents.invoice_sum_labels import NO_VAT
from conveyor.agents.values import (
    NumberStyle,
    amounts_in,
    currencies_in,
    dates_in,
    number_styles,
    resolve,
    shared_sign,
    yen_or_yuan,
)
from conveyor.documents.types import Customer, Invoice, LineItem, Vendor, cross_checks

# Confidence of a value found: behind a label the rules know well; behind a generic one;
# behind a weaker label or only by its position; read one of two ways, chosen by a guess.
SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6
ARITHMETIC = 0.9  # no label, but the only amount that makes the sums agree
# How sure a date order is, by what decided it (date_order.py).
ORDER_CONFIDENCE = {
    "printed": SURE,
    "other date": LIKELY,
    "terms": LIKELY,
    "only fit": LIKELY,
    "fit against country": GUESS,
    "country": 0.8,
    "guess": GUESS,
}

_LABELS = [
    ("ignore", r"order\s*date|delivery\s*date|ship(?:ping)?\s*date|po\s*date|service\s*date"),
    ("issue", r"invoice\s*date|date\s*of\s*issue|issue\s*date|issued(?:\s*on)?|billing\s*date"),
    ("due", r"due\s*date|payment\s*due|pay\s*by|payable\s*by|due"),
    ("number", r"invoice\s*(?:no\.?|number|num\.?|nr\.?|#)|bill\s*(?:no\.?|number|#)|inv\.?\s*#"),
    ("weak_number", r"our\s*ref\.?|reference|ref\.?|document\s*(?:no\.?|number)|doc\.?\s*no\.?"),
    ("date", r"date"),
]
_LABEL = re.compile(
    "(?:"
    + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _LABELS)
    + r")(?=[\s:]|$)\s*:?\s*",
    re.IGNORECASE,
)
_TITLE = re.compile(r"^(?:tax\s+invoice|invoice|bill|commercial\s+invoice)$", re.IGNORECASE)
_TITLE_NUMBER = re.compile(
    r"^(?:tax\s+invoice|invoice|bill)\s+(?:no\.?\s*|#\s*)?(?P<number>[A-Z0-9][\w/-]*\d[\w/-]*)$",
    re.IGNORECASE,
)
# "Customer No.:", "Client ID" label a number, not the customer.
_NOT_A_NUMBER = r"(?!\s*(?:no\b|nr\b|number|#|id\b|n°|ref))"
_BILL_TO = re.compile(
    r"^(?:bill(?:ed)?\s*to|invoice\s*to|sold\s*to|customer|client)\b"
    + _NOT_A_NUMBER
    + r"\s*:?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_BILL_TO_INSIDE = re.compile(
    r"\s(?:bill(?:ed)?\s*to|invoice\s*to|sold\s*to|customer|client)\b", re.IGNORECASE
)
_TAX_ID = re.compile(
    r"^(?:VAT(?:\s*(?:No\.?|ID|Reg\.?\s*No\.?))?|USt-?IdNr\.?|EIN|Tax\s*ID|TIN|ABN|"
    r"GST(?:/HST)?(?:\s*No\.?)?|HST\s*No\.?|MWST-?Nr\.?|UID|TVA|BTW(?:-nr\.?)?|"
    r"Registration\s*No\.?|Company\s*No\.?)\s*[:#]?\s*(?P<id>[A-Z0-9][A-Z0-9 .\-/]{3,})$",
    re.IGNORECASE,
)
_TABLE_WORD = re.compile(
    r"(?:^#|\b(?:description|item|article|product|service|qty|quantity|units|hours|unit\s*price|"
    r"unit\s*cost|price|rate|amount|line\s*total|total))\b",
    re.IGNORECASE,
)
_SUMS = [
    ("subtotal", r"sub-?\s*total|net\s*(?:amount|total)|total\s*before\s*tax|total\s*excl\w*"),
    ("balance", r"balance\s*due|amount\s*paid|paid|deposit"),
    ("grand", r"grand\s*total|invoice\s*total|total\s*amount"),
    ("total", r"total\s*due|total(?:\s*\([A-Z]{3}\))?"),
    ("amount_due", r"amount\s*due"),
    ("tax", r"sales\s*tax|consumption\s*tax|tax|vat|gst|hst|mwst\.?|tva|btw|iva"),
]
_SUM = re.compile(
    "(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _SUMS) + r")\b",
    re.IGNORECASE,
)
CENT = Decimal("0.01")
_SKIP = re.compile(r"^(?:continued\b.*|page \d+ of \d+)$", re.IGNORECASE)
_QTY_WORD = re.compile(r"^(?:qty|quantity|units|hours|hrs)$", re.IGNORECASE)
_NUMERIC = re.compile(r"^-?[\d.,']+$")
_RECEIPT = re.compile(r"\b(?:upon|on)\s+receipt\b|\bdue\s+immediately\b", re.IGNORECASE)
_COMPANY = re.compile(
    r"\b(?:inc|llc|ltd|limited|gmbh|ag|sa|sas|sarl|bv|b\.v|nv|kk|k\.k|pty|plc|corp|"
    r"corporation|co|company|gbr|oy|ab|as)\b\.?",
    re.IGNORECASE,
)
_COUNTRY_DOLLARS = {
    "canada": "CAD",
    "australia": "AUD",
    "new zealand": "NZD",
    "singapore": "SGD",
    "hong kong": "HKD",
    "mexico": "MXN",
}


@dataclass
class _Found:
    values: dict[str, object] = field(default_factory=dict)
    conf: dict[str, float] = field(default_factory=dict)

    def put(self, name: str, value: object, confidence: float) -> None:
        self.values[name] = value
        self.conf[name] = confidence


def read_invoice(text: str) -> tuple[Invoice, dict[str, float]]:
    """The invoice in `text` and each field's confidence (dotted names)."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    best: tuple[int, Invoice, dict[str, float]] | None = None
    for style in number_styles(text):
        invoice, fields = _read(lines, style)
        failed = len(cross_checks("invoice", invoice))
        if best is None or failed < best[0]:
            best = (failed, invoice, fields)
        if failed == 0:
            break
    assert best is not None
    return best[1], best[2]


def _read(lines: list[str], style: NumberStyle) -> tuple[Invoice, dict[str, float]]:
    found = _Found()
    labels = _labelled(lines)
    _number(labels, lines, found)
    currency = _currency(lines, found)
    _dates(labels, lines, currency, found)
    vendor = _vendor(lines, found)
    customer = _customer(lines, found)
    table_end, items = _items(lines, style, found)
    _sums(lines[table_end:] if table_end else lines, style, found)
    _as_stated(lines, found)
    invoice = Invoice(
        number=found.values.get("number"),  # type: ignore[arg-type]
        issue_date=found.values.get("issue_date"),  # type: ignore[arg-type]
        due_date=found.values.get("due_date"),  # type: ignore[arg-type]
        vendor=vendor,
        customer=customer,
        currency=currency,
        line_items=items,
        subtotal=found.values.get("subtotal"),  # type: ignore[arg-type]
        tax=found.values.get("tax"),  # type: ignore[arg-type]
        total=found.values.get("total"),  # type: ignore[arg-type]
    )
    _agree(invoice, found)
    return invoice, found.conf


# ------------------------------------------------------------------------------- labels


def _labelled(lines: list[str]) -> dict[str, tuple[str, int]]:
    """Label kind -> (value, line index), from 'Label: value' lines and from rows of
    labels whose values are the next line, word for word. The first of each kind wins."""
    found: dict[str, tuple[str, int]] = {}
    for i, line in enumerate(lines):
        header = _label_row(line)
        if header and i + 1 < len(lines):
            values = lines[i + 1].split()
            if len(values) == len(header):
                for kind, value in zip(header, values, strict=True):
                    found.setdefault(kind, (value, i + 1))
            continue
        match = _LABEL.match(line)
        if match and match.end() < len(line):
            found.setdefault(str(match.lastgroup), (line[match.end() :].strip(), i))
    return found


def _label_row(line: str) -> list[str] | None:
    kinds, pos = [], 0
    while pos < len(line):
        match = _LABEL.match(line, pos)
        if not match:
            return None
        kinds.append(str(match.lastgroup))
        pos = match.end()
    return kinds if len(kinds) >= 2 else None


def _number(labels: dict[str, tuple[str, int]], lines: list[str], found: _Found) -> None:
    for kind, confidence in (("number", SURE), ("weak_number", WEAK)):
        if kind in labels:
            value = labels[kind][0].split()[0]
            found.put("number", value, confidence if any(c.isdigit() for c in value) else GUESS)
            return
    # No label: a code right after the title ("INVOICE 2026/118") is likely the number.
    for line in lines:
        match = _TITLE_NUMBER.match(line)
        if match:
            found.put("number", match.group("number"), WEAK)
            return
    found.put("number", None, 0.0)


# -------------------------------------------------------------------------------- dates


def _dates(
    labels: dict[str, tuple[str, int]], lines: list[str], currency: str | None, found: _Found
) -> None:
    issue_kind = "issue" if "issue" in labels else "date" if "date" in labels else None
    issue_tokens = dates_in(labels[issue_kind][0]) if issue_kind else []
    due_tokens = dates_in(labels["due"][0]) if "due" in labels else []
    issue = issue_tokens[0] if issue_tokens else None
    due = due_tokens[0] if due_tokens else None
    label_conf = {"issue": SURE, "date": LIKELY}.get(issue_kind or "", 0.0)

    order, basis = slash_date_order(issue, due, lines, currency)
    order_conf = ORDER_CONFIDENCE[basis]

    if issue is not None:
        confidence = min(label_conf, order_conf if issue.both else SURE)
        found.put("issue_date", resolve(issue, order), confidence)
    else:
        found.put("issue_date", None, 0.0)
    if due is not None:
        found.put("due_date", resolve(due, order), order_conf if due.both else SURE)
    elif any(_RECEIPT.search(line) for line in lines):
        found.put("due_date", None, LIKELY)  # payable on receipt: no due date printed
    else:
        found.put("due_date", None, GUESS)


# ----------------------------------------------------------------------------- currency


_UNITED_STATES = re.compile(r"\bU\.?S\.?A\b|\bunited states\b|, [A-Z]{2},? \d{5}\b", re.IGNORECASE)


def _currency(lines: list[str], found: _Found) -> str | None:
    sums = [line for line in lines if _SUM.match(line) and not _TAX_ID.match(line)]
    counts = currencies_in("\n".join(sums)) or currencies_in("\n".join(lines))
    if not counts:
        found.put("currency", None, 0.0)
        return None
    code, _ = counts.most_common(1)[0]
    code = yen_or_yuan(code, "\n".join(lines))
    confidence = SURE if len(counts) == 1 else WEAK
    joined = "\n".join(sums)
    if code == "USD" and "USD" not in joined and "US$" not in joined:
        # A bare "$": the United States' unless the vendor is from a dollar country.
        head = " ".join(lines[:8]).lower()
        other = next((c for name, c in _COUNTRY_DOLLARS.items() if name in head), None)
        if other:
            code, confidence = other, GUESS
        else:
            # Several countries print it for their dollar or peso: the United States' when
            # the page names them or prints a state and ZIP code, else a guess (as the
            # layout reader's invoice_currency.currency holds it).
            us = any(_UNITED_STATES.search(line) for line in lines)
            confidence = min(confidence, LIKELY if us else FAIR)
    if shared_sign(code, "\n".join(lines)):
        confidence = min(confidence, FAIR)  # "¥" is the yen's and the yuan's
    found.put("currency", code, confidence)
    return code


# ------------------------------------------------------------------------------ parties


def _is_boundary(line: str) -> bool:
    return bool(
        _TITLE.match(line)
        or _LABEL.match(line)
        or _label_row(line)
        or _BILL_TO.match(line)
        or _is_table_header(line)
        or _SUM.match(line)
    )


def _vendor(lines: list[str], found: _Found) -> Vendor:
    block: list[str] = []
    for line in lines:
        if _TITLE.match(line) and not block:
            continue  # the title above the vendor's name
        if block and _TAX_ID.match(line):
            block.append(line)  # "VAT No.: ..." ends the block, and belongs to it
            break
        if _is_boundary(line):
            break
        block.append(line)
    tax_at = next((i for i, line in enumerate(block) if _TAX_ID.match(line)), None)
    if not block or tax_at == 0:
        found.put("vendor.name", None, 0.0)
        found.put("vendor.address", None, 0.0)
        found.put("vendor.tax_id", None, 0.0)
        return Vendor()
    name = block[0]
    address_lines = block[1:tax_at] if tax_at is not None else block[1:]
    sure = _a_firm(name) or (len(address_lines) >= 2 and not _more_than_a_name(name))
    if _BILL_TO_INSIDE.search(name):
        sure = False  # "Acme Ltd Bill to:": two blocks side by side, merged line by line
    found.put("vendor.name", name, SURE if sure else WEAK)
    address = ", ".join(address_lines) or None
    found.put("vendor.address", address, LIKELY if tax_at is not None and address else WEAK)
    tax_id = None
    if tax_at is not None:
        match = _TAX_ID.match(block[tax_at])
        tax_id = match.group("id").strip() if match else None
    found.put("vendor.tax_id", tax_id, SURE if tax_id else WEAK)
    return Vendor(name=name, address=address, tax_id=tax_id)


# What a line that is only a firm's name does not hold: a tax id's word, a run of digits
# (a street number, a postcode, a phone), an e-mail or web address.
_NOT_A_NAME = re.compile(
    r"\d{2,}|@|www\.|https?:|\b(?:VAT|Tax\s*ID|TIN|ABN|GST|EIN|USt|UID|TVA|BTW)\b", re.IGNORECASE
)


def _more_than_a_name(line: str) -> bool:
    """Whether the first line of the sender's block holds more than a name: a footer run
    into one line ("Acme Inc. 50 High Street London SW1A 1AA VAT No. GB..."), a slogan
    with a phone number."""
    return bool(_NOT_A_NAME.search(line))


def _a_firm(line: str) -> bool:
    """Whether the line is a firm's name by its legal form ("Acme Solutions Inc.",
    "Müller GmbH"), with nothing but a name on it."""
    return bool(_COMPANY.search(line)) and not _more_than_a_name(line)


def _customer(lines: list[str], found: _Found) -> Customer:
    for i, line in enumerate(lines):
        match = _BILL_TO.match(line)
        if not match:
            continue
        rest = match.group("rest").strip()
        if re.fullmatch(r"(?i)name\s*:?", rest):
            rest = ""  # "Client Name", "Customer name:": the label of the name, whole
        # "Bill To Ship To": another block's heading beside this one, and the lines of
        # the two blocks run into one another ("Acme Ltd Acme Warehouse"): no name is
        # sure there.
        beside = bool(rest and party_heading(fold(rest)))
        if beside:
            rest = ""
        block = [rest] if rest else []
        for following in lines[i + 1 :]:
            if _is_boundary(following) or _TAX_ID.match(following):
                break
            block.append(following)
        if block and not not_a_name(block[0]):
            # The heading and its line, with an address under it (the layout reader asks
            # as much of a block's name: invoice_reader._corroborated).
            found.put("customer.name", block[0], FAIR if beside or len(block) < 2 else SURE)
            address = ", ".join(block[1:]) or None
            found.put("customer.address", address, LIKELY if address else WEAK)
            return Customer(name=block[0], address=address)
    found.put("customer.name", None, 0.0)
    found.put("customer.address", None, 0.0)
    return Customer()


# --------------------------------------------------------------------------------- items


def _is_table_header(line: str) -> bool:
    return len(_TABLE_WORD.findall(line)) >= 3 and not any(c.isdigit() for c in line)


def _items(lines: list[str], style: NumberStyle, found: _Found) -> tuple[int, list[LineItem]]:
    """The rows after the first table header, and the index of the line after them."""
    start = next((i for i, line in enumerate(lines) if _is_table_header(line)), None)
    if start is None:
        found.put("line_items", None, 0.0)
        return 0, []
    numbered = lines[start].startswith(("#", "No.", "Pos"))
    head = lines[start].split()
    # A table whose first column (after a row number) is the quantity.
    qty_first = bool(head) and _QTY_WORD.match(head[1 if numbered and len(head) > 1 else 0])
    items: list[LineItem] = []
    confidences: list[float] = []
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if _SKIP.match(line) or _is_table_header(line):
            end += 1
            continue
        row = _row(line, style, numbered, bool(qty_first))
        if row is None and end + 1 < len(lines) and _all_numbers(lines[end + 1]):
            # PDFium breaks a row where the gap between two cells is very wide: the
            # description alone on a line, its numbers on the next.
            row = _row(f"{line} {lines[end + 1]}", style, numbered, bool(qty_first))
            end += 1
        if row is None:
            break
        items.append(row[0])
        confidences.append(row[1])
        end += 1
    found.put("line_items", items, min(confidences) if confidences else 0.0)
    return end, items


def _all_numbers(line: str) -> bool:
    tokens = line.split()
    return len(tokens) >= 3 and all(_NUMERIC.match(t) for t in tokens)


def _row(
    line: str, style: NumberStyle, numbered: bool, qty_first: bool = False
) -> tuple[LineItem, float] | None:
    if _SUM.match(line):
        return None
    tokens = line.split()
    if numbered and tokens and tokens[0].isdigit():
        tokens = tokens[1:]
    if qty_first and len(tokens) > 3 and _NUMERIC.match(tokens[0]):
        # Put the quantity back where the general reading expects it: before the prices.
        tokens = [*tokens[1:-2], tokens[0], *tokens[-2:]]
    tail = 0
    while tail < min(len(tokens) - 1, 9) and _NUMERIC.match(tokens[-1 - tail]):
        tail += 1
    if tail < 3:
        return None
    numbers = tokens[-tail:]
    best: tuple[LineItem, float] | None = None
    # Every way of cutting the trailing numbers into quantity, unit price and amount
    # (more than one token each only where a space groups thousands): the cut whose
    # arithmetic holds is the reading; with none, the plainest cut, at low confidence.
    for cut in _cuts(len(numbers), style.thousands == " "):
        q0, p0, a0 = cut
        quantity = _number_of(numbers[q0:p0], style)
        price = _number_of(numbers[p0:a0], style)
        amount = _number_of(numbers[a0:], style)
        if quantity is None or price is None or amount is None:
            continue
        description = " ".join(tokens[: len(tokens) - tail] + numbers[:q0]) or None
        item = LineItem(description=description, quantity=quantity, unit_price=price, amount=amount)
        exponent = amount.as_tuple().exponent
        unit = Decimal(1).scaleb(exponent) if isinstance(exponent, int) else Decimal("0.01")
        if abs(quantity * price - amount) <= max(unit / 2, Decimal("0.01")):
            return item, SURE
        if best is None:
            best = (item, WEAK)
    return best


def _cuts(n: int, spaced: bool) -> list[tuple[int, int, int]]:
    """Start indexes (quantity, price, amount) within n trailing numeric tokens."""
    if not spaced:
        return [(n - 3, n - 2, n - 1)]
    # Longest reading first: "1 1 794,85 1 794,85" is 1 x 1 794,85, not a description
    # ending in "1 1" and 794,85 x 1.
    cuts = []
    for q0 in range(n - 2):
        for p0, a0 in combinations(range(q0 + 1, n), 2):
            if p0 - q0 <= 1 and a0 - p0 <= 3 and n - a0 <= 3:
                cuts.append((q0, p0, a0))
    return cuts


def _number_of(tokens: list[str], style: NumberStyle) -> Decimal | None:
    if not tokens:
        return None
    if len(tokens) > 1 and (
        len(tokens[0]) > 3 or not all(len(t.split(style.decimal)[0]) == 3 for t in tokens[1:])
    ):
        return None
    return style.parse(style.thousands.join(tokens) if len(tokens) > 1 else tokens[0])


# ---------------------------------------------------------------------------------- sums


def _sums(lines: list[str], style: NumberStyle, found: _Found) -> None:
    values: dict[str, list[Decimal]] = {}
    for line in lines:
        match = _SUM.match(line)
        if not match or _TAX_ID.match(line):
            continue
        amounts = amounts_in(line[match.end() :], style)
        if amounts:
            values.setdefault(str(match.lastgroup), []).append(amounts[-1][0])
    for name in ("subtotal", "tax"):
        got = values.get(name, [])
        found.put(name, got[0] if got else None, SURE if len(got) == 1 else WEAK if got else 0)
    # The total: behind the strongest total label; "Balance due" is what is left to pay
    # after a payment, never the invoice's total.
    for kind, confidence in (("grand", SURE), ("total", SURE), ("amount_due", LIKELY)):
        got = values.get(kind, [])
        if got:
            found.put("total", got[0], confidence if len(set(got)) == 1 else WEAK)
            return
    # No total label the rules know: an amount on a line of its own below the subtotal
    # that equals subtotal + tax is the total by arithmetic, under some unknown label.
    subtotal, tax = found.values.get("subtotal"), found.values.get("tax")
    if isinstance(subtotal, Decimal):
        taxed = isinstance(tax, Decimal) and tax != 0
        expected = subtotal + (tax if isinstance(tax, Decimal) else Decimal(0))
        below = False
        for line in lines:
            match = _SUM.match(line)
            below = below or bool(match and match.lastgroup == "subtotal")
            amounts = amounts_in(line, style)
            if amounts and not match and abs(amounts[-1][0] - expected) < CENT:
                # Three amounts that agree, the last below the others, are the sums. The
                # subtotal's amount again, with no tax, is as likely an item's amount
                # (an invoice of one item) as a total, and a tax may have gone unread.
                sure = taxed and below
                found.put("total", amounts[-1][0], ARITHMETIC if sure else FAIR)
                return
    found.put("total", None, 0.0)


def _as_stated(lines: list[str], found: _Found) -> None:
    """Net and tax as the page states them (invoice_reader's docstring): an exemption in
    words is a tax of 0, and a total with its tax and no net printed makes the net. A
    total and no tax at all leave both unread."""
    total, tax = found.values.get("total"), found.values.get("tax")
    if not isinstance(total, Decimal) or found.values.get("subtotal") is not None:
        return
    if tax is None and NO_VAT.search(fold(" ".join(lines))):
        tax = Decimal(0)
        found.put("tax", tax, min(found.conf["total"], FAIR))
    if isinstance(tax, Decimal):
        found.put("subtotal", total - tax, min(found.conf["total"], found.conf["tax"], FAIR))


def _agree(invoice: Invoice, found: _Found) -> None:
    """Sums that agree confirm each other; sums that do not are each in doubt."""
    subtotal, tax, total = invoice.subtotal, invoice.tax, invoice.total
    if subtotal is not None and total is not None:
        if abs(subtotal + (tax or Decimal(0)) - total) <= Decimal("0.01"):
            if tax is None:
                # No tax line, and none is missing from the total: as sure as the total is.
                found.conf["tax"] = min(LIKELY, found.conf["total"])
        else:
            for name in ("subtotal", "tax", "total"):
                found.conf[name] = min(found.conf[name], GUESS)
    elif tax is None:
        found.conf["tax"] = min(found.conf["tax"], GUESS)
    amounts = [item.amount for item in invoice.line_items]
    lines_sum = sum((a for a in amounts if a is not None), Decimal(0))
    if (
        amounts
        and subtotal is not None
        and None not in amounts
        and abs(lines_sum - subtotal) > CENT
    ):
        found.conf["line_items"] = min(found.conf["line_items"], GUESS)
