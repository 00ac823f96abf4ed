"""Structures of invoices the reader had not met: each mechanism stated for any invoice
and checked on a snippet drawn here (not taken from any benchmark document)."""

from __future__ import annotations

from decimal import Decimal

from conveyor.agents.invoice_reader import _two_cells_of_a_line
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.offline import extract_offline
from conveyor.agents.values import NumberStyle, cell_amount, cell_amounts, currencies_in
from conveyor.documents.text import DocumentText, PageText
from tests.snippets import Draw, extraction, invoice_data, party_name

COMMA = NumberStyle(",", ".")
DOT = NumberStyle(".", ",")


def test_a_sums_row_whose_columns_ran_together_offers_its_amounts() -> None:
    assert cell_amounts("1.200,00 19% 228,00 1.428,00", COMMA) == [
        Decimal("1200.00"),
        Decimal("228.00"),
        Decimal("1428.00"),
    ]
    assert cell_amounts("80.00 8.5% 6.80", DOT) == [Decimal("80.00"), Decimal("6.80")]
    # One amount grouped by spaces, a quantity with its unit, words: no row of amounts.
    assert cell_amounts("1 710,00", NumberStyle(",", " ")) == []
    assert cell_amounts("2 pcs 14,00", COMMA) == []
    assert cell_amounts("14,00", COMMA) == []


def test_net_tax_and_gross_printed_in_one_cell_of_a_sums_row() -> None:
    draw: Draw = [
        (60, 50, "Rechnung", 18),
        (60, 90, "Rechnung Nr. 77/2024"),
        (60, 104, "Datum: 03.06.2024"),
        (60, 130, "Nordlicht Werkstatt GmbH"),
        (320, 130, "Kunde: Hafenbau AG"),
        (60, 200, "Beschreibung"),
        (300, 200, "Menge"),
        (360, 200, "Preis"),
        (450, 200, "Betrag"),
        (60, 220, "Wartung Heizung"),
        (300, 220, "1"),
        (360, 220, "1.200,00"),
        (450, 220, "1.200,00"),
        (300, 260, "Summe"),
        (360, 260, "1.200,00 19% 228,00 1.428,00"),
    ]
    result = extraction(draw)
    data = result.data
    assert isinstance(data, dict)
    assert (data["subtotal"], data["tax"], data["total"]) == ("1200.00", "228.00", "1428.00")
    # Without the run-together row, nothing says what the tax is.
    bare = extraction([d for d in draw if not d[2].startswith("1.200,00 19%")]).data
    assert isinstance(bare, dict) and bare["tax"] is None


def _goods_vat_total(goods: str, vat: str, total: str) -> Draw:
    return [
        (60, 50, "FATTURA", 18),
        (400, 60, "numero: 88"),
        (400, 74, "data: 12/03/2024"),
        (60, 110, "Officina Rossi SRL"),
        (320, 110, "Studio Verdi"),
        (60, 200, "Descrizione"),
        (300, 200, "Quantità"),
        (400, 200, "Importo"),
        (60, 220, "Revisione impianto"),
        (300, 220, "1"),
        (400, 220, goods),
        (300, 260, "Totale servizi"),
        (450, 260, goods),
        (300, 276, "Totale IVA"),
        (450, 276, vat),
        (300, 292, "Totale"),
        (450, 292, total),
    ]


def test_a_total_over_its_tax_and_a_bigger_total_is_the_net() -> None:
    result = extraction(_goods_vat_total("40,00", "8,8", "48,8"))
    data = result.data
    assert isinstance(data, dict)
    assert (data["subtotal"], data["tax"], data["total"]) == ("40.00", "8.8", "48.8")
    # The arithmetic alone names the net: none of the three is read for sure.
    assert max(result.fields[name] for name in ("subtotal", "tax", "total")) < 0.9
    # Totals that its tax does not join stay totals: the first is no net.
    other = extraction(_goods_vat_total("40,00", "8,8", "50,00")).data
    assert isinstance(other, dict) and other["subtotal"] != "40.00"


