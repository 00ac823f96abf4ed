"""OASIS UBL 2.x `Invoice` and `CreditNote` (XRechnung UBL, Peppol BIS, e-fff, ...), by
the EN 16931 UBL binding. Each field is the business term named beside it."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from conveyor.documents.types import Customer, Invoice, LineItem, Vendor
from conveyor.einvoice import xml
from conveyor.einvoice.read import EInvoice, joined


def read_ubl(root: Any) -> EInvoice:
    credit = xml.local(root) == "CreditNote"
    currency = xml.text(root, "DocumentCurrencyCode")  # BT-5
    totals = xml.node(root, "LegalMonetaryTotal")
    supplier = xml.node(root, "AccountingSupplierParty/Party")
    invoice = Invoice(
        number=xml.text(root, "ID"),  # BT-1
        issue_date=_date(xml.text(root, "IssueDate")),  # BT-2
        due_date=_due_date(root),  # BT-9
        vendor=Vendor(name=_name(supplier), address=_address(supplier), tax_id=_tax_id(supplier)),
        customer=_customer(xml.node(root, "AccountingCustomerParty/Party")),
        currency=currency,
        line_items=[
            _line(line, credit)
            for line in xml.nodes(root, "CreditNoteLine" if credit else "InvoiceLine")
        ],
        subtotal=xml.decimal(totals, "TaxExclusiveAmount"),  # BT-109
        tax=_tax(root, currency),  # BT-110
        total=xml.decimal(totals, "TaxInclusiveAmount"),  # BT-112
    )
    return EInvoice(
        invoice=invoice,
        syntax="UBL",
        profile=xml.text(root, "CustomizationID"),  # BT-24
        type_code=xml.text(root, "CreditNoteTypeCode" if credit else "InvoiceTypeCode")
        or ("381" if credit else None),
        lines_total=xml.decimal(totals, "LineExtensionAmount"),  # BT-106
        allowances=xml.decimal(totals, "AllowanceTotalAmount"),  # BT-107
        charges=xml.decimal(totals, "ChargeTotalAmount"),  # BT-108
        due_payable=xml.decimal(totals, "PayableAmount"),  # BT-115
    )


def _date(raw: str | None) -> datetime.date | None:
    if raw is None:
        return None
    try:
        return datetime.date.fromisoformat(raw[:10])
    except ValueError:
        return None


def _due_date(root: Any) -> datetime.date | None:
    """BT-9: cbc:DueDate in UBL 2.1 invoices; UBL 2.0 and credit notes put it in
    PaymentMeans/PaymentDueDate."""
    found = _date(xml.text(root, "DueDate"))
    if found is not None:
        return found
    dates = [_date(xml.text(m)) for m in xml.nodes(root, "PaymentMeans/PaymentDueDate")]
    present = [d for d in dates if d is not None]
    return max(present) if present else None


def _tax(root: Any, currency: str | None) -> Decimal | None:
    # Two TaxTotals when the tax is also accounted in another currency (BT-111): the one
    # in the invoice currency is BT-110.
    for total in xml.nodes(root, "TaxTotal/TaxAmount"):
        if total.get("currencyID") in (None, currency):
            return xml.decimal(total)
    return None


def _name(party: Any) -> str | None:
    """BT-27 / BT-44 is the legal name (RegistrationName); the trading name (PartyName)
    stands in when a writer gives only that."""
    return xml.text(party, "PartyLegalEntity/RegistrationName") or xml.text(party, "PartyName/Name")


def _address(party: Any) -> str | None:
    address = xml.node(party, "PostalAddress")
    street = [xml.text(address, f) for f in ("StreetName", "AdditionalStreetName")]
    street += [xml.text(line, "Line") for line in xml.nodes(address, "AddressLine")]
    city = joined([xml.text(address, "PostalZone"), xml.text(address, "CityName")], " ")
    return joined([*street, city, xml.text(address, "Country/IdentificationCode")])


def _tax_id(party: Any) -> str | None:
    return xml.text(party, "PartyTaxScheme/CompanyID")  # BT-31


def _customer(party: Any) -> Customer:
    return Customer(name=_name(party), address=_address(party))


def _line(line: Any, credit: bool) -> LineItem:
    return LineItem(
        description=xml.text(line, "Item/Name"),  # BT-153
        quantity=xml.decimal(line, "CreditedQuantity" if credit else "InvoicedQuantity"),
        unit_price=xml.decimal(line, "Price/PriceAmount"),  # BT-146
        amount=xml.decimal(line, "LineExtensionAmount"),  # BT-131
    )
