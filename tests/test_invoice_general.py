"""General rules taught by the failures of rounds 9-11 once they were opened, each stated
for any invoice and checked on a snippet drawn here."""

from __future__ import annotations

import datetime
from decimal import Decimal

from conveyor.agents.invoice_reader import read_invoice_layout
from conveyor.agents.values import NumberStyle, cell_amount, currencies_in, currency_of
from conveyor.documents.text import extract_text
from tests.snippets import Draw, extraction, invoice_data, party_name, pdf, text_invoice_data

COMMA = NumberStyle(",", ".")


def test_any_currency_sign_is_noise_to_its_amount_and_names_its_currency() -> None:
    assert cell_amount("154.600,00 ₺", COMMA) == Decimal("154600.00")
    assert cell_amount("₩ 12.000", COMMA) == Decimal("12000")
    assert currency_of("154.600,00 ₺") == "TRY"
    assert currency_of("1 200,00 ₽") == "RUB"
    assert currencies_in("Toplam 154.600,00 ₺") == {"TRY": 1}
    assert cell_amount("50¢", COMMA) is None  # the cent's sign is no currency's


def test_sums_with_a_sign_after_them_are_read() -> None:
    data = text_invoice_data(
        "Acme Teknoloji A.Ş.\n"
        "FATURA\n"
        "Fatura No : FTR-17\n"
        "Tarih : 17.04.2026\n"
        "Aciklama Miktar Birim Fiyat Toplam\n"
        "Web Uygulama 1 1.000,00 1.000,00\n"
        "Ara Toplam 1.000,00 ₺\n"
        "KDV (%20) 200,00 ₺\n"
        "GENEL TOPLAM 1.200,00 ₺\n"
    )
    assert data["currency"] == "TRY"
    assert data["total"] == "1200.00"
    assert data["subtotal"] == "1000.00"
    assert data["tax"] == "200.00"


def test_sum_labels_of_more_forms() -> None:
    from conveyor.agents.invoice_labels import sum_label

    # A Portuguese tax's label with the article of its gender ("da COFINS") or none.
    assert sum_label("VALOR DA COFINS") == ("tax", 15)
    assert sum_label("VALOR TOTAL IPI") == ("tax", 15)
    # Brazil's legal estimate of the taxes inside the prices is no sum of the invoice.
    assert sum_label("VALOR TOTAL TRIB.") == ("-sum", 17)
    assert sum_label("Valor aproximado dos tributos") == ("-sum", 29)
    assert sum_label("Valor do Documento") == ("gross", 18)
    # Polish "kwota brutto", the gross amount.
    assert sum_label("Kwota brutto:") == ("gross", 12)


def test_a_gross_amount_labelled_kwota_brutto_is_the_total() -> None:
    data = text_invoice_data(
        "FAKTURA VAT FV-17\nKwota brutto: 1234,56 PLN\nTermin platnosci: 2026-08-14\n"
    )
    assert data["total"] == "1234.56"
    assert data["currency"] == "PLN"


def test_a_table_s_column_labels_name_no_buyer() -> None:
    data = invoice_data(
        [
            (42, 60, "Acme Inc.", 18),
            (470, 60, "Invoice"),
            (42, 78, "123 Market Street"),
            (420, 78, "#INV-2048 - 14 Jun 2026"),
            (42, 92, "San Francisco, CA 94103"),
            (50, 137, "DESCRIPTION"),
            (330, 137, "QTY"),
            (400, 137, "UNIT"),
            (480, 137, "AMOUNT"),
            (50, 166, "Consulting"),
            (330, 166, "12"),
            (400, 166, "$120"),
            (480, 166, "$1,440"),
            (50, 201, "Integration"),
            (330, 201, "1"),
            (400, 201, "$800"),
            (480, 201, "$800"),
            (422, 280, "Total: $2,240.00"),
        ]
    )
    assert party_name(data, "customer") is None


def test_an_amount_with_an_explicit_plus_sign_is_read() -> None:
    dot = NumberStyle(".", ",")
    assert cell_amount("+$196767.95", dot) == Decimal("196767.95")
    assert cell_amount("+ 12.50 EUR", dot) == Decimal("12.50")
    assert cell_amount("+$1602253", dot) == Decimal("1602253")
    # A telephone number is no amount.
    assert cell_amount("+33612345678", dot) is None
    assert cell_amount("+49 30 1234567", dot) is None


# A page's head, printed on every page: the seller, the number and date, the balance.
LETTERHEAD: Draw = [
    (28, 30, "Acme Widgets Ltd", 14),
    (28, 47, "Invoice #HT91"),
    (28, 64, "Issue Date: 12/6/2023"),
    (28, 81, "Balance Due: $390.00"),
    (28, 120, "Bill To: Jane Roe"),
    (28, 197, "#"),
    (48, 197, "Product"),
    (170, 197, "Unit price"),
    (230, 197, "Quantity"),
    (300, 197, "Total"),
]