def _centred_rows(bullet_x: float) -> Draw:
    return [
        (380, 40, "FACTURE", 18),
        (380, 70, "Numéro de facture : 2024-17"),
        (380, 82, "Date de facturation : 4 mars 2024"),
        (40, 70, "Atelier Dubois"),
        (300, 120, "Maison Leroy"),
        (110, 200, "Description"),
        (300, 200, "Prix unitaire"),
        (400, 200, "Quantité"),
        (500, 200, "Prix"),
        # A description centred in its wide column: each line begins elsewhere.
        (52, 230, "Restauration d'une armoire ancienne"),
        (310, 230, "400.00"),
        (420, 230, "1"),
        (560, 230, "400.00", "right"),
        (30, 242, "en chêne massif, ponçage, teinte et vernis"),
        (70, 254, "livraison comprise"),
        (98, 280, "Pose de serrures"),
        (310, 280, "60.00"),
        (420, 280, "2"),
        (560, 280, "120.00", "right"),
        (bullet_x, 292, "• laiton vieilli"),
        (400, 330, "Sous-total"),
        (560, 330, "520.00", "right"),
        (400, 346, "Total"),
        (560, 346, "520.00", "right"),
    ]


def test_a_description_centred_under_its_header_is_read_whole() -> None:
    data = extraction(_centred_rows(36)).data
    assert isinstance(data, dict)
    names = [item["description"] for item in data["line_items"]]
    assert names == [
        "Restauration d'une armoire ancienne en chêne massif, ponçage, teinte et vernis "
        "livraison comprise",
        "Pose de serrures • laiton vieilli",
    ]
    # A line further left than any description of the table is none of them.
    far = extraction(_centred_rows(4)).data
    assert isinstance(far, dict)
    assert far["line_items"][1]["description"] == "Pose de serrures"


def _rate_only(rate: str, total: str) -> Draw:
    return [
        (60, 50, "INVOICE", 18),
        (380, 60, "Invoice number: 5521"),
        (380, 74, "Invoice date: 2 May 2024"),
        (60, 100, "Harbour Lights Ltd"),
        (320, 120, "Bill to: Quayside Cafe"),
        (60, 200, "Description"),
        (300, 200, "Qty"),
        (360, 200, "Price"),
        (450, 200, "Amount"),
        (60, 220, "Lantern repair"),
        (300, 220, "4"),
        (360, 220, "50.00"),
        (450, 220, "200.00"),
        (360, 260, "Subtotal"),
        (450, 260, "200.00"),
        (360, 276, "VAT"),
        (450, 276, rate),
        (360, 292, "Total"),
        (450, 292, total),
    ]


def test_a_tax_printed_as_its_rate_only_is_what_the_total_adds_to_the_net() -> None:
    result = extraction(_rate_only("20 %", "240.00"))
    data = result.data
    assert isinstance(data, dict)
    assert (data["subtotal"], data["tax"], data["total"]) == ("200.00", "40.00", "240.00")
    assert result.fields["tax"] < 0.9  # printed nowhere
    # A difference that is not the printed rate of the net is no tax of it.
    other = extraction(_rate_only("20 %", "250.00")).data
    assert isinstance(other, dict) and other["tax"] is None


def test_a_currency_column_takes_a_currency_s_code_not_the_next_column_s_word() -> None:
    data = extraction(
        [
            (60, 50, "FACTURA", 18),
            (300, 60, "Numar: 4410"),
            (300, 74, "Data: 2024-02-01"),
            (60, 100, "Furnizor: Atelier Nord SRL"),
            (300, 100, "Client: Depozit Sud SRL"),
            (40, 200, "Articol"),
            (220, 200, "Pret"),
            (290, 200, "Moneda"),
            (350, 200, "Cantitate"),
            (420, 200, "Cota TVA Valoare"),
            (40, 220, "Cablu"),
            (220, 220, "5.00"),
            (290, 220, "BGN"),
            (350, 220, "4"),
            (420, 220, "20%"),
            (500, 220, "20.00"),
            (400, 260, "Total"),
            (500, 260, "24.00"),
        ]
    ).data
    assert isinstance(data, dict) and data["currency"] == "BGN"


def _receipt(heading: str) -> Draw:
    return [
        (230, 60, "Corner Deli", 16),
        (220, 84, "4 Mill Lane, Leeds"),
        (190, 104, heading),
        (70, 200, "Item"),
        (350, 200, "Qty"),
        (440, 200, "Price"),
        (530, 200, "Total"),
        (70, 220, "Soup of the day"),
        (350, 220, "2"),
        (440, 220, "4.50"),
        (530, 220, "9.00"),
        (400, 260, "Total: 9.00 GBP"),
    ]


