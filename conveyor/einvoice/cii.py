"""UN/CEFACT Cross Industry Invoice: ZUGFeRD 2.x, Factur-X and XRechnung CII
(`CrossIndustryInvoice`), and ZUGFeRD 1.0 (`CrossIndustryDocument`, whose elements have
older names for the same terms). Each field is the EN 16931 business term named beside it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from conveyor.documents.types import Customer, Invoice, LineItem, Vendor
from conveyor.einvoice import xml
from conveyor.einvoice.read import EInvoice, joined


@dataclass(frozen=True)
class _Names:
    """The element names that differ between ZUGFeRD 1.0 and CII D16B (ZUGFeRD 2.x)."""

    context: str
    header: str
    transaction: str
    agreement: str
    settlement: str
    sums: str
    line_agreement: str
    line_delivery: str
    line_settlement: str
    line_sums: str


_V2 = _Names(
    context="ExchangedDocumentContext",
    header="ExchangedDocument",
    transaction="SupplyChainTradeTransaction",
    agreement="ApplicableHeaderTradeAgreement",
    settlement="ApplicableHeaderTradeSettlement",
    sums="SpecifiedTradeSettlementHeaderMonetarySummation",
    line_agreement="SpecifiedLineTradeAgreement",
    line_delivery="SpecifiedLineTradeDelivery",
    line_settlement="SpecifiedLineTradeSettlement",
    line_sums="SpecifiedTradeSettlementLineMonetarySummation",
)
_V1 = _Names(
    context="SpecifiedExchangedDocumentContext",
    header="HeaderExchangedDocument",
    transaction="SpecifiedSupplyChainTradeTransaction",
    agreement="ApplicableSupplyChainTradeAgreement",
    settlement="ApplicableSupplyChainTradeSettlement",
    sums="SpecifiedTradeSettlementMonetarySummation",
    line_agreement="SpecifiedSupplyChainTradeAgreement",
    line_delivery="SpecifiedSupplyChainTradeDelivery",
    line_settlement="SpecifiedSupplyChainTradeSettlement",
    line_sums="SpecifiedTradeSettlementMonetarySummation",
)


def read_cii(root: Any) -> EInvoice:
    names = _V1 if xml.local(root) == "CrossIndustryDocument" else _V2
    header = xml.node(root, names.header)
    transaction = xml.node(root, names.transaction)
    agreement = xml.node(transaction, names.agreement)
    settlement = xml.node(transaction, names.settlement)
    sums = xml.node(settlement, names.sums)
    currency = xml.text(settlement, "InvoiceCurrencyCode")  # BT-5

    def amount(name: str) -> Decimal | None:
        # A total may be stated twice, in the invoice and in the tax currency (BT-111):
        # the invoice currency's is the one.
        found = xml.nodes(sums, name)
        for element in found:
            if element.get("currencyID") in (None, currency):
                return xml.decimal(element)
        return xml.decimal(found[0]) if found else None

    invoice = Invoice(
        number=xml.text(header, "ID"),  # BT-1
        issue_date=_date(xml.node(header, "IssueDateTime")),  # BT-2
        due_date=_due_date(settlement),  # BT-9
        vendor=_vendor(xml.node(agreement, "SellerTradeParty")),  # BG-4
        customer=_customer(xml.node(agreement, "BuyerTradeParty")),  # BG-7
        currency=currency,
        line_items=[_line(item, names) for item in _items(transaction, names)],
        subtotal=amount("TaxBasisTotalAmount"),  # BT-109
        tax=amount("TaxTotalAmount"),  # BT-110
        total=amount("GrandTotalAmount"),  # BT-112
    )
    return EInvoice(
        invoice=invoice,
        syntax=xml.syntax(root),
        profile=xml.text(root, f"{names.context}/GuidelineSpecifiedDocumentContextParameter/ID"),
        type_code=xml.text(header, "TypeCode"),  # BT-3
        lines_total=amount("LineTotalAmount"),  # BT-106
        allowances=amount("AllowanceTotalAmount"),  # BT-107
        charges=amount("ChargeTotalAmount"),  # BT-108
        due_payable=amount("DuePayableAmount"),  # BT-115
    )


def _items(transaction: Any, names: _Names) -> list[Any]:
    # A line with neither a product name nor an amount is a free-text note among the
    # lines (EXTENDED profiles allow them), not an item.
    return [
        item
        for item in xml.nodes(transaction, "IncludedSupplyChainTradeLineItem")
        if xml.text(item, "SpecifiedTradeProduct/Name") is not None
        or xml.node(item, f"{names.line_settlement}/{names.line_sums}/LineTotalAmount") is not None
    ]


def _line(item: Any, names: _Names) -> LineItem:
    return LineItem(
        description=xml.text(item, "SpecifiedTradeProduct/Name"),  # BT-153
        quantity=xml.decimal(item, f"{names.line_delivery}/BilledQuantity"),  # BT-129
        # BT-146, the net price per BT-149 base quantity (1 unless stated), as invoiced.
        unit_price=xml.decimal(
            item, f"{names.line_agreement}/NetPriceProductTradePrice/ChargeAmount"
        ),
        amount=xml.decimal(
            item, f"{names.line_settlement}/{names.line_sums}/LineTotalAmount"
        ),  # BT-131
    )


def _date(element: Any) -> datetime.date | None:
    """A CII date: `udt:DateTimeString format="102"` (YYYYMMDD). Formats 610 and 616
    (a month, a week) name no day: None."""
    if element is None:
        return None
    inner = xml.node(element, "DateTimeString")
    target = inner if inner is not None else element
    raw = xml.text(target)
    if raw is None:
        return None
    try:
        if "-" in raw:  # some writers put an ISO date in a format-102 field
            return datetime.date.fromisoformat(raw[:10])
        if target.get("format", "102") == "102" and len(raw) >= 8 and raw[:8].isdigit():
            return datetime.date(int(raw[:4]), int(raw[4:6]), int(raw[6:8]))
    except ValueError:
        return None
    return None


def _due_date(settlement: Any) -> datetime.date | None:
    """BT-9. Several payment terms (a cash discount's date, then the full amount's, or
    instalments): the latest, the date by which all of it is due."""
    dates = [
        d
        for d in (
            _date(term)
            for term in xml.nodes(settlement, "SpecifiedTradePaymentTerms/DueDateDateTime")
        )
        if d is not None
    ]
    return max(dates) if dates else None


def _address(party: Any) -> str | None:
    address = xml.node(party, "PostalTradeAddress")
    street = [xml.text(address, f) for f in ("LineOne", "LineTwo", "LineThree")]
    city = joined([xml.text(address, "PostcodeCode"), xml.text(address, "CityName")], " ")
    return joined([*street, city, xml.text(address, "CountryID")])


def _tax_id(party: Any) -> str | None:
    """The VAT identifier (schemeID VA, BT-31) before a local tax number (FC, BT-32)."""
    ids = {
        element.get("schemeID"): xml.text(element)
        for element in xml.nodes(party, "SpecifiedTaxRegistration/ID")
    }
    return ids.get("VA") or ids.get("FC") or next((v for v in ids.values() if v), None)


def _vendor(party: Any) -> Vendor:
    return Vendor(name=xml.text(party, "Name"), address=_address(party), tax_id=_tax_id(party))


def _customer(party: Any) -> Customer:
    return Customer(name=xml.text(party, "Name"), address=_address(party))
