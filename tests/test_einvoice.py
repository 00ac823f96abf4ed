"""E-invoices first: the EN 16931 XML a PDF carries, or an uploaded XML, read exactly, and
checked against the printed page; XML that is not an e-invoice fails its task clearly."""

from __future__ import annotations

import datetime
import io
from decimal import Decimal
from pathlib import Path

import pytest

from conveyor import App, TaskStatus
from conveyor.agents.documents import declare_document_agents
from conveyor.agents.einvoice import from_pdf
from conveyor.documents.sniff import XML, sniff
from conveyor.documents.submit import submit_files
from conveyor.documents.text import extract_text
from conveyor.einvoice import NotAnInvoice, invoice_xml, read_xml
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running

RSM = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
UDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"


def cii(number: str = "RE-2024-0042", total: str = "119.00") -> bytes:
    """A small Factur-X EN 16931 invoice: one line of 100.00 net, 19 % VAT, two payment
    terms (a cash discount's date, then the full amount's), tax also stated in USD."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="{RSM}" xmlns:ram="{RAM}" xmlns:udt="{UDT}">
  <rsm:ExchangedDocumentContext><ram:GuidelineSpecifiedDocumentContextParameter>
    <ram:ID>urn:cen.eu:en16931:2017</ram:ID>
  </ram:GuidelineSpecifiedDocumentContextParameter></rsm:ExchangedDocumentContext>
  <rsm:ExchangedDocument>
    <ram:ID>{number}</ram:ID><ram:TypeCode>380</ram:TypeCode>
    <ram:IssueDateTime><udt:DateTimeString format="102">20240305</udt:DateTimeString>
    </ram:IssueDateTime>
  </rsm:ExchangedDocument>
  <rsm:SupplyChainTradeTransaction>
    <ram:IncludedSupplyChainTradeLineItem>
      <ram:SpecifiedTradeProduct><ram:Name>Schrauben M4</ram:Name></ram:SpecifiedTradeProduct>
      <ram:SpecifiedLineTradeAgreement><ram:NetPriceProductTradePrice>
        <ram:ChargeAmount>0.25</ram:ChargeAmount></ram:NetPriceProductTradePrice>
      </ram:SpecifiedLineTradeAgreement>
      <ram:SpecifiedLineTradeDelivery>
        <ram:BilledQuantity unitCode="H87">400</ram:BilledQuantity>
      </ram:SpecifiedLineTradeDelivery>
      <ram:SpecifiedLineTradeSettlement><ram:SpecifiedTradeSettlementLineMonetarySummation>
        <ram:LineTotalAmount>100.00</ram:LineTotalAmount>
      </ram:SpecifiedTradeSettlementLineMonetarySummation></ram:SpecifiedLineTradeSettlement>
    </ram:IncludedSupplyChainTradeLineItem>
    <ram:ApplicableHeaderTradeAgreement>
      <ram:SellerTradeParty><ram:Name>Beispiel Werkzeug GmbH</ram:Name>
        <ram:PostalTradeAddress><ram:PostcodeCode>10115</ram:PostcodeCode>
          <ram:LineOne>Hauptstr. 1</ram:LineOne><ram:CityName>Berlin</ram:CityName>
          <ram:CountryID>DE</ram:CountryID></ram:PostalTradeAddress>
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="FC">27/123/45678</ram:ID>
        </ram:SpecifiedTaxRegistration>
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="VA">DE123456789</ram:ID>
        </ram:SpecifiedTaxRegistration>
      </ram:SellerTradeParty>
      <ram:BuyerTradeParty><ram:Name>Kunde AG</ram:Name></ram:BuyerTradeParty>
    </ram:ApplicableHeaderTradeAgreement>
    <ram:ApplicableHeaderTradeSettlement>
      <ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>
      <ram:SpecifiedTradePaymentTerms><ram:DueDateDateTime>
        <udt:DateTimeString format="102">20240315</udt:DateTimeString></ram:DueDateDateTime>
      </ram:SpecifiedTradePaymentTerms>
      <ram:SpecifiedTradePaymentTerms><ram:DueDateDateTime>
        <udt:DateTimeString format="102">20240404</udt:DateTimeString></ram:DueDateDateTime>
      </ram:SpecifiedTradePaymentTerms>
      <ram:SpecifiedTradeSettlementHeaderMonetarySummation>
        <ram:LineTotalAmount>100.00</ram:LineTotalAmount>
        <ram:TaxBasisTotalAmount>100.00</ram:TaxBasisTotalAmount>
        <ram:TaxTotalAmount currencyID="USD">20.60</ram:TaxTotalAmount>
        <ram:TaxTotalAmount currencyID="EUR">19.00</ram:TaxTotalAmount>
        <ram:GrandTotalAmount>{total}</ram:GrandTotalAmount>
        <ram:DuePayableAmount>{total}</ram:DuePayableAmount>
      </ram:SpecifiedTradeSettlementHeaderMonetarySummation>
    </ram:ApplicableHeaderTradeSettlement>
  </rsm:SupplyChainTradeTransaction>
</rsm:CrossIndustryInvoice>
""".encode()