def test_a_receipt_heading_of_a_number_and_a_date_set_apart_by_dashes() -> None:
    for heading in (
        "Ticket #0815-22 \u2014 04/06/2024 \u2014 10:12",
        "Ticket #0815-22 | 04/06/2024",
    ):
        result = extraction(_receipt(heading))
        data = result.data
        assert isinstance(data, dict)
        assert (data["number"], data["issue_date"]) == ("0815-22", "2024-06-04")
        assert result.fields["issue_date"] < 0.9  # a date under no label: a guess
    # Words after the number, no date: the number still, no date.
    data = extraction(_receipt("Ticket #0815-22 \u2014 thank you")).data
    assert isinstance(data, dict)
    assert (data["number"], data["issue_date"]) == ("0815-22", None)


def _titled(title: str) -> Draw:
    return [
        (40, 40, title, 14),
        (40, 90, "Furnizor: Atelier Nord SRL"),
        (300, 90, "Client: Depozit Sud SRL"),
        (40, 200, "Descriere"),
        (300, 200, "Cantitate"),
        (380, 200, "Pret"),
        (480, 200, "Valoare"),
        (40, 220, "Cablu"),
        (300, 220, "4"),
        (380, 220, "5.00"),
        (480, 220, "20.00"),
        (400, 260, "Total"),
        (480, 260, "20.00"),
    ]


def test_a_title_prints_the_series_the_number_and_a_date_set_apart() -> None:
    result = extraction(_titled("FACTURA SER 10234 / 2024-03-05"))
    data = result.data
    assert isinstance(data, dict)
    assert (data["number"], data["issue_date"]) == ("SER 10234", "2024-03-05")
    assert result.fields["number"] < 0.9  # the series may be a word of the title
    # A tax's word between the title and the number is no series.
    vat = extraction(_titled("FAKTURA VAT 10234 / 2024-03-05")).data
    assert isinstance(vat, dict) and vat["number"] == "10234"


def test_a_row_without_an_amount_takes_its_quantity_from_the_quantity_column() -> None:
    data = extraction(
        [
            (60, 50, "Factuur", 18),
            (320, 80, "Factuurnummer: 2024-031"),
            (320, 94, "Factuurdatum: 05-03-2024"),
            (60, 80, "Bakkerij Zonneveld"),
            (60, 120, "Aan: Drukkerij Wolters"),
            (60, 200, "Omschrijving"),
            (260, 200, "Aantal"),
            (320, 200, "Eenheid"),
            (400, 200, "Prijs per eenheid"),
            (490, 200, "BTW%"),
            (60, 220, "Advieswerk"),
            (260, 220, "12"),
            (320, 220, "Uren"),
            (400, 220, "95,00"),
            (490, 220, "21%"),
            (320, 270, "Totaal"),
            (460, 270, "1.379,40"),
        ]
    ).data
    assert isinstance(data, dict)
    item = data["line_items"][0]
    assert (item["quantity"], item["unit_price"], item["amount"]) == ("12", "95.00", None)


def test_a_receipt_s_numbered_heading_is_no_seller_and_its_cashier_no_buyer() -> None:
    draw = _receipt("Ticket #0815-22 \u2014 04/06/2024 \u2014 10:12")
    draw += [(66, 150, "Cashier:"), (376, 150, "Ruth K.")]
    data = extraction(draw).data
    assert isinstance(data, dict)
    assert party_name(data, "vendor") == "Corner Deli"
    assert party_name(data, "customer") is None
    # A name beside other values, under no label, is still the buyer at a guess.
    draw[-2:] = [(66, 150, "Ref. 55-A"), (376, 150, "Ruth Kemp")]
    data = extraction(draw).data
    assert isinstance(data, dict) and party_name(data, "customer") == "Ruth Kemp"


def _letterhead(name: str) -> Draw:
    return [
        (300, 40, name, 14),
        (40, 60, "INVOICE", 18),
        (40, 100, "Invoice #: 7781"),
        (40, 114, "Date: 2024-04-09"),
        (40, 160, "Bill To"),
        (40, 174, "Mara Quill"),
        (40, 240, "Description"),
        (500, 240, "Amount"),
        (40, 258, "Sail repair"),
        (500, 258, "$120"),
        (40, 300, "Total: $120"),
    ]


def test_a_legal_form_ends_a_letterhead_name_only_where_something_sets_it_off() -> None:
    data = extraction(_letterhead("Bluebird Company Workshop")).data
    assert isinstance(data, dict) and party_name(data, "vendor") == "Bluebird Company Workshop"
    data = extraction(_letterhead("Bluebird Ltd, 4 Quay Street")).data
    assert isinstance(data, dict) and party_name(data, "vendor") == "Bluebird Ltd"


