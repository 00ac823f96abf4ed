"""Rules taught by layouts the reader had not been tuned on, each stated for any invoice
and checked on a snippet drawn here: currency names in any case, legal forms of more
countries, labels and headings that are no names, headings in two languages, due dates
in a sentence."""

from __future__ import annotations

import datetime
import io
from decimal import Decimal

from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

from conveyor.agents.invoice_columns import column_label
from conveyor.agents.invoice_labels import field_label
from conveyor.agents.invoice_marks import label_row, not_a_name
from conveyor.agents.invoice_rules import read_invoice
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.legal_forms import name_forms
from conveyor.agents.offline import extract_offline
from conveyor.agents.values import NumberStyle, cell_amount, currency_word, dates_in
from conveyor.documents.text import extract_text
from tests.snippets import Draw, extraction, invoice_data, party_name, pdf

COMMA = NumberStyle(",", ".")


def test_a_currency_name_is_read_in_any_case() -> None:
    assert currency_word("Euro") == "EUR"
    assert currency_word("EURO") == "EUR"
    assert currency_word("euro") == "EUR"
    assert currency_word("Artikel") is None
    assert cell_amount("152,00 Euro", COMMA) == Decimal("152.00")
    assert cell_amount("Euro 152,00", COMMA) == Decimal("152.00")
    assert cell_amount("EURO 5,00", COMMA) == Decimal("5.00")


def test_an_amount_after_its_currency_name_names_the_currency() -> None:
    data = invoice_data(
        [
            (40, 40, "Rechnung Nr. 2024-17"),
            (40, 54, "Datum: 04.03.2024"),
            (40, 120, "Leistung"),
            (400, 120, "Betrag"),
            (40, 134, "Beratung"),
            (400, 134, "Euro 100,00"),
            (40, 170, "Summe netto"),
            (400, 170, "Euro 100,00"),
            (40, 184, "MwSt. 19 %"),
            (400, 184, "Euro 19,00"),
            (40, 198, "Gesamtbetrag"),
            (400, 198, "Euro 119,00"),
        ]
    )
    assert data["currency"] == "EUR"
    assert data["total"] == "119.00"


def test_legal_forms_of_more_countries_end_a_name() -> None:
    for name in (
        "Nome do Remetente Ltda",
        "M. Meier Handwerk GbR",
        "Stavby Novák s.r.o.",
        "Nordic Shipping ASA",
        "Construtora Lda.",
    ):
        assert name_forms(name), name
    assert not name_forms("Ltda")  # a form alone ends no name


def test_a_letterhead_with_a_portuguese_legal_form_is_the_seller() -> None:
    data = invoice_data(
        [
            (400, 40, "NOTA FISCAL", 14),
            (40, 80, "Nome do Remetente Ltda", 11),
            (40, 96, "Rua do Remetente, 123"),
            (40, 108, "12345-678 Sao Paulo"),
            (400, 80, "N. 1"),
            (400, 92, "Emissao: 14/01/2015"),
            (40, 200, "Descricao"),
            (400, 200, "Valor"),
            (40, 214, "Produto"),
            (400, 214, "76,08"),
            (40, 250, "Valor total"),
            (400, 250, "R$ 76,08"),
        ]
    )
    assert party_name(data, "vendor") == "Nome do Remetente Ltda"


SUMS: list[tuple[float, float, str]] = [
    (40, 400, "Description"),
    (400, 400, "Amount"),
    (40, 414, "Repair work"),
    (400, 414, "100.00"),
    (40, 450, "Net total"),
    (400, 450, "100.00"),
    (40, 464, "VAT 20%"),
    (400, 464, "20.00"),
    (40, 478, "Total"),
    (400, 478, "120.00"),
]