ZUGFERD_1 = b"""<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryDocument
    xmlns:rsm="urn:ferd:CrossIndustryDocument:invoice:1p0"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:12"
    xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:15">
  <rsm:HeaderExchangedDocument><ram:ID>471102</ram:ID>
    <ram:IssueDateTime><udt:DateTimeString format="102">20130305</udt:DateTimeString>
    </ram:IssueDateTime></rsm:HeaderExchangedDocument>
  <rsm:SpecifiedSupplyChainTradeTransaction>
    <ram:ApplicableSupplyChainTradeAgreement>
      <ram:SellerTradeParty><ram:Name>Lieferant GmbH</ram:Name></ram:SellerTradeParty>
    </ram:ApplicableSupplyChainTradeAgreement>
    <ram:ApplicableSupplyChainTradeSettlement>
      <ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>
      <ram:SpecifiedTradeSettlementMonetarySummation>
        <ram:TaxBasisTotalAmount currencyID="EUR">198.00</ram:TaxBasisTotalAmount>
        <ram:TaxTotalAmount currencyID="EUR">37.62</ram:TaxTotalAmount>
        <ram:GrandTotalAmount currencyID="EUR">235.62</ram:GrandTotalAmount>
      </ram:SpecifiedTradeSettlementMonetarySummation>
    </ram:ApplicableSupplyChainTradeSettlement>
    <ram:IncludedSupplyChainTradeLineItem>
      <ram:SpecifiedSupplyChainTradeDelivery>
        <ram:BilledQuantity unitCode="C62">20.0000</ram:BilledQuantity>
      </ram:SpecifiedSupplyChainTradeDelivery>
      <ram:SpecifiedSupplyChainTradeSettlement><ram:SpecifiedTradeSettlementMonetarySummation>
        <ram:LineTotalAmount currencyID="EUR">198.00</ram:LineTotalAmount>
      </ram:SpecifiedTradeSettlementMonetarySummation></ram:SpecifiedSupplyChainTradeSettlement>
      <ram:SpecifiedTradeProduct>
        <ram:Name>Trennbl&#228;tter A4</ram:Name></ram:SpecifiedTradeProduct>
    </ram:IncludedSupplyChainTradeLineItem>
  </rsm:SpecifiedSupplyChainTradeTransaction>
</rsm:CrossIndustryDocument>
"""