def _vat_band(rates: tuple[str, str, str]) -> Draw:
    return [
        (60, 50, "FACTURA", 18),
        (300, 60, "Numar: 5120"),
        (300, 74, "Data: 2024-06-11"),
        (60, 100, "Furnizor: Atelier Nord SRL"),
        (300, 100, "Client: Depozit Sud SRL"),
        (40, 200, "Articol"),
        (300, 200, "Cantitate"),
        (380, 200, "Pret"),
        (480, 200, "Valoare"),
        (40, 220, "Cablu"),
        (300, 220, "1"),
        (380, 220, "100.00"),
        (480, 220, "100.00"),
        (40, 240, "Priza"),
        (300, 240, "1"),
        (380, 240, "50.00"),
        (480, 240, "50.00"),
        (212, 700, "TVA 9%"),
        (281, 700, "TVA 19%"),
        (346, 700, "TVA TOTAL"),
        (68, 708, "TOTAL"),
        (215, 708, rates[0]),
        (283, 708, rates[1]),
        (354, 708, rates[2]),
        (493, 714, "TOTAL"),
        (500, 728, "173.50"),
    ]


def test_amounts_under_a_row_of_sum_labels_are_theirs_not_the_next_line_s_label() -> None:
    result = extraction(_vat_band(("4.50", "19.00", "23.50")))
    data = result.data
    assert isinstance(data, dict)
    # "TOTAL" beginning the amounts' line takes none of them; the tax that is the sum of
    # its row is the invoice's, and the net is what the total leaves.
    assert (data["subtotal"], data["tax"], data["total"]) == ("150.00", "23.50", "173.50")
    assert result.fields["tax"] < 0.9


def _boxed_title(title: str) -> Draw:
    return [
        (97, 54, "TALLERES RIVAS LIMITADA", 10),
        (97, 70, "SERVICIOS DE MANTENCION"),
        (430, 70, title, 10),
        (470, 90, "N\u00b0 7710"),
        (48, 133, "Cliente: Minera Sur SPA"),
        (367, 142, "Fecha: 02-05-2024"),
        (44, 198, "TIPO DOCUMENTO"),
        (202, 198, "FOLIO"),
        (255, 198, "FECHA"),
        (44, 208, "Orden de Compra"),
        (203, 208, "OC-5521"),
        (256, 208, "28-04-2024"),
        (380, 500, "Total"),
        (520, 500, "$ 250.000"),
    ]


def test_a_number_under_a_title_boxed_beside_the_letterhead_is_the_invoice_s() -> None:
    data = extraction(_boxed_title("FACTURA ELECTRONICA")).data
    assert isinstance(data, dict) and data["number"] == "7710"
    # Under words that are no title, a bare "N°" stays weaker than a folio's label.
    other = extraction(_boxed_title("SUCURSAL CENTRO")).data
    assert isinstance(other, dict) and other["number"] == "OC-5521"


def test_a_word_in_capitals_broken_at_a_line_s_end_is_joined_again() -> None:
    sheet = Sheet([], [], DOT, [DOT], plain="REVISIONE DELLA CALDAIA E MANUTENZIONE ORDINARIA")
    assert sheet.joined(["REVISIONE DELLA CAL", "DAIA E MANUTEN", "ZIONE ORDINARIA"]) == (
        "REVISIONE DELLA CALDAIA E MANUTENZIONE ORDINARIA"
    )
    # Capitals after a word in lower case, or words the text layer keeps apart, stay apart.
    assert sheet.joined(["Revisione della cal", "DAIA"]) == "Revisione della cal DAIA"
    assert sheet.joined(["REVISIONE", "DELLA"]) == "REVISIONE DELLA"


def test_a_tex_font_s_euro_set_before_its_amount() -> None:
    spaced = NumberStyle(",", " ")
    assert cell_amount("e 1 240,00", spaced) == Decimal("1240.00")
    assert currencies_in("Net: e 1 240,00 VAT: e 0,00") == {"EUR": 2}
    # A word that ends in "e" before an amount, or an "e" before a whole number, is none.
    assert cell_amount("Bose 12,00", spaced) is None
    assert currencies_in("Pose e 12 fois, e 3") == {}