def test_a_heading_phrase_names_its_party_and_a_company_name_label_its_name() -> None:
    data = invoice_data(
        [
            (40, 30, "Leere Felder werden nicht gezeigt."),
            (40, 60, "Zusammenfassung", 16),
            (40, 100, "Angaben zum Käufer"),
            (40, 120, "Referenz:"),
            (130, 120, "4471-22"),
            (40, 134, "Name:"),
            (130, 134, "Hafenbäckerei Wendt"),
            (40, 148, "Straße:"),
            (130, 148, "Kaiweg 5"),
            (40, 190, "Informationen zum Verkäufer"),
            (40, 210, "Firmenname:"),
            (130, 210, "Tischlerei Nordlicht"),
            (40, 224, "Straße:"),
            (130, 224, "Mühlenweg 12"),
            (40, 260, "Rechnungsnummer:"),
            (130, 260, "RE-3318"),
            (40, 274, "Rechnungsdatum:"),
            (130, 274, "04.03.2024"),
            *SUMS,
        ]
    )
    assert party_name(data, "customer") == "Hafenbäckerei Wendt"
    assert party_name(data, "vendor") == "Tischlerei Nordlicht"


def test_a_heading_in_two_languages_heads_one_block() -> None:
    data = invoice_data(
        [
            (40, 40, "PAYMENT NOTICE · AVIS DE PAIEMENT", 12),
            (40, 70, "School Meals 2024/2025", 14),
            (40, 110, "AUTHORITY · CRÉANCIER"),
            (300, 110, "RECIPIENT · DESTINATAIRE"),
            (40, 126, "Town of Westbrook"),
            (300, 126, "Anna Lindqvist"),
            (40, 140, "Finance Office"),
            (300, 140, "7 Elm Street"),
            (300, 154, "12345 Westbrook"),
            (40, 200, "Invoice No: 88-1"),
            (40, 214, "Date: 2024-09-01"),
            *SUMS,
        ]
    )
    assert party_name(data, "vendor") == "Town of Westbrook"
    assert party_name(data, "customer") == "Anna Lindqvist"


def test_a_name_that_begins_with_the_word_name_is_a_name() -> None:
    data = invoice_data(
        [
            (40, 40, "Invoice No: 55"),
            (40, 54, "Date: 2024-03-04"),
            (40, 100, "BUYER / CLIENTE"),
            (40, 112, "NAME / FIRMA", 6),
            (40, 122, "Name Brand Outlet"),
            (40, 134, "ADDRESS", 6),
            (40, 144, "9 Elm Street"),
            *SUMS,
        ]
    )
    assert party_name(data, "customer") == "Name Brand Outlet"


def test_a_watermark_set_at_a_slant_is_no_text_of_the_invoice() -> None:
    out = io.BytesIO()
    page = canvas.Canvas(out, pagesize=(595, 842))
    page.setFont("Helvetica", 9)
    for x, y, text in [
        (40, 120, "Atelier Brunn"),
        (40, 132, "Lindenweg 4"),
        (40, 144, "80331 Munich"),
        (40, 200, "Invoice No: 2024-71"),
        (40, 214, "Date: 2024-03-04"),
        *SUMS,
    ]:
        page.drawString(x, 842 - y, text)
    page.saveState()
    page.translate(260, 842 - 160)
    page.rotate(45)
    page.setFont("Helvetica-Bold", 60)
    page.drawString(0, 0, "SPECIMEN")
    page.restoreState()
    page.showPage()
    page.save()
    data = extract_offline(extract_text(out.getvalue()), "invoice").data
    assert isinstance(data, dict)
    assert party_name(data, "vendor") == "Atelier Brunn"


def test_marks_sentences_and_rows_of_column_labels_are_no_names() -> None:
    assert not_a_name("Muster")
    assert not_a_name("SPECIMEN")
    assert not_a_name("Empty fields are not shown here!")
    assert not_a_name("Please pay within two weeks.")
    assert not not_a_name("Acme Trading Co.")
    assert not not_a_name("Dr. A. Arzt")
    row = pdf([(40, 100, "TIPO DOC"), (200, 100, "FOLIO REF"), (360, 100, "FECHA REF")])
    lines = Sheet.of(extract_text(row)).lines
    assert label_row(lines[0].cells)
    named = pdf([(40, 100, "ACME SPA"), (200, 100, "RUT 76.269.769-6"), (360, 100, "FOLIO")])
    assert not label_row(Sheet.of(extract_text(named)).lines[0].cells)