UBL_CREDIT_NOTE = b"""<CreditNote xmlns="urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
  xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
  xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  <cbc:CustomizationID>urn:cen.eu:en16931:2017</cbc:CustomizationID>
  <cbc:ID>CN-7</cbc:ID><cbc:IssueDate>2024-06-01</cbc:IssueDate>
  <cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>
  <cbc:DocumentCurrencyCode>EUR</cbc:DocumentCurrencyCode>
  <cac:AccountingSupplierParty><cac:Party>
    <cac:PartyName><cbc:Name>Trading Name</cbc:Name></cac:PartyName>
    <cac:PostalAddress><cbc:StreetName>Kerkstraat 5</cbc:StreetName>
      <cbc:CityName>Gent</cbc:CityName><cbc:PostalZone>9000</cbc:PostalZone>
      <cac:Country><cbc:IdentificationCode>BE</cbc:IdentificationCode></cac:Country>
    </cac:PostalAddress>
    <cac:PartyTaxScheme><cbc:CompanyID>BE0123456789</cbc:CompanyID></cac:PartyTaxScheme>
    <cac:PartyLegalEntity><cbc:RegistrationName>Voorbeeld BV</cbc:RegistrationName>
    </cac:PartyLegalEntity></cac:Party></cac:AccountingSupplierParty>
  <cac:AccountingCustomerParty><cac:Party><cac:PartyLegalEntity>
    <cbc:RegistrationName>Klant NV</cbc:RegistrationName></cac:PartyLegalEntity>
  </cac:Party></cac:AccountingCustomerParty>
  <cac:PaymentMeans><cbc:PaymentMeansCode>30</cbc:PaymentMeansCode>
    <cbc:PaymentDueDate>2024-07-01</cbc:PaymentDueDate></cac:PaymentMeans>
  <cac:TaxTotal><cbc:TaxAmount currencyID="EUR">2.10</cbc:TaxAmount></cac:TaxTotal>
  <cac:LegalMonetaryTotal>
    <cbc:LineExtensionAmount currencyID="EUR">10.00</cbc:LineExtensionAmount>
    <cbc:TaxExclusiveAmount currencyID="EUR">10.00</cbc:TaxExclusiveAmount>
    <cbc:TaxInclusiveAmount currencyID="EUR">12.10</cbc:TaxInclusiveAmount>
    <cbc:PayableAmount currencyID="EUR">12.10</cbc:PayableAmount>
  </cac:LegalMonetaryTotal>
  <cac:CreditNoteLine><cbc:ID>1</cbc:ID>
    <cbc:CreditedQuantity unitCode="C62">2</cbc:CreditedQuantity>
    <cbc:LineExtensionAmount currencyID="EUR">10.00</cbc:LineExtensionAmount>
    <cac:Item><cbc:Name>Licentie</cbc:Name></cac:Item>
    <cac:Price><cbc:PriceAmount currencyID="EUR">5.00</cbc:PriceAmount></cac:Price>
  </cac:CreditNoteLine>
</CreditNote>
"""

NOT_AN_INVOICE = b'<?xml version="1.0"?><catalog><book id="1">Dune</book></catalog>'


def test_a_cii_invoice_is_read_term_by_term() -> None:
    einvoice = read_xml(cii())
    inv = einvoice.invoice
    assert (inv.number, inv.issue_date) == ("RE-2024-0042", datetime.date(2024, 3, 5))
    assert inv.due_date == datetime.date(2024, 4, 4), "the latest of the payment terms"
    assert inv.vendor.name == "Beispiel Werkzeug GmbH"
    assert inv.vendor.tax_id == "DE123456789", "the VAT id before the local tax number"
    assert inv.vendor.address == "Hauptstr. 1, 10115 Berlin, DE"
    assert inv.customer.name == "Kunde AG" and inv.currency == "EUR"
    assert (inv.subtotal, inv.tax, inv.total) == (Decimal("100.00"), Decimal("19.00"), Decimal(119))
    (line,) = inv.line_items
    assert (line.description, line.quantity, line.unit_price, line.amount) == (
        "Schrauben M4",
        Decimal(400),
        Decimal("0.25"),
        Decimal("100.00"),
    )
    assert einvoice.profile == "urn:cen.eu:en16931:2017" and einvoice.checks() == []
    assert read_xml(cii(total="120.00")).checks() == [
        "net 100.00 + tax 19.00 = 119.00, not the total 120.00"
    ]