def test_a_letterhead_name_whose_legal_form_wrapped_to_the_next_line() -> None:
    def letterhead(second: str) -> Draw:
        return [
            (60, 40, "Nordlicht Werkstatt und Handel", 12),
            (60, 55, second, 12),
            (60, 72, "Hafenstraße 4, 20457 Hamburg"),
            (60, 110, "Rechnung", 18),
            (60, 140, "Rechnung Nr. 2024-88"),
            (60, 154, "Datum: 03.06.2024"),
            (60, 200, "Beschreibung"),
            (450, 200, "Betrag"),
            (60, 220, "Wartung"),
            (450, 220, "100,00"),
            (350, 260, "Gesamtbetrag"),
            (450, 260, "100,00"),
        ]

    data = extraction(letterhead("GmbH & Co. KG")).data
    assert isinstance(data, dict)
    assert party_name(data, "vendor") == "Nordlicht Werkstatt und Handel GmbH & Co. KG"
    # The line under a whole name that is no legal form stays apart: what the firm does.
    data = extraction(letterhead("Meisterbetrieb")).data
    assert isinstance(data, dict) and party_name(data, "vendor") == "Nordlicht Werkstatt und Handel"


def _net_only(label: str, amount: str) -> Draw:
    return [
        (355, 75, "INVOICE #12", 16),
        (380, 97, "Date: 2024-03-17"),
        (84, 157, "Sender"),
        (309, 157, "Client"),
        (84, 178, "Kettle Works SARL"),
        (309, 178, "Bram Studio"),
        (85, 282, "Description"),
        (351, 282, "Quantity"),
        (423, 282, "Unit Price"),
        (546, 282, "Total"),
        (85, 311, "Glazing"),
        (351, 311, "3"),
        (423, 311, "200 EUR"),
        (519, 311, "600 EUR"),
        (85, 341, "Firing"),
        (351, 341, "2"),
        (423, 341, "150 EUR"),
        (519, 341, "300 EUR"),
        (334, 629, f"{label}: {amount} EUR"),
    ]


def test_the_only_sum_labelled_without_tax_that_the_items_make_is_the_total() -> None:
    result = extraction(_net_only("Total excl. tax", "900"))
    data = result.data
    assert isinstance(data, dict)
    assert (data["total"], data["tax"]) == ("900", None)
    assert result.fields["total"] < 0.9  # not under a total's own label
    # A sum the items do not make is left as it was printed: a net, no total.
    other = extraction(_net_only("Total excl. tax", "950")).data
    assert isinstance(other, dict) and (other["total"], other["subtotal"]) == (None, "950")


def test_a_subtotal_alone_that_the_items_make_names_no_total() -> None:
    for label in ("Sub-total", "Subtotal", "Netto"):
        data = extraction(_net_only(label, "900")).data
        assert isinstance(data, dict) and data["total"] is None, label


def test_a_number_and_dates_printed_with_unicode_hyphens() -> None:
    # A font that prints U+2010 (hyphen) where "-" is meant, in a number and in dates.
    text = "\n".join(
        [
            "Facture",
            "",
            "Numéro de facture:      ZK\u20107731\u2010B",
            "Date de la facture:     04\u201011\u20102025",
            "Date d'échéance:        04\u201012\u20102025",
            "",
            "Atelier Quatre Vents SARL",
            "Client: Maison Lebrun",
            "",
            "Montant total HT                 500,00",
            "TVA 20 %                         100,00",
            "Montant TTC                      600,00",
        ]
    )
    data = extract_offline(DocumentText(pages=[PageText(1, text, True, len(text))]), "invoice").data
    assert isinstance(data, dict)
    assert (data["number"], data["issue_date"], data["due_date"]) == (
        "ZK-7731-B",
        "2025-11-04",
        "2025-12-04",
    )


# An item table of one row, under a header at y 200: for the tests of what stands above it.
_SURVEY_ROW: Draw = [
    (60, 200, "Description"),
    (300, 200, "Qty"),
    (360, 200, "Price"),
    (450, 200, "Amount"),
    (60, 220, "Survey"),
    (300, 220, "2"),
    (360, 220, "50.00"),
    (450, 220, "100.00"),
]


def test_a_number_sign_before_a_number_that_begins_with_the_document_s_word() -> None:
    # "No. INV-..." is a sign and a number, not the label "No. Inv(oice)" and "-2031-007".
    data = invoice_data(
        [
            (60, 50, "Invoice", 18),
            (60, 80, "No. INV-2031-007"),
            (60, 100, "Date: 2031-02-14"),
            (60, 130, "Bill to"),
            (60, 144, "Harbour Lights Ltd"),
            *_SURVEY_ROW,
            (360, 260, "Total"),
            (450, 260, "100.00"),
        ]
    )
    assert data["number"] == "INV-2031-007"


