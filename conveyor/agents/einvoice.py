"""E-invoices first: when a PDF carries its invoice as EN 16931 XML (or the XML is the
upload), that XML is the extraction, read exactly (`conveyor.einvoice`), not guessed.

    from_pdf(path, text)  -> Extraction, or None when the PDF carries no e-invoice
    from_xml(data)        -> Extraction; NotAnInvoice when the XML is not an e-invoice

The XML and the printed page are meant to be twins, but nothing forces a writer to keep
them so. Invoice number, issue date and total are therefore looked for in the page text:
one the page does not show is a note, its field's confidence drops below the bar of
trust, and so does the document's. EN 16931's own arithmetic between the totals is the
other check. A standalone XML upload has no page to compare: it says so.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from pathlib import Path

from conveyor.documents.text import DocumentText
from conveyor.documents.types import Extraction, document_confidence
from conveyor.einvoice import EInvoice, NotAnInvoice, invoice_xml, read_xml

EXTRACTOR = "e-invoice"
READ = 0.99  # a value read from the XML and, where checked, printed on the page
UNCHECKED = 0.97  # read from the XML; the page was not (or could not be) compared
ABSENT = 0.95  # the XML states no such value: null is the invoice's own answer
MISMATCH = 0.5  # the page does not show the XML's value: one of the two is wrong
KEY_FIELDS = ["number", "issue_date", "vendor.name", "currency", "total"]


def from_pdf(path: Path, text: DocumentText) -> Extraction | None:
    """The extraction of the e-invoice `path` carries, checked against its `text`."""
    attached = invoice_xml(path)
    if attached is None:
        return None
    try:
        einvoice = read_xml(attached.data)
    except NotAnInvoice:
        return None  # an e-invoice with values that are not valid: the page is read instead
    return _extraction(
        einvoice,
        text,
        f"read from the e-invoice XML the PDF carries ({attached.name}): {einvoice.describe()}",
    )


def from_xml(data: bytes) -> Extraction:
    """The extraction of a standalone e-invoice XML."""
    einvoice = read_xml(data)
    return _extraction(
        einvoice,
        None,
        f"read from an uploaded e-invoice: {einvoice.describe()}; there is no printed page "
        "to check it against",
    )


def _extraction(einvoice: EInvoice, text: DocumentText | None, source: str) -> Extraction:
    inv = einvoice.invoice
    values: dict[str, object] = {
        "number": inv.number,
        "issue_date": inv.issue_date,
        "due_date": inv.due_date,
        "vendor.name": inv.vendor.name,
        "vendor.address": inv.vendor.address,
        "vendor.tax_id": inv.vendor.tax_id,
        "customer.name": inv.customer.name,
        "customer.address": inv.customer.address,
        "currency": inv.currency,
        "subtotal": inv.subtotal,
        "tax": inv.tax,
        "total": inv.total,
        "line_items": inv.line_items or None,
    }
    fields = {name: UNCHECKED if value is not None else ABSENT for name, value in values.items()}
    notes = [source]
    checks = einvoice.checks()
    for name in ("number", "issue_date", "vendor.name", "currency", "total"):
        if values[name] is None:
            fields[name] = 0.0
            checks.append(f"the e-invoice states no {name.replace('_', ' ').replace('.', ' ')}")
    if text is not None:
        notes += list(text.notes)
        page = _normalised(text.text)
        if page:
            for name, shown in _printed(inv.number, inv.issue_date, inv.total, page).items():
                if shown:
                    fields[name] = READ
                else:
                    fields[name] = MISMATCH
                    checks.append(
                        f"the printed page does not show the XML's {name.replace('_', ' ')} "
                        f"{values[name]}"
                    )
        else:
            notes.append("the page has no text to check the XML against")
    if (
        einvoice.due_payable is not None
        and inv.total is not None
        and (einvoice.due_payable != inv.total)
    ):
        notes.append(
            f"the amount to pay is {einvoice.due_payable}, not the total {inv.total} "
            "(prepaid or outstanding amounts)"
        )
    return Extraction(
        type="invoice",
        data=inv.model_dump(mode="json"),
        confidence=document_confidence(fields, checks, key_fields=KEY_FIELDS),
        fields=fields,
        checks=checks,
        notes=notes,
        pages=text.page_count if text is not None else 1,
        extractor=EXTRACTOR,
    )


# ------------------------------------------------------------------- the printed page


def _normalised(text: str) -> str:
    # Every kind of space (no-break, thin, narrow) as one plain space: thousands are
    # grouped with any of them.
    return " ".join(text.replace("\u00a0", " ").replace("\u202f", " ").split()).lower()


def _printed(
    number: str | None, issued: datetime.date | None, total: Decimal | None, page: str
) -> dict[str, bool]:
    """For each of number, issue date and total that the XML states: is it on the page?"""
    shown: dict[str, bool] = {}
    if number is not None:
        compact = page.replace(" ", "")
        shown["number"] = number.lower() in page or number.lower().replace(" ", "") in compact
    if issued is not None:
        shown["issue_date"] = any(form in page for form in _date_forms(issued)) or bool(
            _worded_date(issued).search(page)
        )
    if total is not None:
        shown["total"] = any(_amount_pattern(form).search(page) for form in _amount_forms(total))
    return shown


def _date_forms(day: datetime.date) -> set[str]:
    d, m, y = day.day, day.month, day.year
    forms = {day.isoformat(), f"{y}{m:02}{d:02}"}
    for sep in ".-/":
        for dd, mm in ((f"{d:02}", f"{m:02}"), (str(d), str(m))):
            for yy in (str(y), f"{y % 100:02}"):
                forms.add(f"{dd}{sep}{mm}{sep}{yy}")  # day first (Europe)
                forms.add(f"{mm}{sep}{dd}{sep}{yy}")  # month first (the US)
    return forms


def _worded_date(day: datetime.date) -> re.Pattern[str]:
    """The day and the year with one word between or before them: '3. März 2024',
    '3 juillet 2024', 'August 3, 2014'. Which word names which month is the text path's
    business; here the day and year in a date's shape are enough to confirm a value the
    XML already states exactly."""
    d, y = day.day, day.year
    return re.compile(
        rf"(?<!\d)0?{d}(?:st|nd|rd|th|er)?\.? [^\W\d]{{3,12}}\.? {y}(?!\d)"
        rf"|[^\W\d]{{3,12}}\.? 0?{d}(?:st|nd|rd|th)? ?,? {y}(?!\d)"
    )


def _amount_forms(amount: Decimal) -> set[str]:
    """The ways a page prints an amount: 1234.56, 1,234.56, 1.234,56, 1 234,56,
    1'234.56, and without decimals when they are zero."""
    value = abs(amount).quantize(Decimal("0.01"))
    whole, cents = f"{value:f}".split(".")
    groups = f"{int(whole):,}"
    forms = set()
    for thousands, point in ((",", "."), (".", ","), (" ", ","), (" ", "."), ("'", ".")):
        for grouped in (whole, groups.replace(",", thousands)):
            forms.add(re.escape(f"{grouped}{point}{cents}"))
            if cents == "00":
                # Without decimals only beside a currency: a bare 2024 is a year as often.
                bare = re.escape(grouped)
                forms.add(rf"(?:{_CURRENCY}) ?{bare}(?:[.,]-)?|{bare}(?:[.,]-)? ?(?:{_CURRENCY})")
    return forms


_CURRENCY = r"[€$£¥₹]|eur|usd|gbp|chf|inr|rs\.?"


def _amount_pattern(form: str) -> re.Pattern[str]:
    # Not inside a longer number: 1,234.56 is not 21,234.567.
    return re.compile(rf"(?<![\d.,'])(?:{form})(?![\d]|[.,]\d)")
