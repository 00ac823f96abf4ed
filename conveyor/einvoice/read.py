"""An e-invoice's XML into the Invoice the document agents return, with what EN 16931
says must hold between its totals."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from conveyor.documents.types import Invoice

CENT = Decimal("0.01")


@dataclass(frozen=True)
class EInvoice:
    invoice: Invoice
    syntax: str  # "CII", "CII 1.0 (ZUGFeRD 1.0)" or "UBL"
    profile: str | None  # BT-24, e.g. urn:cen.eu:en16931:2017
    type_code: str | None  # BT-3: 380 invoice, 381 credit note, 875 partial invoice, ...
    lines_total: Decimal | None = None  # BT-106, the sum of the line net amounts
    allowances: Decimal | None = None  # BT-107
    charges: Decimal | None = None  # BT-108
    due_payable: Decimal | None = None  # BT-115, what is left to pay (after prepayments)

    def checks(self) -> list[str]:
        """EN 16931's arithmetic between the totals (BR-CO-10, -13, -15) that does not
        hold, one sentence each. Header allowances and charges sit between the lines and
        the net: the lines need not add up to the net on their own."""
        inv, failed = self.invoice, []
        amounts = [item.amount for item in inv.line_items if item.amount is not None]
        lines = self.lines_total
        if lines is not None and amounts and abs(sum(amounts, Decimal(0)) - lines) > CENT:
            failed.append(f"the line amounts sum to {sum(amounts)}, not to BT-106 {lines}")
        if lines is not None and inv.subtotal is not None:
            net = lines - (self.allowances or 0) + (self.charges or 0)
            if abs(net - inv.subtotal) > CENT:
                failed.append(
                    f"lines {lines} - allowances + charges = {net}, not the net {inv.subtotal}"
                )
        if inv.subtotal is not None and inv.total is not None:
            gross = inv.subtotal + (inv.tax or 0)
            if abs(gross - inv.total) > CENT:
                failed.append(
                    f"net {inv.subtotal} + tax {inv.tax or 0} = {gross}, not the total {inv.total}"
                )
        return failed

    def describe(self) -> str:
        kind = {"381": "a credit note", "875": "a partial invoice", "384": "a corrected invoice"}
        what = kind.get(self.type_code or "", "an invoice")
        profile = f", profile {self.profile}" if self.profile else ""
        return f"{what} in {self.syntax} XML{profile}"


def joined(parts: list[str | None], separator: str = ", ") -> str | None:
    """The parts that are there, joined; None when none is."""
    present = [p for p in parts if p]
    return separator.join(present) if present else None
