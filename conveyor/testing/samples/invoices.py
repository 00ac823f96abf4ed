"""Generated invoices: fictional vendors from ten countries, each with the habits of its
place (date order, number format, tax name), drawn in varied layouts, and their truth.

About one invoice in four is a hard case on purpose: an unusual label for the number or
the total, the number only in the title, a date that reads both ways, a "Balance due"
after the total, an order date before the invoice date, no tax line (and then, for half of
them, no subtotal either: the truth has no net), the customer's block
beside the vendor's (so their lines merge), the quantity column first. Some of these
defeat simple rules; an extractor that is right on all of them is suspicious.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from conveyor.documents.types import Customer, Invoice, LineItem, Vendor
from conveyor.testing.samples.formats import MoneyStyle, format_date
from conveyor.testing.samples.world import CATALOGUE, CUSTOMERS, PLACES, VENDORS, Company

NUMBER_LABELS = ("Invoice No.", "Invoice #", "Invoice Number", "Bill number", "Invoice no:")
HARD_NUMBER_LABELS = ("Reference", "Document No.", "Our ref.")
HARD_TOTAL_LABELS = ("Please pay", "To pay", "Amount payable")
HARD_CASES = (
    "odd-label",
    "odd-total",
    "title-number",
    "ambiguous-date",
    "balance-due",
    "order-date",
    "no-tax",
    "side-by-side",
    "qty-first",
)
ISSUE_LABELS = ("Date", "Invoice Date", "Issue date", "Date of issue", "Invoice date")
DUE_LABELS = ("Due Date", "Payment due", "Due", "Pay by", "Due date")
BILL_TO = ("Bill to:", "Billed to", "Customer:", "Invoice to:", "Sold to")
TITLES = ("INVOICE", "Invoice", "TAX INVOICE", "Bill")
SUBTOTAL_LABELS = ("Subtotal", "Net amount", "Sub-total", "Total before tax")
TOTAL_LABELS = ("Total", "Total due", "Amount due", "Grand total", "Invoice total", "TOTAL")
TABLE_HEADS = (
    ("Description", "Qty", "Unit price", "Amount"),
    ("Item", "Quantity", "Rate", "Total"),
    ("Description", "Units", "Price", "Line total"),
    ("Article", "Qty", "Unit cost", "Amount"),
)
NUMBER_SHAPES = (
    lambda r, y: f"INV-{y}-{r.randint(1, 9999):04d}",
    lambda r, y: f"{y}/{r.randint(1, 999):03d}",
    lambda r, y: f"{r.randint(10000, 99999)}",
    lambda r, y: f"F{y % 100}{r.randint(1000, 9999)}",
    lambda r, y: f"{r.choice('ABCDEFGHJK')}{r.randint(100, 999)}-{r.randint(10, 99)}",
)


@dataclass
class InvoiceSpec:
    """Every choice made for one invoice: what is printed, and how."""

    truth: Invoice
    vendor: Company
    customer: Company
    money: MoneyStyle
    date_style: str
    tax_name: str
    tax_rate: str
    labels: dict[str, str]
    layout: str  # "stacked" (label: value lines) or "row" (a row of labels, then values)
    vendor_right: bool
    numbered_rows: bool
    customer_first: bool
    letter: bool
    hard: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


def money_round(value: Decimal, decimals: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def invoice_spec(seed: int) -> InvoiceSpec:
    r = random.Random(f"invoice-{seed}")
    vendor = r.choice(VENDORS)
    place = PLACES[vendor.country]
    customer = r.choice([c for c in CUSTOMERS if c.name != vendor.name])
    money = r.choice(place.money)
    date_style = r.choice(place.dates)
    hard: list[str] = []
    if r.random() < 0.25:
        hard.append(r.choice(HARD_CASES))
    if "ambiguous-date" in hard:
        # A US vendor writing day first: both readings are dates when the day is <= 12.
        date_style = "dmy" if place.dates[0] == "us" else "us"

    year = r.choice((2025, 2026))
    issue = datetime.date(year, r.randint(1, 12), r.randint(1, 28))
    if "ambiguous-date" in hard:
        issue = issue.replace(day=r.randint(1, 12))
    due: datetime.date | None = issue + datetime.timedelta(days=r.choice((14, 15, 30, 30, 45)))
    if r.random() < 0.1 or ("ambiguous-date" in hard and r.random() < 0.5):
        due = None  # "Payable upon receipt"

    count = r.choice((1, 2, 3, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25))
    decimals = money.decimals
    scale = 150 if place.currency == "JPY" else 1
    items = []
    for description, (low, high), whole in r.sample(CATALOGUE, min(count, len(CATALOGUE))):
        quantity = (
            Decimal(r.choice((1, 1, 1, 2, 3, 4, 5, 10, 12, 20, 50)))
            if whole
            else Decimal(r.randint(2, 80)) / 2
        )
        price = money_round(Decimal(r.randint(low * 100, high * 100)) / 100 * scale, decimals)
        amount = money_round(quantity * price, decimals)
        items.append(
            LineItem(description=description, quantity=quantity, unit_price=price, amount=amount)
        )
    while len(items) < count:  # more lines than the catalogue: repeat with a date suffix
        base = r.choice(items[: len(CATALOGUE)])
        month = r.randint(1, 12)
        items.append(base.model_copy(update={"description": f"{base.description} ({month:02d})"}))
    subtotal = sum((i.amount for i in items if i.amount is not None), Decimal(0))
    tax_rate = r.choice(place.tax_rates)
    tax: Decimal | None = money_round(subtotal * Decimal(tax_rate) / 100, decimals)
    if tax_rate == "0" or "no-tax" in hard:
        tax_rate = "0"
        tax = None
    total = subtotal + (tax or Decimal(0))
    # An invoice without tax prints its net (a subtotal line) or only its total; with no tax
    # printed at all, its truth has no net (the reader's convention: a total may hold a tax
    # it does not itemise). Drawn apart so that every other choice stays as it was.
    net_printed = tax is not None or random.Random(f"invoice-{seed}-net").random() < 0.5

    number_label = r.choice(NUMBER_LABELS)
    if "odd-label" in hard:
        number_label = r.choice(HARD_NUMBER_LABELS)
    total_label = r.choice(TOTAL_LABELS)
    if "odd-total" in hard:
        total_label = r.choice(HARD_TOTAL_LABELS)
    labels = {
        "number": number_label,
        "issue": r.choice(ISSUE_LABELS),
        "due": r.choice(DUE_LABELS),
        "bill_to": r.choice(BILL_TO),
        "title": r.choice(TITLES),
        "subtotal": r.choice(SUBTOTAL_LABELS),
        "total": total_label,
    }
    colon = r.random() < 0.6
    if colon:
        labels = {
            k: (v if v.endswith(":") or k in ("title",) else v + ":") for k, v in labels.items()
        }
    truth = Invoice(
        number=r.choice(NUMBER_SHAPES)(r, year),
        issue_date=issue,
        due_date=due,
        vendor=Vendor(name=vendor.name, address=", ".join(vendor.lines), tax_id=vendor.tax_id),
        customer=Customer(name=customer.name, address=", ".join(customer.lines)),
        currency=place.currency,
        line_items=items,
        subtotal=subtotal if net_printed else None,
        tax=tax,
        total=total,
    )
    # Row layouts print values side by side: only for values without spaces.
    spaced = " " in format_date(issue, date_style)
    layout = "stacked" if spaced or r.random() < 0.6 else "row"
    spec = InvoiceSpec(
        truth=truth,
        vendor=vendor,
        customer=customer,
        money=money,
        date_style=date_style,
        tax_name=r.choice(place.tax_names),
        tax_rate=tax_rate,
        labels=labels,
        layout=layout,
        vendor_right=r.random() < 0.3,
        numbered_rows=r.random() < 0.3,
        customer_first=r.random() < 0.3,
        letter=place.letter,
        hard=hard,
    )
    spec.extras["table_head"] = r.choice(TABLE_HEADS)
    spec.extras["order_date"] = issue - datetime.timedelta(days=r.randint(3, 20))
    spec.extras["paid"] = money_round(total * Decimal(r.choice(("0.25", "0.5"))), decimals)
    spec.extras["terms_days"] = (due - issue).days if due else 0
    spec.extras["iban"] = f"{r.choice(['DE', 'GB', 'NL', 'FR'])}{r.randint(10, 99)} " + " ".join(
        f"{r.randint(0, 9999):04d}" for _ in range(4)
    )
    return spec


class Sheet:
    """A reportlab canvas with a cursor: lines go down the page, pages break by themselves."""

    def __init__(self, canvas: Any, width: float, height: float) -> None:
        self.c = canvas
        self.width = width
        self.height = height
        self.y = height - 60
        self.page = 1

    def line(
        self,
        x: float,
        text: str,
        *,
        size: float = 10,
        bold: bool = False,
        right: bool = False,
        advance: float | None = None,
    ) -> None:
        self.c.setFont("Helvetica-Bold" if bold else "Helvetica", size)
        if right:
            self.c.drawRightString(x, self.y, text)
        else:
            self.c.drawString(x, self.y, text)
        if advance is None:
            advance = size * 1.35
        self.y -= advance

    def cells(self, cells: list[tuple[float, str, bool]], *, bold: bool = False) -> None:
        """One row of a table: (x, text, right-aligned) on one baseline."""
        self.c.setFont("Helvetica-Bold" if bold else "Helvetica", 9.5)
        for x, text, right in cells:
            if right:
                self.c.drawRightString(x, self.y, text)
            else:
                self.c.drawString(x, self.y, text)
        self.y -= 14

    def gap(self, points: float) -> None:
        self.y -= points

    def room(self, points: float) -> bool:
        return self.y - points > 70

    def new_page(self) -> None:
        self.c.showPage()
        self.page += 1
        self.y = self.height - 60


def draw_invoice(spec: InvoiceSpec) -> bytes:
    """The PDF of an invoice spec."""
    import io

    from reportlab.lib.pagesizes import A4, LETTER  # type: ignore[import-untyped]
    from reportlab.pdfgen.canvas import Canvas  # type: ignore[import-untyped]

    inv = spec.truth
    width, height = LETTER if spec.letter else A4
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=(width, height), invariant=True)
    canvas.setTitle(f"Invoice {inv.number}")
    sheet = Sheet(canvas, width, height)
    left, right = 50.0, width - 50
    money = spec.money
    labels = spec.labels

    def date(value: datetime.date) -> str:
        return format_date(value, spec.date_style)

    # Vendor block, title.
    vendor_lines = [spec.vendor.name, *spec.vendor.lines]
    vendor_lines.append(f"{spec.vendor.tax_label}: {spec.vendor.tax_id}")
    if "side-by-side" in spec.hard:
        # The customer's block beside the vendor's, drawn row by row as a two-column
        # table would: on each baseline the two blocks' lines become one line of text.
        customer_lines = [labels["bill_to"], spec.customer.name, *spec.customer.lines]
        for n in range(max(len(vendor_lines), len(customer_lines))):
            cells = []
            if n < len(vendor_lines):
                cells.append((left, vendor_lines[n], False))
            if n < len(customer_lines):
                cells.append((width / 2 + 20, customer_lines[n], False))
            sheet.cells(cells, bold=n == 0)
    else:
        vx = right if spec.vendor_right else left
        sheet.line(vx, vendor_lines[0], size=15, bold=True, right=spec.vendor_right)
        for text in vendor_lines[1:-1]:
            sheet.line(vx, text, right=spec.vendor_right, advance=12.5)
        sheet.line(vx, vendor_lines[-1], right=spec.vendor_right)
    title_y = sheet.y
    sheet.y = height - 60
    title = labels["title"]
    if "title-number" in spec.hard:
        title = f"{title} {inv.number}"
    sheet.line(
        left if spec.vendor_right else right,
        title,
        size=20,
        bold=True,
        right=not spec.vendor_right,
    )
    sheet.y = min(title_y, sheet.y) - 18

    def bill_to() -> None:
        sheet.line(left, labels["bill_to"], bold=True)
        sheet.line(left, spec.customer.name, advance=12.5)
        for text in spec.customer.lines:
            sheet.line(left, text, advance=12.5)
        sheet.gap(18)

    if spec.customer_first and "side-by-side" not in spec.hard:
        bill_to()

    # The invoice's number and dates.
    meta: list[tuple[str, str]] = []
    if "title-number" not in spec.hard:
        meta.append((labels["number"], inv.number or ""))
    if "order-date" in spec.hard:
        meta.append(("Order date:", date(spec.extras["order_date"])))
    meta.append((labels["issue"], date(inv.issue_date) if inv.issue_date else ""))
    if inv.due_date:
        meta.append((labels["due"], date(inv.due_date)))
    if spec.layout == "row":
        columns = [left + i * 150 for i in range(len(meta))]
        sheet.cells(
            [(x, label.rstrip(":"), False) for x, (label, _) in zip(columns, meta, strict=True)],
            bold=True,
        )
        sheet.cells([(x, value, False) for x, (_, value) in zip(columns, meta, strict=True)])
    else:
        for label, value in meta:
            sheet.cells([(left, label, False), (left + 110, value, False)])
    if not inv.due_date:
        sheet.line(left, "Payable upon receipt")
    sheet.gap(12)

    if not spec.customer_first and "side-by-side" not in spec.hard:
        bill_to()

    # The lines.
    head = spec.extras["table_head"]
    dx = 70.0 if spec.numbered_rows else left
    cols = (dx, right - 190, right - 95, right)

    def table_head() -> None:
        cells = [
            (cols[0], head[0], False),
            (cols[1], head[1], True),
            (cols[2], head[2], True),
            (cols[3], head[3], True),
        ]
        if spec.numbered_rows:
            cells.insert(0, (left, "#", False))
        sheet.cells(_qty_first(cells, spec), bold=True)

    table_head()
    for n, item in enumerate(inv.line_items, 1):
        if not sheet.room(14):
            sheet.line(right, "continued on next page", size=8, right=True)
            sheet.new_page()
            table_head()
        quantity = f"{item.quantity:f}".replace(".", money.decimal)
        cells = [
            (cols[0], item.description or "", False),
            (cols[1], quantity, True),
            (cols[2], money.number(item.unit_price or Decimal(0)), True),
            (cols[3], money.number(item.amount or Decimal(0)), True),
        ]
        if spec.numbered_rows:
            cells.insert(0, (left, str(n), False))
        sheet.cells(_qty_first(cells, spec))
    sheet.gap(10)

    # The sums.
    if not sheet.room(90):
        sheet.new_page()
    lx = right - 230
    sums = [(labels["subtotal"], money.number(inv.subtotal))] if inv.subtotal is not None else []
    if inv.tax is not None:
        rate = spec.tax_rate.replace(".", money.decimal)
        sums.append((f"{spec.tax_name} {rate}%", money.number(inv.tax)))
    sums.append((labels["total"], money.money(inv.total or Decimal(0))))
    if "balance-due" in spec.hard:
        paid = spec.extras["paid"]
        sums.append(("Amount paid", money.money(-paid)))
        sums.append(("Balance due", money.money((inv.total or Decimal(0)) - paid)))
    for label, value in sums:
        sheet.cells([(lx, label, False), (right, value, True)], bold=label == labels["total"])
    sheet.gap(24)

    # Terms and the bank: more numbers near the end, as on real invoices.
    if inv.due_date:
        sheet.line(left, f"Payment terms: {spec.extras['terms_days']} days net", size=9)
    sheet.line(left, f"Bank transfer to IBAN {spec.extras['iban']}", size=9)
    sheet.line(left, "Thank you for your business.", size=9)
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def _qty_first(
    cells: list[tuple[float, str, bool]], spec: InvoiceSpec
) -> list[tuple[float, str, bool]]:
    """The quantity column moved before the description, for the "qty-first" hard case."""
    if "qty-first" not in spec.hard:
        return cells
    *lead, (dx, description, _), (_, quantity, _), price, amount = cells
    return [*lead, (dx + 25, quantity, True), (dx + 40, description, False), price, amount]