def test_a_date_alone_under_the_number_under_the_title_is_the_issue_date() -> None:
    draw: Draw = [
        (470, 50, "FACTURE", 16),
        (60, 52, "Atelier Quatre Vents"),
        (540, 66, "2031A07-014", "right"),
        (60, 66, "12 rue des Lilas"),
        (540, 80, "14/03/2031", "right"),
        (60, 80, "69002 Lyon"),
        (60, 94, "atelier@example.org"),
        (60, 140, "CLIENT"),
        (60, 154, "Maison Lebrun SARL"),
        (60, 220, "DESCRIPTION"),
        (400, 220, "QTÉ"),
        (480, 220, "TOTAL HT"),
        (60, 240, "Reliure de registres"),
        (400, 240, "3"),
        (480, 240, "450,00"),
        (380, 280, "Total HT"),
        (480, 280, "450,00"),
    ]
    data = invoice_data(draw)
    assert (data["number"], data["issue_date"]) == ("2031A07-014", "2031-03-14")
    # A date beside the sender's block, a line apart from the number, is some other date's.
    apart = invoice_data([d if d[2] != "14/03/2031" else (540, 94, d[2], "right") for d in draw])
    assert apart["issue_date"] is None


def test_a_row_s_amount_is_the_number_set_under_the_amount_header() -> None:
    # "Stück" and "Satz" are no known column words; the amount "Nettobetrag" and the
    # gross "Gesamt" follow. The count, nearest the "Nettobetrag" header, is no amount.
    data = invoice_data(
        [
            (60, 50, "Rechnung", 18),
            (60, 80, "Rechnung Nr. 5512"),
            (60, 94, "Datum: 02.05.2031"),
            (60, 120, "Kunde: Ostwind Logistik AG"),
            (40, 200, "Bezeichnung"),
            (230, 200, "Stück"),
            (290, 200, "Satz"),
            (360, 200, "Nettobetrag"),
            (440, 200, "USt. (19%)"),
            (520, 200, "Gesamt"),
            (40, 216, "Montage"),
            (240, 216, "8"),
            (285, 216, "95,00 €"),
            (360, 216, "760,00 €"),
            (440, 216, "144,40 €"),
            (520, 216, "904,40 €"),
            (280, 240, "Summe"),
            (360, 240, "760,00 €"),
            (440, 240, "144,40 €"),
            (520, 240, "904,40 €"),
        ]
    )
    items = data["line_items"]
    assert isinstance(items, list) and len(items) == 1
    assert (items[0]["quantity"], items[0]["unit_price"], items[0]["amount"]) == (
        "8",
        "95.00",
        "760.00",
    )


def _taxes_box(amounts: tuple[str, str, str]) -> Draw:
    # The sums in boxes under a row of labels, only the tax's a known one, each amount
    # set flush right in its box.
    return [
        (60, 50, "Rechnung", 18),
        (60, 80, "Rechnung Nr. 2031-88"),
        (60, 94, "Datum: 11.04.2031"),
        (60, 120, "Kunde: Ostwind Logistik AG"),
        (60, 200, "Beschreibung"),
        (300, 200, "Menge"),
        (360, 200, "Preis"),
        (450, 200, "Betrag"),
        (60, 220, "Wartung Heizung"),
        (300, 220, "1"),
        (360, 220, "1 200,00"),
        (450, 220, "1 200,00"),
        (60, 300, "Satz"),
        (180, 300, "Grundlage"),
        (300, 300, "Steuerbetrag"),
        (420, 300, "Zusammen"),
        (60, 316, "19 %"),
        (290, 316, amounts[0], "right"),
        (410, 316, amounts[1], "right"),
        (530, 316, amounts[2], "right"),
    ]


def test_net_tax_and_gross_under_a_row_of_labels_only_the_tax_s_known() -> None:
    result = extraction(_taxes_box(("1 200,00", "228,00", "1 428,00")))
    data = result.data
    assert isinstance(data, dict)
    assert (data["subtotal"], data["tax"], data["total"]) == ("1200.00", "228.00", "1428.00")
    assert result.fields["total"] <= 0.85  # no known label names the total
    # Amounts that do not add up are no such row.
    data = invoice_data(_taxes_box(("1 200,00", "228,00", "1 500,00")))
    assert data["total"] != "1500.00"


