"""The e-invoice XML a PDF carries (ZUGFeRD, Factur-X, XRechnung in a PDF/A-3), found among
its attached files with PDFium (pypdfium2, already what reads the PDF's text).

PDFium lists every file in the document's EmbeddedFiles name tree, whatever it is called:
the standard names come first (factur-x.xml, zugferd-invoice.xml, ZUGFeRD-invoice.xml,
xrechnung.xml), then any other attached XML whose root is an e-invoice. Other attachments
(receipts, measurement sheets) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conveyor.documents.pdf import PDFIUM_LOCK
from conveyor.einvoice import xml
from conveyor.einvoice.errors import NotAnInvoice

STANDARD_NAMES = ("factur-x.xml", "zugferd-invoice.xml", "xrechnung.xml", "order-x.xml")
MAX_XML_BYTES = 20 << 20  # an e-invoice is kilobytes; a larger attachment is not one


@dataclass(frozen=True)
class Attached:
    name: str
    data: bytes


def invoice_xml(source: Path | bytes) -> Attached | None:
    """The e-invoice XML attached to the PDF at `source`, or None when it carries none (or
    PDFium cannot open it: reading its text says why)."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    candidates: list[Attached] = []
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
        except (pdfium.PdfiumError, OSError):
            return None
        try:
            for index in range(document.count_attachments()):
                found = _xml_attachment(document.get_attachment(index))
                if found is not None:
                    candidates.append(found)
        except pdfium.PdfiumError:
            pass  # a damaged attachment table: what was listed before it still counts
        finally:
            document.close()
    candidates.sort(key=_rank)
    for candidate in candidates:
        try:
            xml.syntax(xml.parse(candidate.data))
        except NotAnInvoice:
            continue
        return candidate
    return None


def _xml_attachment(attachment: Any) -> Attached | None:
    name = str(attachment.get_name() or "")
    if not name.lower().endswith(".xml"):
        return None
    data = bytes(attachment.get_data())
    return Attached(name, data) if 0 < len(data) <= MAX_XML_BYTES else None


def _rank(attached: Attached) -> int:
    name = attached.name.lower()
    return STANDARD_NAMES.index(name) if name in STANDARD_NAMES else len(STANDARD_NAMES)