def test_zugferd_1_and_a_ubl_credit_note_are_read_too() -> None:
    old = read_xml(ZUGFERD_1)
    assert old.syntax.startswith("CII 1.0")
    assert (old.invoice.number, old.invoice.total) == ("471102", Decimal("235.62"))
    assert old.invoice.line_items[0].description == "Trennblätter A4"
    assert old.invoice.line_items[0].quantity == 20
    credit = read_xml(UBL_CREDIT_NOTE)
    assert credit.describe().startswith("a credit note in UBL XML")
    assert credit.invoice.vendor.name == "Voorbeeld BV", "the legal name, not the trading name"
    assert credit.invoice.vendor.address == "Kerkstraat 5, 9000 Gent, BE"
    assert credit.invoice.due_date == datetime.date(2024, 7, 1)
    assert (credit.invoice.tax, credit.invoice.total) == (Decimal("2.10"), Decimal("12.10"))
    assert credit.invoice.line_items[0].quantity == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (NOT_AN_INVOICE, "its root element is catalog"),
        (b"<Invoice><ID>1</ID></Invoice>", "its root element is Invoice;"),  # no UBL namespace
        (b"<?xml version='1.0'?><unclosed>", "not well-formed XML"),
        (cii().replace(b">EUR<", b">euros<"), "currency"),
    ],
)
def test_xml_that_is_not_an_e_invoice_is_refused_saying_why(data: bytes, message: str) -> None:
    with pytest.raises(NotAnInvoice, match=message):
        read_xml(data)


def test_entities_are_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    xxe = cii().replace(
        b'<?xml version="1.0" encoding="UTF-8"?>',
        f'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY s SYSTEM "file://{secret}">]>'.encode(),
    )
    xxe = xxe.replace(b"RE-2024-0042", b"&s;")
    number = read_xml(xxe).invoice.number
    assert number is None or "TOP-SECRET" not in number


def test_xml_is_sniffed_with_or_without_its_prolog() -> None:
    assert sniff(cii()) == XML
    assert sniff(UBL_CREDIT_NOTE) == XML
    assert sniff(b"<rsm:CrossIndustryInvoice xmlns:rsm='x'>") == XML
    assert sniff(b"<html><body>x</body></html>") == "text/html"
    assert sniff(b"< not a tag") == "text/plain"