def test_a_seller_s_name_that_is_both_cells_of_a_line_is_a_heading() -> None:
    # "Anschrift | Anschrift" heads the seller's and the buyer's columns: read as the
    # seller's name, it is a label, however surely its block was found.
    text = "\n".join(
        [
            "Verkäufer                          Käufer",
            "Anschrift                          Anschrift",
            "Lindenweg 4                        Am Kai 12",
            "20095 Hamburg                      28195 Bremen",
            "",
            "Lindenweg 4 - 20095 Hamburg",
        ]
    )
    sheet = Sheet.of(DocumentText(pages=[PageText(1, text, True, len(text))]))
    assert _two_cells_of_a_line(sheet, "Anschrift")
    # A name printed on two lines, or beside other words, heads nothing.
    assert not _two_cells_of_a_line(sheet, "Lindenweg 4")
    assert not _two_cells_of_a_line(sheet, "Verkäufer")


def _numbered(value: str) -> Draw:
    return [
        (60, 50, "Sprzedawca: Pracownia Lipowa"),
        (440, 50, "Numer faktury"),
        (440, 64, value),
        (60, 100, "Nabywca: Zakład Brzozowy"),
        (60, 120, "Data wystawienia: 2031-05-30"),
        (60, 200, "Nazwa"),
        (300, 200, "Ilość"),
        (360, 200, "Cena"),
        (450, 200, "Wartość"),
        (60, 220, "Usługa"),
        (300, 220, "1"),
        (360, 220, "500,00"),
        (450, 220, "500,00"),
    ]


def test_an_invoice_number_shaped_like_a_date_under_its_label() -> None:
    # "3/05/2031": the third invoice of May 2031, under the number's own label.
    data = invoice_data(_numbered("3/05/2031"))
    assert (data["number"], data["issue_date"]) == ("3/05/2031", "2031-05-30")
    # Beside another label the date is that label's, not the number.
    beside = invoice_data([*_numbered(""), (440, 64, "Termin: 3/06/2031")])
    assert beside["number"] is None


def test_a_date_label_that_goes_on_with_a_clause_before_its_colon() -> None:
    data = invoice_data(
        [
            (60, 50, "Invoice", 18),
            (60, 80, "Invoice No. 2031-118"),
            (60, 100, "Date of issue, subject to section 12 of the act: 14.06.2031"),
            (60, 114, "Delivered on:"),
            (60, 128, "02.06.2031"),
            (60, 160, "Bill to: Harbour Lights Ltd"),
            *_SURVEY_ROW,
        ]
    )
    assert data["issue_date"] == "2031-06-14"


def test_a_row_of_sum_labels_under_the_items_ends_their_table() -> None:
    # The sums' box set just under the one row, as close as a second row would be, its
    # rate named in words as a description would be.
    draw = [
        (x, y - 60, "Regelsatz 19 %" if rest[0] == "19 %" else rest[0], *rest[1:])
        if y >= 300
        else (x, y, *rest)
        for x, y, *rest in _taxes_box(("1 200,00", "228,00", "1 428,00"))
    ]
    items = invoice_data(draw)["line_items"]
    assert isinstance(items, list)
    assert [(i["description"], i["amount"]) for i in items] == [("Wartung Heizung", "1200.00")]


def test_a_line_under_the_prices_beside_the_last_row_is_none_of_its_description() -> None:
    data = invoice_data(
        [
            (60, 50, "Invoice", 18),
            (60, 80, "Invoice No. 2031-204"),
            (60, 94, "Date: 2031-07-01"),
            (60, 120, "Bill to: Harbour Lights Ltd"),
            (60, 200, "Description"),
            (300, 200, "Price"),
            (380, 200, "Qty"),
            (450, 200, "Amount"),
            (60, 220, "Survey"),
            (300, 220, "50.00"),
            (380, 220, "2"),
            (450, 220, "100.00"),
            (60, 236, "Harbour wall, east side"),
            (305, 252, "Settled in full: 100.00 GBP"),
        ]
    )
    items = data["line_items"]
    assert isinstance(items, list)
    assert [i["description"] for i in items] == ["Survey Harbour wall, east side"]


def _priced_under(with_price_line: bool) -> Draw:
    draw: Draw = [
        (60, 50, "Rechnung", 18),
        (60, 80, "Rechnung Nr. 3107"),
        (60, 94, "Datum: 02.08.2031"),
        (60, 120, "Kunde: Ostwind Logistik AG"),
        (70, 200, "Leistung"),
        (220, 200, "Menge"),
        (370, 200, "Betrag"),
        (90, 220, "Wartung Heizung"),
        (260, 220, "3 Std."),
        (370, 220, "270,00€ exkl. USt"),
        (240, 234, "Preis pro Std.: 90€"),
        (220, 270, "Gesamtbetrag Netto:"),
        (390, 270, "270,00€"),
    ]
    return draw if with_price_line else [d for d in draw if not d[2].startswith("Preis")]