def _row(y: float, position: str, name: str, price: str) -> Draw:
    return [
        (28, y, position),
        (48, y, name),
        (170, y, f"${price}"),
        (230, y, "1"),
        (300, y, f"${price}"),
    ]


def test_an_item_table_goes_on_under_its_header_repeated_below_the_next_page_s_head() -> None:
    first = [
        *LETTERHEAD,
        *_row(216, "0", "Chair", "50.00"),
        *_row(235, "1", "Table", "100.00"),
        *_row(254, "2", "Lamp", "20.00"),
    ]
    second = [
        *LETTERHEAD,
        *_row(216, "3", "Shelf", "220.00"),
        (170, 260, "SUBTOTAL"),
        (300, 260, "$390.00"),
        (170, 274, "GRAND TOTAL"),
        (300, 274, "$390.00"),
    ]
    data = extraction(first, second).data
    assert isinstance(data, dict)
    items = data["line_items"]
    assert isinstance(items, list)
    assert [item["description"] for item in items] == ["Chair", "Table", "Lamp", "Shelf"]


def test_items_printed_as_labelled_values_on_one_line_each() -> None:
    data = invoice_data(
        [
            (100, 31, "Invoice No: INV-77"),
            (100, 51, "Date: 2024-12-11"),
            (100, 71, "Billing To: John Doe"),
            (100, 91, "Item: Widget A Qty: 2 Price: $20.00"),
            (100, 111, "Item: Widget B Qty: 1 Price: $10.00"),
            (100, 131, "Total: $50.00"),
        ]
    )
    items = data["line_items"]
    assert isinstance(items, list)
    assert [(i["description"], i["quantity"], i["unit_price"]) for i in items] == [
        ("Widget A", "2", "20.00"),
        ("Widget B", "1", "10.00"),
    ]


def test_a_firm_under_its_contact_person_in_the_address_window_is_the_buyer() -> None:
    data = invoice_data(
        [
            (50, 127, "Dr. Michael Hoffmann · Friedrichstraße 123 · 10117 Berlin", 7),
            (355, 140, "TechVision Consulting"),
            (50, 159, "Dr. Petra Schmidt"),
            (355, 159, "info@techvision-consulting.de"),
            (50, 176, "MedTech Solutions AG"),
            (355, 176, "Rechnungs-Nr.: RE-2025-042"),
            (50, 192, "Potsdamer Platz 1"),
            (355, 192, "Rechnungsdatum: 22.01.25"),
            (50, 208, "10785 Berlin"),
            (50, 291, "Rechnung", 14),
            (50, 340, "Leistung"),
            (450, 340, "Betrag"),
            (50, 354, "Beratung"),
            (450, 354, "100,00 €"),
            (50, 390, "Summe netto"),
            (450, 390, "100,00 €"),
            (50, 404, "USt. 19 %"),
            (450, 404, "19,00 €"),
            (50, 418, "Gesamtbetrag"),
            (450, 418, "119,00 €"),
        ]
    )
    assert party_name(data, "customer") == "MedTech Solutions AG"


def test_a_date_with_a_two_digit_year_may_end_its_sentence() -> None:
    data = text_invoice_data(
        "ACME GmbH\nRechnung\nRechnungs-Nr.: RE-2025-042\nRechnungsdatum: 22.01.25\n"
        "Leistung Betrag\nBeratung 100,00\nGesamtbetrag 100,00 EUR\n"
        "Zahlbar ohne Abzug bis zum 21.02.25.\n"
    )
    assert data["due_date"] == "2025-02-21"


def test_a_due_date_printed_after_another_field_in_the_same_cell() -> None:
    # The layout reader's reading (the line reader, which the whole reader prefers on a
    # page this small, reads no dates in cells).
    invoice, _ = read_invoice_layout(
        extract_text(
            pdf(
                [
                    (40, 46, "Lieferant GmbH", 12),
                    (300, 58, "Invoice"),
                    (300, 79, "Invoice number: 6063"),
                    (300, 88, "Invoice date: 01.09.2026"),
                    (40, 148, "Bill to:"),
                    (40, 160, "Musterkunde GmbH"),
                    (40, 247, "Service date: 01.09.2026 - Due date16.09.2026"),
                    (40, 274, "Description"),
                    (450, 274, "Net"),
                    (40, 288, "Screws"),
                    (450, 288, "51,50"),
                    (300, 320, "Total net"),
                    (450, 320, "51,50 €"),
                    (300, 334, "VAT 19 %"),
                    (450, 334, "9,79 €"),
                    (300, 348, "Total gross"),
                    (450, 348, "61,29 €"),
                ]
            )
        )
    )
    assert invoice.due_date == datetime.date(2026, 9, 16)