def test_a_letter_s_sender_is_whole_on_its_line_and_a_salutation_opens_the_buyer() -> None:
    data = invoice_data(
        [
            (270, 60, "Sample", 18),
            (70, 86, "Dr. B. Keller"),
            (70, 98, "Zahnärztin für Kinder"),
            (70, 110, "Seeweg 2"),
            (70, 122, "12345 Seedorf"),
            (70, 134, "Frau"),
            (70, 146, "C. Kundin"),
            (70, 158, "Hauptweg 1"),
            (70, 170, "12345 Seedorf"),
            (370, 190, "Rechnungsdatum: 04.03.2024"),
            (370, 202, "Rechnungs-Nr.: 881"),
            (70, 240, "Leistung"),
            (400, 240, "Betrag"),
            (70, 254, "Kontrolle"),
            (400, 254, "40,00 €"),
            (70, 290, "Rechnungsbetrag"),
            (400, 290, "40,00 €"),
        ]
    )
    assert party_name(data, "vendor") == "Dr. B. Keller"
    assert party_name(data, "customer") == "C. Kundin"


def _with_sentence(*lines: str) -> Draw:
    return [
        (40, 40, "Facture N° F-2024-19"),
        (40, 54, "Date : 04/03/2024"),
        (40, 100, "Description"),
        (400, 100, "Montant"),
        (40, 114, "Entretien"),
        (400, 114, "100,00"),
        (40, 150, "Total TTC"),
        (400, 150, "100,00 €"),
        *[(40, 190 + 12 * k, text) for k, text in enumerate(lines)],
    ]


def test_a_due_date_asked_for_in_a_sentence() -> None:
    german = _with_sentence(
        "Bitte überweisen Sie den Betrag unter Angabe der Rechnungsnummer bis",
        "zum 14.11.2024 auf das unten angegebene Konto.",
    )
    assert invoice_data(german)["due_date"] == "2024-11-14"
    french = _with_sentence("Montant à régler par virement avant le 02/04/2024, merci.")
    assert invoice_data(french)["due_date"] == "2024-04-02"
    italian = _with_sentence("Importo da versare entro il 15/04/2024 sul conto indicato.")
    assert invoice_data(italian)["due_date"] == "2024-04-15"
    # Terms in days, with a discount's date: the terms worked out, no due date stated.
    terms = _with_sentence("Zahlbar innerhalb 30 Tagen netto bis 04.04.2024, 2 % Skonto bis 14.03.")
    assert invoice_data(terms)["due_date"] is None


def test_an_abbreviated_due_date_label() -> None:
    data = invoice_data(
        [
            (40, 40, "FACTURA ELECTRONICA N° 4117"),
            (40, 60, "Fecha emisión"),
            (130, 60, ": 01-05-2024"),
            (40, 72, "Fecha Venc."),
            (130, 72, ": 31-05-2024"),
            (40, 120, "Descripción"),
            (400, 120, "Total"),
            (40, 134, "Servicio"),
            (400, 134, "$10.000"),
            (40, 170, "TOTAL"),
            (400, 170, "$10.000"),
        ]
    )
    assert data["due_date"] == "2024-05-31"


def test_a_heading_s_plural_ending_and_a_colon_printed_with_the_value() -> None:
    data = invoice_data(
        [
            (250, 30, "ANDES SOFTWARE SPA"),
            (420, 30, "FACTURA N° 88"),
            (50, 130, "Señor(es)"),
            (130, 130, ": Ferretería Los Robles"),
            (330, 130, "Fecha emisión"),
            (460, 130, ": 01-05-2024"),
            (50, 142, "Dirección"),
            (130, 142, ": Calle Sur 12"),
            (50, 200, "Descripción"),
            (400, 200, "Total"),
            (50, 214, "Servicio"),
            (400, 214, "$10.000"),
            (350, 250, "TOTAL"),
            (400, 250, "$10.000"),
        ]
    )
    assert party_name(data, "customer") == "Ferretería Los Robles"


