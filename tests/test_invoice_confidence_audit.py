"""Confidence that holds on layouts nobody tuned on: a field scored >= 0.9 is one the
reader may be trusted on without a look, so each path to such a score needs evidence that
does not depend on the layout (a specific label and a value of the right form, sums that
agree, a value printed twice). Each test here holds a path whose evidence was weaker."""

from __future__ import annotations

from conveyor.agents.invoice_parties import _tax_id
from conveyor.agents.invoice_rules import read_invoice
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import shared_sign
from conveyor.documents.layout import Cell
from conveyor.documents.text import extract_text
from tests.snippets import Draw, extraction, pdf

TRUSTED = 0.9


def _lines(first: str) -> str:
    return "\n".join(
        [
            "INVOICE",
            first,
            "50 High Street",
            "London SW1A 1AA",
            "Invoice No.: F-5053",
            "Date: 28 December 2025",
            "Bill To",
            "Rivoli Logistics Inc.",
            "58 High Street",
            "Description Qty Rate Amount",
            "Support hours 3 250.00 750.00",
            "Subtotal 750.00",
            "VAT 20% 150.00",
            "Total 900.00",
        ]
    )


def test_a_sender_line_that_holds_an_address_and_tax_id_is_no_sure_name() -> None:
    # A footer run into one line: the legal form is in it, but so is all the rest.
    _, fields = read_invoice(
        _lines("Albatros Solutions Inc. 50 High Street London SW1A 1AA VAT No. GB351501055")
    )
    assert fields["vendor.name"] < TRUSTED
    invoice, fields = read_invoice(_lines("Albatros Solutions Inc."))
    assert invoice.vendor.name == "Albatros Solutions Inc."
    assert fields["vendor.name"] >= TRUSTED


def test_a_first_line_with_a_phone_number_is_no_sure_name_by_its_block_alone() -> None:
    # No legal form: only the block's shape (two lines under it) says it is a name.
    _, fields = read_invoice(_lines("Call us 0800 123 456"))
    assert fields["vendor.name"] < TRUSTED
    _, fields = read_invoice(_lines("Albatros Solutions"))
    assert fields["vendor.name"] >= TRUSTED


def test_a_sign_several_currencies_print_is_sure_only_with_its_code() -> None:
    assert shared_sign("JPY", "Total ¥ 1,200")
    assert not shared_sign("JPY", "Total ¥ 1,200 (JPY)")
    assert not shared_sign("JPY", "Shinjuku-ku, Tokyo 163-1030\nJapan\nTotal ¥ 1,200")
    assert shared_sign("INR", "Total Rs. 1,200")
    assert not shared_sign("INR", "Total ₹ 1,200")
    assert not shared_sign("EUR", "Total € 1,200")


def _yen(code: str) -> Draw:
    return [
        (40, 40, "Invoice No. 2024-17"),
        (40, 54, "Date: 2024-03-04"),
        (40, 120, "Description"),
        (400, 120, f"Amount{code}"),
        (40, 134, "Consulting"),
        (400, 134, "¥ 1,000"),
        (40, 170, "Subtotal"),
        (400, 170, "¥ 1,000"),
        (40, 184, "Tax 10%"),
        (400, 184, "¥ 100"),
        (40, 198, "Total"),
        (400, 198, "¥ 1,100"),
    ]


def test_a_yen_sign_alone_is_no_sure_currency() -> None:
    # "¥" is printed for the yuan as for the yen.
    read = extraction(_yen(""))
    assert isinstance(read.data, dict)
    assert read.data["currency"] == "JPY"
    assert read.fields["currency"] < TRUSTED
    read = extraction(_yen(" (JPY)"))
    assert isinstance(read.data, dict)
    assert read.data["currency"] == "JPY"
    assert read.fields["currency"] >= TRUSTED


def _unlabelled_total(*sums: str) -> str:
    return "\n".join(
        [
            "Albatros Solutions Inc.",
            "50 High Street",
            "London SW1A 1AA",
            "Invoice No.: F-5053",
            "Date: 28 December 2025",
            "Bill To",
            "Rivoli Logistics Inc.",
            "Description Qty Rate Amount",
            "Support hours 3 250.00 750.00",
            *sums,
        ]
    )


def test_a_total_by_arithmetic_alone_needs_a_tax_and_to_stand_below() -> None:
    # Subtotal + tax = an amount under a label the rules do not know: three amounts agree.
    invoice, fields = read_invoice(
        _unlabelled_total("Subtotal 750.00", "VAT 20% 150.00", "Amount payable 900.00")
    )
    assert invoice.total == 900
    assert fields["total"] >= TRUSTED
    # No tax: the only amount equal to the subtotal is the one item's, above it. The
    # total it gives is right only if no tax went unread, and "no tax" as sure as that.
    invoice, fields = read_invoice(_unlabelled_total("Subtotal 750.00", "Amount payable 750.00"))
    assert invoice.total == 750
    assert fields["total"] < TRUSTED
    assert fields["tax"] < TRUSTED


def _cells(text: str) -> list[tuple[int, Cell]]:
    sheet = Sheet.of(extract_text(pdf([(40, 40, text)])))
    return [(0, cell) for cell in sheet.lines[0].cells]


def test_a_tax_id_has_a_countrys_letters_and_digits_on_a_line_that_names_it() -> None:
    # A tax id read with a party's name corroborates the name (>= 0.9): a town and
    # postcode in capitals is none, nor is a word that merely holds "ust" or "iva".
    assert _tax_id(_cells("LONDON SW1A 1AA VAT No. GB351501055")) == "GB351501055"
    assert _tax_id(_cells("USt-IdNr. DE 123456789")) == "DE 123456789"
    assert _tax_id(_cells("INDUSTRIESTRASSE 12 AUSTRIA")) is None
    assert _tax_id(_cells("PRIVATE CUSTOMER NO 12345678")) is None


