"""E-invoices: the EN 16931 XML (ZUGFeRD 1 and 2, Factur-X, XRechnung, Peppol / UBL) that
an invoice carries inside its PDF, or that is uploaded on its own, read exactly.

    read_xml(data)        -> EInvoice (an Invoice, its syntax, profile and totals)
    invoice_xml(pdf)      -> the attached e-invoice XML of a PDF, or None
    NotAnInvoice          the XML is not well-formed or not an e-invoice

cii.py reads CII (CrossIndustryInvoice, and ZUGFeRD 1.0's CrossIndustryDocument), ubl.py
UBL Invoice and CreditNote, both with lxml by the element names of the EN 16931 bindings.
`conveyor.agents.einvoice` turns an EInvoice into the agents' Extraction, checked against
the printed page.
"""

from __future__ import annotations

from pydantic import ValidationError

from conveyor.einvoice import xml
from conveyor.einvoice.cii import read_cii
from conveyor.einvoice.embedded import Attached, invoice_xml
from conveyor.einvoice.errors import NotAnInvoice
from conveyor.einvoice.read import EInvoice
from conveyor.einvoice.ubl import read_ubl

__all__ = ["Attached", "EInvoice", "NotAnInvoice", "invoice_xml", "read_xml"]


def read_xml(data: bytes) -> EInvoice:
    """The e-invoice in `data`; NotAnInvoice when it is none (a clear sentence why)."""
    root = xml.parse(data)
    syntax = xml.syntax(root)
    try:
        return read_ubl(root) if syntax == "UBL" else read_cii(root)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise NotAnInvoice(f"its {syntax} values are not valid ({problems})") from None