def test_a_heading_with_the_party_s_tax_id_beside_it_heads_its_block() -> None:
    data = invoice_data(
        [
            (40, 30, "Loja Azul Ltda"),
            (40, 42, "CNPJ: 10.845.180/0001-66"),
            (40, 54, "Rua das Flores, 85"),
            (40, 100, "DESCRIÇÃO"),
            (200, 100, "TOTAL"),
            (40, 112, "Caneta"),
            (200, 112, "10,00"),
            (40, 140, "VALOR TOTAL R$"),
            (200, 140, "10,00"),
            (40, 180, "CONSUMIDOR CNPJ: 18.191.228/0001-71"),
            (80, 192, "Maria Souza"),
            (40, 204, "Rua Tijucas, 99, Centro"),
        ]
    )
    assert party_name(data, "customer") == "Maria Souza"


def _positions(second_amount: str) -> Draw:
    return [
        (40, 30, "Invoice number:"),
        (150, 30, "R-77"),
        (40, 44, "Invoice date:"),
        (150, 44, "04.03.2024"),
        (40, 90, "1"),
        (40, 104, "Quantity"),
        (260, 104, "2"),
        (40, 118, "Line net amount"),
        (260, 118, "300,00"),
        (40, 132, "Item name:"),
        (150, 132, "Window frames"),
        (40, 170, "2"),
        (40, 184, "Line net amount"),
        (260, 184, second_amount),
        (40, 198, "Item name:"),
        (150, 198, "Fitting and sealing"),
        (40, 240, "Net total"),
        (400, 240, "420,00"),
        (40, 254, "VAT 19 %"),
        (400, 254, "79,80"),
        (40, 268, "Total"),
        (400, 268, "499,80"),
    ]


def test_items_printed_as_blocks_of_labelled_values_that_make_the_net() -> None:
    items = invoice_data(_positions("120,00"))["line_items"]
    assert items == [
        {"description": "Window frames", "quantity": "2", "unit_price": None, "amount": "300.00"},
        {
            "description": "Fitting and sealing",
            "quantity": None,
            "unit_price": None,
            "amount": "120.00",
        },
    ]
    # Amounts that make none of the printed sums are not the items.
    assert invoice_data(_positions("110,00"))["line_items"] == []


def test_a_whole_amount_in_parentheses_is_negative_and_taxed_items_make_the_total() -> None:
    assert cell_amount("($100)", NumberStyle(".", ",")) == Decimal("-100")
    assert cell_amount("(€ 40)", NumberStyle(".", ",")) == Decimal("-40")
    assert cell_amount("(3)", NumberStyle(".", ",")) is None  # a note's mark, no amount
    data = invoice_data(
        [
            (60, 50, "INVOICE", 24),
            (60, 90, "Invoice No: 2023-9"),
            (60, 104, "Date: 1 September 2023"),
            (70, 200, "Description"),
            (300, 200, "Price"),
            (370, 200, "Quantity"),
            (450, 200, "Tax"),
            (515, 200, "Total"),
            (70, 220, "Design work"),
            (300, 220, "$1,000"),
            (515, 220, "$1,000"),
            (70, 240, "Hardware"),
            (300, 240, "$200"),
            (380, 240, "2"),
            (440, 240, "10%"),
            (515, 240, "$440"),
            (70, 260, "Voucher"),
            (300, 260, "($100)"),
            (515, 260, "($100)"),
            (430, 300, "TOTAL"),
            (500, 300, "$1,340"),
        ]
    )
    amounts = [item["amount"] for item in data["line_items"]]  # type: ignore[attr-defined]
    assert amounts == ["1000", "440", "-100"]
    assert data["total"] == "1340"
    assert data["subtotal"] is None  # the items carry their tax: no net is printed