def test_a_buyer_heading_beside_another_heading_gives_no_sure_name() -> None:
    # "Bill To Ship To": two blocks side by side, their lines run into one another.
    text = _lines("Albatros Solutions Inc.").replace(
        "Bill To\nRivoli Logistics Inc.\n58 High Street",
        "Bill To Ship To\nRivoli Logistics Inc. Rivoli Warehouse\n58 High Street 2 Dock Road",
    )
    invoice, fields = read_invoice(text)
    assert invoice.customer.name != "Ship To"
    assert fields["customer.name"] < TRUSTED
    invoice, fields = read_invoice(_lines("Albatros Solutions Inc."))
    assert invoice.customer.name == "Rivoli Logistics Inc."
    assert fields["customer.name"] >= TRUSTED


def test_a_buyer_line_alone_under_its_heading_is_no_sure_name() -> None:
    # A heading and one line: the layout reader holds such a name at 0.85 too, without an
    # address, a tax id or the name printed again.
    text = _lines("Albatros Solutions Inc.").replace("58 High Street\n", "")
    invoice, fields = read_invoice(text)
    assert invoice.customer.name == "Rivoli Logistics Inc."
    assert fields["customer.name"] < TRUSTED


def test_no_tax_is_no_sure_answer_when_a_tax_is_printed_and_left_unread() -> None:
    # The net equals the total, and a VAT line is printed all the same: the prices hold
    # the tax, and the net without it is printed nowhere. Which is the tax and the net
    # is a convention; neither reading is to be trusted without a look. (The seller is
    # printed: a document without one is no sure answer at all.)
    read = extraction(
        [
            (40, 20, "Harbour Consulting Ltd"),
            (40, 40, "INVOICE"),
            (40, 54, "Invoice No.: 2024-17"),
            (40, 68, "Invoice date: 2024-03-04"),
            (40, 120, "Description"),
            (400, 120, "Amount"),
            (40, 134, "Consulting"),
            (400, 134, "100.00 EUR"),
            (40, 170, "Subtotal"),
            (400, 170, "100.00 EUR"),
            (40, 184, "VAT 20%"),
            (400, 184, "16.67 EUR"),
            (40, 198, "Total"),
            (400, 198, "100.00 EUR"),
        ]
    )
    assert isinstance(read.data, dict)
    assert read.data["total"] == "100.00"
    assert read.fields["total"] >= TRUSTED
    assert read.fields["tax"] < TRUSTED
    assert read.fields["subtotal"] < TRUSTED


def test_a_page_number_on_the_titles_line_is_no_invoice_number() -> None:
    read = extraction(
        [
            (40, 40, "Acme Widgets GmbH", 14),
            (40, 58, "Hauptstr. 5, 10115 Berlin"),
            (40, 100, "INVOICE"),
            (400, 100, "Page 1 of 2"),
            (40, 114, "Invoice date: 2024-03-04"),
            (40, 220, "Description"),
            (460, 220, "Amount"),
            (40, 234, "Consulting"),
            (460, 234, "100.00 EUR"),
            (300, 298, "Total"),
            (460, 298, "100.00 EUR"),
        ]
    )
    assert isinstance(read.data, dict)
    assert read.data["number"] != "1"
    assert read.fields["number"] < TRUSTED


def test_the_buyers_vat_id_is_no_sellers() -> None:
    read = extraction(
        [
            (40, 40, "Acme Widgets GmbH", 14),
            (40, 58, "Hauptstr. 5, 10115 Berlin"),
            (40, 100, "INVOICE 2024-17"),
            (40, 114, "Invoice date: 2024-03-04"),
            (40, 150, "Bill to"),
            (40, 162, "Beta Corp Ltd"),
            (40, 174, "1 Main Road, London"),
            (40, 186, "VAT No. GB351501055"),
            (40, 220, "Description"),
            (460, 220, "Amount"),
            (40, 234, "Consulting"),
            (460, 234, "100.00 EUR"),
            (300, 270, "Subtotal"),
            (460, 270, "100.00 EUR"),
            (300, 284, "VAT 19%"),
            (460, 284, "19.00 EUR"),
            (300, 298, "Total"),
            (460, 298, "119.00 EUR"),
        ]
    )
    assert isinstance(read.data, dict)
    vendor = read.data["vendor"]
    assert isinstance(vendor, dict)
    assert vendor["tax_id"] != "GB351501055"


def _titled(title: str) -> Draw:
    return [
        (40, 40, "Acme Widgets GmbH", 14),
        (40, 58, "Hauptstr. 5, 10115 Berlin"),
        (40, 100, title),
        (40, 114, "Invoice date: 2024-03-04"),
        (40, 220, "Description"),
        (460, 220, "Amount"),
        (40, 234, "Consulting"),
        (460, 234, "100.00 EUR"),
        (300, 298, "Total"),
        (460, 298, "100.00 EUR"),
    ]


def test_a_year_or_a_digit_after_the_title_is_no_sure_number() -> None:
    # "Invoice for March 2024" names a month; "INVOICE COPY 2" a copy.
    for title in ("Invoice for March 2024", "INVOICE COPY 2", "INVOICE 2024"):
        assert extraction(_titled(title)).fields["number"] < TRUSTED, title
    read = extraction(_titled("INVOICE 2024-17"))
    assert isinstance(read.data, dict)
    assert read.data["number"] == "2024-17"
    assert read.fields["number"] >= TRUSTED