def test_a_row_s_amount_followed_by_the_words_that_say_it_is_net() -> None:
    items = invoice_data(_priced_under(False))["line_items"]
    assert isinstance(items, list) and len(items) == 1
    assert (items[0]["quantity"], items[0]["amount"]) == ("3", "270.00")


def test_a_unit_price_labelled_on_the_line_under_its_row() -> None:
    result = extraction(_priced_under(True))
    data = result.data
    assert isinstance(data, dict)
    items = data["line_items"]
    assert isinstance(items, list) and len(items) == 1
    assert (items[0]["description"], items[0]["unit_price"]) == ("Wartung Heizung", "90")
    assert result.fields["line_items"] <= 0.85


def _position(lines: list[tuple[str, str]], net: tuple[str, str]) -> Draw:
    draw: Draw = [
        (60, 50, "Rechnung", 18),
        (60, 80, "Rechnung Nr. 4410"),
        (60, 94, "Datum: 09.09.2031"),
        (60, 120, "Kunde: Ostwind Logistik AG"),
    ]
    for k, (label, value) in enumerate(lines):
        draw += [(60, 200 + 14 * k, label), (300, 200 + 14 * k, value)]
    return [*draw, (60, 320, net[0]), (300, 320, net[1])]


def test_a_position_s_label_wrapped_beside_another_label_is_no_new_position() -> None:
    # "Code der Mengen-" over "Menge | Steuerart:": the end of a wrapped label beside
    # the next label, which ends in its colon, is no second quantity.
    block = [
        ("Menge", "2"),
        ("Einzelpreis", "50,00"),
        ("Code der Mengen-", "Steuerart:"),
        ("Menge", "Steuerart:"),
        ("Gesamtpreis", "100,00"),
        ("Bezeichnung:", "Wartung Heizung"),
    ]
    items = invoice_data(_position(block, ("Summe netto", "100,00")))["line_items"]
    assert isinstance(items, list)
    assert [(i["description"], i["quantity"], i["amount"]) for i in items] == [
        ("Wartung Heizung", "2", "100.00")
    ]


def test_a_position_labelled_in_french_as_a_factur_x_viewer_prints_it() -> None:
    block = [
        ("Quantité", "3"),
        ("Prix net de l'article", "40,00"),
        ("Montant net de ligne", "120,00"),
        ("Nom de l'article:", "Reliure de registres"),
    ]
    items = invoice_data(_position(block, ("Montant total HT", "120,00")))["line_items"]
    assert isinstance(items, list)
    assert [(i["description"], i["quantity"], i["unit_price"], i["amount"]) for i in items] == [
        ("Reliure de registres", "3", "40.00", "120.00")
    ]


def test_the_second_line_of_a_header_repeated_on_the_next_page_ends_no_table() -> None:
    def header(y: float) -> Draw:
        return [
            (60, y, "Beschreibung"),
            (300, y, "Menge"),
            (360, y, "Preis"),
            (450, y, "Betrag"),
            (360, y + 10, "netto"),
            (450, y + 10, "netto"),
        ]

    first: Draw = [
        (60, 50, "Rechnung", 18),
        (60, 80, "Rechnung Nr. 5120"),
        (60, 94, "Datum: 01.10.2031"),
        (60, 120, "Kunde: Ostwind Logistik AG"),
        *header(200),
        (60, 226, "Wartung Heizung"),
        (300, 226, "1"),
        (360, 226, "100,00"),
        (450, 226, "100,00"),
        (60, 242, "Filter"),
        (300, 242, "2"),
        (360, 242, "15,00"),
        (450, 242, "30,00"),
    ]
    second: Draw = [
        *header(60),
        (60, 86, "Anfahrt"),
        (300, 86, "1"),
        (360, 86, "45,00"),
        (450, 86, "45,00"),
        (300, 120, "Summe netto"),
        (450, 120, "175,00"),
    ]
    data = extraction(first, second).data
    assert isinstance(data, dict)
    items = data["line_items"]
    assert isinstance(items, list)
    assert [i["amount"] for i in items] == ["100.00", "30.00", "45.00"]