def test_a_word_broken_at_a_description_s_line_end_is_joined_again() -> None:
    data = invoice_data(
        [
            (40, 40, "Rechnung Nr. 1425"),
            (40, 54, "Rechnungsdatum: 24.10.2024"),
            (40, 100, "Leistungsbezeichnung"),
            (300, 100, "Anzahl"),
            (450, 100, "Betrag"),
            # Each description drawn before its numbers, as a text box of its own.
            (40, 114, "Symptombezogene Unter\u00ad"),
            (40, 126, "suchung"),
            (300, 114, "1"),
            (450, 114, "10,72 €"),
            (40, 138, "Beratung, auch"),
            (40, 150, "telefonisch"),
            (300, 138, "1"),
            (450, 138, "5,36 €"),
            (40, 180, "Rechnungsbetrag"),
            (450, 180, "16,08 €"),
        ]
    )
    names = [item["description"] for item in data["line_items"]]  # type: ignore[attr-defined]
    assert names == ["Symptombezogene Untersuchung", "Beratung, auch telefonisch"]


def _sums(net: str, tax: str, total: str) -> Draw:
    return [
        (40, 40, "Invoice No: 7781"),
        (40, 54, "Date: 2024-03-04"),
        (40, 200, "Net amount"),
        (400, 200, net),
        (40, 214, "VAT"),
        (400, 214, tax),
        (40, 228, "Total"),
        (400, 228, total),
    ]


def test_sums_that_add_up_with_no_possible_tax_are_no_agreement() -> None:
    plain = extraction(_sums("100.00", "19.00", "119.00")).fields
    credit = extraction(_sums("-100.00", "-19.00", "-119.00")).fields  # both negative
    chance = extraction(_sums("400.00", "-190.00", "210.00")).fields
    assert credit["total"] == plain["total"] and credit["tax"] == plain["tax"]
    assert chance["total"] < plain["total"] and chance["tax"] < plain["tax"]


def test_dates_with_spaces_around_their_separators() -> None:
    assert [t.date for t in dates_in("Date: 19 / 5 / 2024")] == [datetime.date(2024, 5, 19)]
    assert [t.date for t in dates_in("Datum vystavení: 19. 5. 2024")] == [
        datetime.date(2024, 5, 19)
    ]


def test_the_line_reader_takes_no_label_for_a_name_and_no_bare_dollar_for_sure() -> None:
    text = "\n".join(
        [
            "Ridgeway Supplies",
            "INVOICE",
            "Client Name",
            "12 Harbour Road",
            "Invoice No: 4411",
            "Date: 2024-05-19",
            "Description Qty Unit price Amount",
            "Paper 2 $5.00 $10.00",
            "Total $10.00",
        ]
    )
    invoice, fields = read_invoice(text)
    assert invoice.customer.name != "Name"
    assert fields["customer.name"] < 0.9 or invoice.customer.name is None
    assert invoice.currency == "USD" and fields["currency"] < 0.9


def test_a_sum_s_label_in_a_row_of_labels_over_their_values() -> None:
    data = invoice_data(
        [
            (40, 40, "AVIS DE PAIEMENT · AVVISO DI PAGAMENTO"),
            (40, 70, "Cantine scolaire 2024/2025", 14),
            (40, 120, "Montant · Importo"),
            (200, 120, "avant le · entro il"),
            (40, 134, "86,50 Euro", 14),
            (200, 134, "15/11/2024"),
        ]
    )
    assert data["total"] == "86.50"
    assert data["currency"] == "EUR"


def test_brazil_s_electronic_invoice_names_number_its_document() -> None:
    assert field_label("NFC-e nº 1629 Série 1") == ("number", len("NFC-e nº"))
    assert field_label("Nota Fiscal Nº 12") == ("number", len("Nota Fiscal Nº"))
    assert field_label("NF-e N°. 1")[0] == "number"  # type: ignore[index]