def e_invoice_pdf(printed_number: str, printed_total: str, xml: bytes) -> bytes:
    """A one-page invoice printed with reportlab, its CII attached as factur-x.xml (the
    way ZUGFeRD 2 and Factur-X writers do), with PDFium."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]
    from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

    page = io.BytesIO()
    drawing = canvas.Canvas(page)
    for y, line in enumerate(
        (
            "Beispiel Werkzeug GmbH",
            f"Rechnung Nr. {printed_number}",
            "Rechnungsdatum: 05.03.2024",
            "400 Schrauben M4 je 0,25 EUR: 100,00 EUR",
            f"Gesamtbetrag: {printed_total} EUR",
        )
    ):
        drawing.drawString(72, 760 - 20 * y, line)
    drawing.save()
    document = pdfium.PdfDocument(page.getvalue())
    document.new_attachment("factur-x.xml").set_data(xml)
    out = io.BytesIO()
    document.save(out)
    document.close()
    return out.getvalue()


def test_the_printed_page_confirms_the_xml_or_lowers_its_confidence(tmp_path: Path) -> None:
    agreeing = tmp_path / "agreeing.pdf"
    agreeing.write_bytes(e_invoice_pdf("RE-2024-0042", "119,00", cii()))
    assert invoice_xml(agreeing) is not None
    good = from_pdf(agreeing, extract_text(agreeing))
    assert good is not None and good.extractor == "e-invoice"
    assert good.checks == [] and good.confidence >= 0.9
    assert good.fields["total"] == good.fields["number"] == 0.99

    differing = tmp_path / "differing.pdf"
    differing.write_bytes(e_invoice_pdf("RE-2024-0041", "191,00", cii()))
    bad = from_pdf(differing, extract_text(differing))
    assert bad is not None and bad.data["number"] == "RE-2024-0042", "the XML is the data"
    assert "the printed page does not show the XML's number RE-2024-0042" in bad.checks
    assert "the printed page does not show the XML's total 119.00" in bad.checks
    assert bad.confidence < 0.9 and bad.fields["total"] < 0.9

    invalid = tmp_path / "invalid.pdf"
    invalid.write_bytes(e_invoice_pdf("RE-2024-0042", "119,00", cii().replace(b">EUR<", b">?<")))
    assert invoice_xml(invalid) is not None
    assert from_pdf(invalid, extract_text(invalid)) is None, "its page is read instead"


async def _finished(app: App, ids: list[int]) -> bool:
    done = {TaskStatus.COMPLETED, TaskStatus.FAILED}
    return all([(await app.get_task_async(i)).status in done for i in ids])


async def test_e_invoices_in_pdfs_and_on_their_own_through_a_worker(
    settings: Settings, tmp_path: Path
) -> None:
    """`conveyor submit x.pdf|x.xml --agent invoice`: the XML a PDF carries is the result,
    an uploaded e-invoice XML is read the same way, and an XML that is not one, or one
    sent to the contract agent, fails at once saying why."""
    files = {
        "einvoice.pdf": e_invoice_pdf("RE-2024-0042", "119,00", cii()),
        "credit.xml": UBL_CREDIT_NOTE,
        "catalog.xml": NOT_AN_INVOICE,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    app = App(settings=settings)
    declare_document_agents(app)
    try:
        submitted = {
            name: (await submit_files(app, [tmp_path / name], agent="invoice"))[0] for name in files
        }
        (classified,) = await submit_files(app, [tmp_path / "einvoice.pdf"], agent="document")
        (contract,) = await submit_files(app, [tmp_path / "credit.xml"], agent="contract")
        assert submitted["credit.xml"].document.media_type == XML
        ids = [s.task_id for s in submitted.values()] + [classified.task_id, contract.task_id]
        async with Running(Worker(app, concurrency=2)):
            await wait_for(lambda: _finished(app, ids), timeout=60, what="the e-invoices")
        pdf = await app.get_task_async(submitted["einvoice.pdf"].task_id)
        xml = await app.get_task_async(submitted["credit.xml"].task_id)
        refused = await app.get_task_async(submitted["catalog.xml"].task_id)
        document = await app.get_task_async(classified.task_id)
        wrong_agent = await app.get_task_async(contract.task_id)
    finally:
        await app.aclose()
    assert pdf.status == TaskStatus.COMPLETED, pdf.error
    assert pdf.result["extractor"] == "e-invoice" and pdf.result["confidence"] >= 0.9
    assert pdf.result["data"]["total"] == "119.00"
    assert pdf.result["data"]["line_items"][0]["quantity"] == "400"
    assert document.status == TaskStatus.COMPLETED and document.result["type"] == "invoice"
    assert xml.status == TaskStatus.COMPLETED, xml.error
    assert xml.result["data"]["number"] == "CN-7"
    assert "no printed page" in xml.result["notes"][0]
    assert refused.status == TaskStatus.FAILED and refused.attempts == 1
    assert refused.error is not None and "'catalog.xml' is not an e-invoice" in refused.error
    assert wrong_agent.status == TaskStatus.FAILED and wrong_agent.attempts == 1
    assert (
        wrong_agent.error is not None and "only an e-invoice is read from XML" in wrong_agent.error
    )


async def test_an_e_invoice_xml_is_accepted_over_http(settings: Settings) -> None:
    """POST /api/documents takes an e-invoice XML (sniffed, whatever it is called) and makes
    the task that reads it; a worker then returns the invoice."""
    import httpx

    from tests.web import serving

    app = App(settings=settings)
    declare_document_agents(app, names={"invoice": "invoice"})
    try:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
            response = await client.post(
                "/api/documents",
                data={"agent": "invoice"},
                files=[("files", ("upload.bin", cii(), "application/octet-stream"))],
            )
        assert response.status_code == 201, response.text
        (item,) = response.json()
        assert (item["document"]["media_type"], item["document"]["page_count"]) == (XML, 1)
        async with Running(Worker(app, concurrency=1)):
            await wait_for(lambda: _finished(app, [item["task"]["id"]]), what="the XML")
        task = await app.get_task_async(item["task"]["id"])
    finally:
        await app.aclose()
    assert task.status == TaskStatus.COMPLETED, task.error
    assert task.result["data"]["number"] == "RE-2024-0042"
    assert task.result["data"]["vendor"]["tax_id"] == "DE123456789"