def _boxes(icms: str, st: str, products: str, note: str) -> Draw:
    """A form's row of boxes: each label at its box's left, its value flush right."""
    return [
        (40, 40, "Loja Azul Ltda", 11),
        (400, 40, "NF-e Nº 77"),
        (400, 52, "Emissão: 14/01/2025"),
        (25, 300, "BASE DE CÁLCULO DO ICMS", 5),
        (125, 300, "VALOR DO ICMS", 5),
        (240, 300, "VALOR DO ICMS ST", 5),
        (355, 300, "VALOR TOTAL DOS PRODUTOS", 5),
        (120, 312, "50,00", "right"),
        (235, 312, icms, "right"),
        (350, 312, st, "right"),
        (470, 312, products, "right"),
        (25, 330, "VALOR DO FRETE", 5),
        (125, 330, "DESCONTO", 5),
        (240, 330, "VALOR DO IPI", 5),
        (355, 330, "VALOR TOTAL DA NOTA", 5),
        (120, 342, "0,00", "right"),
        (235, 342, "0,00", "right"),
        (350, 342, "0,00", "right"),
        (470, 342, note, "right"),
    ]


def test_a_row_of_boxes_gives_each_label_the_value_in_its_box() -> None:
    on_top = invoice_data(_boxes("0,00", "0,59", "76,08", "76,67"))
    assert (on_top["subtotal"], on_top["tax"], on_top["total"]) == ("76.08", "0.59", "76.67")
    # A tax printed and nothing added: the taxes are inside the prices, no net is printed.
    inside = invoice_data(_boxes("9,00", "0,00", "76,08", "76,08"))
    assert (inside["subtotal"], inside["tax"], inside["total"]) == (None, None, "76.08")


def test_a_title_set_large_across_the_page_from_the_letterhead_carries_the_number() -> None:
    data = invoice_data(
        [
            (40, 50, "Nordwerk Metall GmbH", 12),
            (380, 50, "Rechnung RE-4471", 16),
            (40, 66, "Hafenweg 3"),
            (40, 78, "20457 Hamburg"),
            (380, 100, "Datum: 04.03.2024"),
            (40, 200, "Beschreibung"),
            (450, 200, "Betrag"),
            (40, 214, "Fräsarbeiten"),
            (450, 214, "100,00"),
            (40, 250, "Nettobetrag"),
            (450, 250, "100,00"),
            (40, 264, "MwSt. 19 %"),
            (450, 264, "19,00"),
            (40, 278, "Gesamtbetrag"),
            (450, 278, "119,00 EUR"),
        ]
    )
    assert data["number"] == "RE-4471"


def test_a_row_of_the_invoice_s_own_labels_is_no_item_table_header() -> None:
    data = invoice_data(
        [
            (40, 37, "Costa Azul S.L.", 12),
            (40, 115, "FACTURA", 16),
            (210, 141, "Nº Factura"),
            (315, 141, "Nº cliente"),
            (420, 141, "Fecha"),
            (525, 141, "Fecha de vencimiento"),
            (40, 153, "Bodegas Norte S.A."),
            (210, 153, "F-1239"),
            (315, 153, "C-8234"),
            (420, 153, "9 de febrero de 2025"),
            (525, 153, "23 de febrero de 2025"),
            (40, 251, "Concepto"),
            (500, 251, "Total"),
            (40, 269, "Mantenimiento"),
            (500, 269, "300,00 €"),
            (40, 309, "Importe total"),
            (500, 309, "300,00 €"),
        ]
    )
    assert data["issue_date"] == "2025-02-09"
    assert data["due_date"] == "2025-02-23"


def test_a_date_label_beside_other_labels_over_their_dates() -> None:
    assert field_label("Date de facturation") == ("issue", len("Date de facturation"))
    data = invoice_data(
        [
            (40, 33, "Facture", 16),
            (210, 141, "Facture N°"),
            (315, 141, "Réf. client"),
            (420, 141, "Date de facturation"),
            (525, 141, "À payer avant le"),
            (40, 153, "Atelier Lune SAS"),
            (210, 153, "2021-335"),
            (315, 153, "C-9922"),
            (420, 153, "17 juin 2026"),
            (525, 153, "1 juillet 2026"),
            (40, 251, "Désignation"),
            (491, 251, "Montant"),
            (40, 269, "Création du site"),
            (491, 269, "300,00 EUR"),
            (415, 306, "Total TTC :"),
            (491, 306, "300,00 EUR"),
        ]
    )
    assert data["issue_date"] == "2026-06-17"


def test_a_date_s_label_that_begins_with_the_document_s_word_is_no_title() -> None:
    data = invoice_data(
        [
            (40, 33, "Invoice", 16),
            (380, 71, "Number:"),
            (480, 71, "2024-543"),
            (380, 85, "Invoice Date:"),
            (480, 85, "12 Jul 2026"),
            (40, 251, "Item"),
            (520, 251, "Total"),
            (40, 269, "Support hours"),
            (491, 269, "900.00 GBP"),
            (360, 337, "Total:"),
            (491, 337, "900.00 GBP"),
        ]
    )
    assert data["number"] == "2024-543"


def test_a_date_and_its_time_on_the_number_s_line_is_the_issue_date() -> None:
    data = invoice_data(
        [
            (40, 30, "Loja Azul Ltda"),
            (40, 100, "DESCRIÇÃO"),
            (200, 100, "TOTAL"),
            (40, 112, "Caneta"),
            (200, 112, "10,00"),
            (40, 140, "VALOR TOTAL R$"),
            (200, 140, "10,00"),
            (20, 180, "NFC-e nº 1629 Série 1 24/03/2020 13:33:20"),
        ]
    )
    assert data["number"] == "1629"
    assert data["issue_date"] == "2020-03-24"


def test_of_two_dates_run_into_one_cell_the_due_date_is_the_one_under_its_label() -> None:
    data = invoice_data(
        [
            (40, 33, "Tax Invoice", 16),
            (260, 71, "Number"),
            (365, 71, "Date"),
            (470, 71, "Payment due"),
            (260, 83, "F-5966"),
            (365, 83, "Saturday, June 13, 2026"),
            (470, 83, "June 27, 2026"),
            (40, 251, "Description"),
            (509, 251, "Amount"),
            (40, 269, "Website design"),
            (491, 269, "121.00 USD"),
            (40, 323, "Total:"),
            (491, 323, "121.00 USD"),
        ]
    )
    assert data["due_date"] == "2026-06-27"


def test_a_label_under_the_seller_is_no_buyer_and_a_firm_alone_beside_it_is() -> None:
    data = invoice_data(
        [
            (464, 71, "Invoice #: 88"),
            (403, 89, "Created: March 4, 2024"),
            (57, 154, "Quillfeather, Inc."),
            (470, 154, "Brightwater Ltd."),
            (57, 172, "7 Harbor Road"),
            (485, 172, "Jane Roe"),
            (57, 190, "Portland, OR 97201"),
            (430, 190, "jane@example.com"),
            (52, 247, "Payment Method"),
            (498, 247, "Check #"),
            (52, 274, "Check"),
            (517, 274, "1000"),
            (52, 310, "Item"),
            (515, 310, "Price"),
            (52, 337, "Website design"),
            (501, 337, "$300.00"),
            (466, 416, "Total: $300.00"),
        ]
    )
    assert party_name(data, "customer") == "Brightwater Ltd."


def test_a_heading_in_a_column_of_labels_and_its_name_in_the_column_of_values() -> None:
    data = invoice_data(
        [
            (72, 71, "NDX", 20),
            (400, 71, "INVOICE #7", 16),
            (448, 95, "May 7, 2020", 11),
            (86, 156, "Client", 11),
            (120, 156, "Riverbend Outdoor", 11),
            (120, 170, "Supplies Group", 11),
            (120, 184, "9 Mill Road, Suite 4", 11),
            (74, 392, "Description"),
            (518, 392, "Amount"),
            (74, 421, "Consulting"),
            (518, 421, "$550.00"),
            (440, 460, "Total"),
            (518, 460, "$550.00"),
        ]
    )
    assert party_name(data, "customer") == "Riverbend Outdoor Supplies Group"


def test_abbreviated_unit_price_and_line_total_headers_are_one_column_each() -> None:
    header = "PRECIO UNIT. DESCUENTO TOTAL ITEM"
    assert column_label(header, 0) == ("price", len("PRECIO UNIT."))
    assert column_label(header, header.index("TOTAL")) == ("amount", len(header))
    assert column_label("Prix unit. HT", 0) == ("price", len("Prix unit."))
