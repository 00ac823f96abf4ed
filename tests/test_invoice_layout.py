"""The layout reader on small invoices drawn here, one per language and layout habit:
labels beside and above their values, blocks side by side, tables by column, sums that
must add up. Each is a tiny PDF (reportlab) read the way a worker reads it."""

from __future__ import annotations

import datetime
from decimal import Decimal

from reportlab.pdfbase.pdfmetrics import stringWidth  # type: ignore[import-untyped]

from conveyor.agents.invoice_labels import field_label, fold, sum_label
from conveyor.agents.values import NumberStyle, cell_amount, currency_of, dates_in, number_styles
from conveyor.documents.text import extract_text
from tests.snippets import Draw, extraction, pdf


def read(draw: Draw) -> dict[str, object]:
    result = extraction(draw)
    return {"data": result.data, "fields": result.fields, "confidence": result.confidence}


US: Draw = [
    (40, 50, "Northwind Traders Inc.", 14),
    (40, 66, "500 Commerce Way"),
    (40, 78, "Seattle, WA 98101"),
    (420, 50, "INVOICE", 16),
    (400, 80, "INVOICE #"),
    (480, 80, "DATE"),
    (400, 92, "NW-20931"),
    (480, 92, "March 3, 2024"),
    (400, 112, "DUE DATE"),
    (400, 124, "04/02/2024"),
    (40, 150, "BILL TO"),
    (260, 150, "SHIP TO"),
    (40, 162, "Fabrikam Corp."),
    (260, 162, "Fabrikam Warehouse"),
    (40, 174, "12 Lake Road"),
    (260, 174, "99 Dock Street"),
    (40, 220, "DESCRIPTION"),
    (300, 220, "QTY"),
    (380, 220, "UNIT PRICE"),
    (500, 220, "AMOUNT"),
    (40, 240, "Consulting hours"),
    (300, 240, "12"),
    (380, 240, "$150.00"),
    (500, 240, "$1,800.00"),
    (40, 256, "Travel expenses"),
    (300, 256, "1"),
    (380, 256, "$245.50"),
    (500, 256, "$245.50"),
    (380, 290, "SUBTOTAL"),
    (500, 290, "$2,045.50"),
    (380, 304, "SALES TAX 8%"),
    (500, 304, "$163.64"),
    (380, 318, "TOTAL"),
    (500, 318, "$2,209.14"),
    (380, 332, "PREVIOUS BALANCE"),
    (500, 332, "$500.00"),
    (380, 346, "AMOUNT DUE"),
    (500, 346, "$2,709.14"),
]


def test_a_us_invoice_with_labels_above_values_and_a_previous_balance() -> None:
    got = read(US)
    data = got["data"]
    assert isinstance(data, dict)
    assert data["number"] == "NW-20931"
    assert data["issue_date"] == "2024-03-03" and data["due_date"] == "2024-04-02"
    assert data["vendor"]["name"] == "Northwind Traders Inc."
    assert data["customer"]["name"] == "Fabrikam Corp."
    assert data["currency"] == "USD"
    # The amount due carries an earlier balance: the total is the invoice's own.
    assert (data["subtotal"], data["tax"], data["total"]) == ("2045.50", "163.64", "2209.14")
    assert [(i["quantity"], i["unit_price"], i["amount"]) for i in data["line_items"]] == [
        ("12", "150.00", "1800.00"),
        ("1", "245.50", "245.50"),
    ]


FR: Draw = [
    (40, 40, "Atelier Lumière SARL - 8 rue des Lilas - 69003 Lyon", 8),
    (40, 90, "Facture n° F-2017-118", 14),
    (40, 120, "Date de facture : 3 juillet 2017"),
    (40, 134, "Date d'échéance : 2 août 2017"),
    (330, 120, "Facturé à :"),
    (330, 134, "Boulangerie Martin"),
    (330, 146, "4 place du Marché"),
    (40, 200, "Désignation"),
    (280, 200, "Quantité"),
    (360, 200, "Prix unitaire HT"),
    (480, 200, "Montant HT"),
    (40, 218, "--- Luminaires ---"),
    (40, 234, "Lampe de bureau"),
    (280, 234, "2"),
    (360, 234, "45,00 €"),
    (480, 234, "90,00 €"),
    (40, 250, "Applique murale"),
    (280, 250, "1"),
    (360, 250, "1 250,00 €"),
    (480, 250, "1 250,00 €"),
    (360, 290, "Total HT"),
    (480, 290, "1 340,00 €"),
    (360, 304, "TVA 20 %"),
    (480, 304, "268,00 €"),
    (360, 318, "Total TTC"),
    (480, 318, "1 608,00 €"),
]


def test_a_french_invoice_ht_tva_ttc_and_a_section_row_in_its_table() -> None:
    data = read(FR)["data"]
    assert isinstance(data, dict)
    assert data["number"] == "F-2017-118"
    assert data["issue_date"] == "2017-07-03" and data["due_date"] == "2017-08-02"
    assert data["vendor"]["name"] == "Atelier Lumière SARL"
    assert data["customer"]["name"] == "Boulangerie Martin"
    assert (data["subtotal"], data["tax"], data["total"]) == ("1340.00", "268.00", "1608.00")
    # The section row "--- Luminaires ---" does not end the table.
    assert [i["amount"] for i in data["line_items"]] == ["90.00", "1250.00"]
    assert data["currency"] == "EUR"


NL: Draw = [
    (40, 50, "Bakkerij De Molen B.V.", 13),
    (40, 64, "Dorpsstraat 12, 1234 AB Utrecht"),
    (40, 76, "BTW-nr: NL123456789B01"),
    (40, 120, "FACTUUR", 15),
    (40, 150, "Factuurnummer"),
    (160, 150, "2016-0042"),
    (40, 164, "Factuurdatum"),
    (160, 164, "20-10-2015"),
    (40, 178, "Vervaldatum"),
    (160, 178, "19-11-2015"),
    (330, 150, "Klant:"),
    (330, 164, "Café Het Hoekje"),
    (40, 220, "Omschrijving"),
    (300, 220, "Aantal"),
    (380, 220, "Prijs"),
    (480, 220, "Bedrag"),
    (40, 236, "Broden"),
    (300, 236, "40"),
    (380, 236, "€ 2,50"),
    (480, 236, "€ 100,00"),
    (340, 270, "Totaal excl. BTW"),
    (480, 270, "€ 100,00"),
    (340, 284, "BTW 9%"),
    (480, 284, "€ 9,00"),
    (340, 298, "Totaal incl. BTW"),
    (480, 298, "€ 109,00"),
]


def test_a_dutch_invoice_with_day_first_dashes() -> None:
    data = read(NL)["data"]
    assert isinstance(data, dict)
    assert data["number"] == "2016-0042"
    assert data["issue_date"] == "2015-10-20" and data["due_date"] == "2015-11-19"
    assert data["vendor"]["name"] == "Bakkerij De Molen B.V."
    assert data["customer"]["name"] == "Café Het Hoekje"
    assert (data["subtotal"], data["tax"], data["total"]) == ("100.00", "9.00", "109.00")
    assert data["line_items"][0]["quantity"] == "40"


ES: Draw = [
    (40, 50, "Ferretería Sol S.L.", 13),
    (40, 64, "Calle Mayor 5, 28013 Madrid"),
    (380, 50, "FACTURA", 15),
    (380, 70, "Factura nº: 2023/77"),
    (380, 84, "Fecha: 15/03/2023"),
    (40, 120, "Cliente:"),
    (40, 132, "Construcciones Vega S.A."),
    (40, 180, "Descripción"),
    (300, 180, "Cantidad"),
    (380, 180, "Precio"),
    (480, 180, "Importe"),
    (40, 196, "Tornillos caja 100"),
    (300, 196, "10"),
    (380, 196, "4,20"),
    (480, 196, "42,00"),
    (360, 230, "Base imponible"),
    (480, 230, "42,00"),
    (360, 244, "IVA 21%"),
    (480, 244, "8,82"),
    (360, 258, "Total"),
    (480, 258, "50,82 €"),
]

IT: Draw = [
    (40, 50, "Officina Rossi S.r.l.", 13),
    (40, 64, "Via Roma 10, 20121 Milano"),
    (40, 100, "Fattura n. 145"),
    (40, 114, "Data: 12 settembre 2022"),
    (330, 100, "Cliente"),
    (330, 114, "Trattoria Da Gino"),
    (40, 160, "Descrizione"),
    (300, 160, "Quantità"),
    (380, 160, "Prezzo"),
    (480, 160, "Importo"),
    (40, 176, "Revisione impianto"),
    (300, 176, "1"),
    (380, 176, "300,00"),
    (480, 176, "300,00"),
    (360, 210, "Imponibile"),
    (480, 210, "300,00"),
    (360, 224, "IVA 22%"),
    (480, 224, "66,00"),
    (360, 238, "Totale"),
    (480, 238, "366,00 €"),
]


def test_spanish_and_italian_invoices() -> None:
    es = read(ES)["data"]
    assert isinstance(es, dict)
    assert (es["number"], es["issue_date"]) == ("2023/77", "2023-03-15")
    assert es["vendor"]["name"] == "Ferretería Sol S.L."
    assert es["customer"]["name"] == "Construcciones Vega S.A."
    assert (es["subtotal"], es["tax"], es["total"]) == ("42.00", "8.82", "50.82")
    it = read(IT)["data"]
    assert isinstance(it, dict)
    assert (it["number"], it["issue_date"]) == ("145", "2022-09-12")
    assert it["customer"]["name"] == "Trattoria Da Gino"
    assert (it["subtotal"], it["tax"], it["total"]) == ("300.00", "66.00", "366.00")


def test_right_invoices_are_trusted_and_a_broken_sum_is_not() -> None:
    assert read(FR)["confidence"] >= 0.9  # type: ignore[operator]
    broken = [(x, y, t.replace("1 608,00", "1 708,00"), *rest) for x, y, t, *rest in FR]
    got = read(broken)
    assert got["confidence"] < 0.9  # type: ignore[operator]


def test_values_in_many_notations() -> None:
    comma, dot = NumberStyle(",", "."), NumberStyle(".", ",")
    assert cell_amount("1.234,56 €", comma) == Decimal("1234.56")
    assert cell_amount("41,1765 €", comma) == Decimal("41.1765")
    assert cell_amount("1.163,40", dot) is None  # not a number of a decimal-point document
    assert cell_amount("19 %", comma) is None and cell_amount("31.01.2014", comma) is None
    assert cell_amount("1'234.50", NumberStyle(".", "'")) == Decimal("1234.50")
    assert cell_amount("Rs 1,23,456.78", dot) == Decimal("123456.78")  # lakhs
    assert cell_amount("1 234,56", NumberStyle(",", " ")) == Decimal("1234.56")
    assert currency_of("Rs 450.00") == "INR" and currency_of("12 zł") == "PLN"
    assert currency_of("CHF 12.00") == "CHF" and currency_of("€ 31,00") == "EUR"
    expected = {
        "August 3 , 2014": datetime.date(2014, 8, 3),
        "3 juillet 2017": datetime.date(2017, 7, 3),
        "21. März 2018": datetime.date(2018, 3, 21),
        "12 mei 2016": datetime.date(2016, 5, 12),
        "20-10-2015": datetime.date(2015, 10, 20),
        "5 febrero 2021": datetime.date(2021, 2, 5),
        "2020/09/10": datetime.date(2020, 9, 10),
        "10 Sep, 2020": datetime.date(2020, 9, 10),
    }
    for text, date in expected.items():
        assert [t.date for t in dates_in(text)] == [date], text


def test_labels_in_six_languages() -> None:
    kinds = {
        "Rechnungsnummer:": "number",
        "Factuurnummer": "number",
        "N° de facture": "number",
        "Liefer- und Leistungsdatum:": "-date",
        "Fälligkeitsdatum:": "due",
        "Date d'échéance": "due",
    }
    for text, kind in kinds.items():
        found = field_label(text)
        assert found is not None and found[0] == kind, text
    sums = {
        "Totaal bedrag excl. BTW": "net",
        "Totaal bedrag incl. BTW": "gross",
        "Total TTC": "gross",
        "Total HT": "net",
        "Gesamtbetrag der Zuschläge": "-sum",
        "Zahlbetrag": "due",
        "Umsatzsteuer 19%": "tax",
    }
    for text, kind in sums.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, text
    assert fold("Fälligkeit") == "falligkeit" and len(fold("Straße")) == len("Straße")


NO_HEADINGS: Draw = [
    (40, 40, "Studio Nord SAS", 12),
    (40, 54, "27 rue du Port"),
    (40, 66, "75001 Paris"),
    (330, 110, "Deco Addict"),
    (330, 122, "77 Santa Barbara Rd"),
    (330, 134, "Pleasant Hill CA 94523"),
    (40, 190, "Invoice INV/2017/0005", 16),
    (40, 215, "Invoice Date:"),
    (160, 215, "Due Date:"),
    (280, 215, "Source:"),
    (40, 227, "07/03/2017"),
    (160, 227, "08/02/2017"),
    (280, 227, "SO012"),
    (40, 260, "Description"),
    (300, 260, "Quantity"),
    (370, 260, "Unit Price"),
    (440, 260, "Taxes"),
    (510, 260, "Amount"),
    (40, 276, "Office chair"),
    (300, 276, "2.000 Units"),
    (370, 276, "120.50"),
    (440, 276, "VAT 20%"),
    (510, 276, "241.00 €"),
    (380, 330, "Subtotal"),
    (510, 330, "241.00 €"),
    (380, 344, "Taxes"),
    (510, 344, "48.20 €"),
    (380, 358, "Total"),
    (510, 358, "289.20 €"),
    (40, 780, "Studio Nord SAS - 27 rue du Port - 75001 Paris - VAT FR12345678901", 7),
]


def test_parties_without_headings_and_a_row_of_labels_over_values() -> None:
    data = read(NO_HEADINGS)["data"]
    assert isinstance(data, dict)
    assert data["number"] == "INV/2017/0005"
    assert (data["issue_date"], data["due_date"]) == ("2017-07-03", "2017-08-02")
    assert data["vendor"]["name"] == "Studio Nord SAS"  # letterhead and footer agree
    assert data["customer"]["name"] == "Deco Addict"  # the address block, no heading
    assert data["line_items"][0]["quantity"] == "2.000"
    assert (data["subtotal"], data["tax"], data["total"]) == ("241.00", "48.20", "289.20")


TWO_RATES: Draw = [
    (40, 50, "Buchhandlung Weber GmbH", 13),
    (40, 64, "Marktplatz 3, 79098 Freiburg"),
    (40, 100, "Rechnung Nr. 2024-117", 14),
    (40, 120, "Rechnungsdatum: 21. März 2024"),
    (40, 160, "Bezeichnung"),
    (300, 160, "Menge"),
    (380, 160, "Einzelpreis"),
    (480, 160, "Gesamt"),
    (40, 176, "Fachbuch"),
    (300, 176, "4"),
    (380, 176, "25,00"),
    (480, 176, "100,00"),
    (40, 192, "Software-Lizenz"),
    (300, 192, "1"),
    (380, 192, "100,00"),
    (480, 192, "100,00"),
    (360, 230, "Nettobetrag"),
    (480, 230, "200,00"),
    (360, 244, "MwSt. 7%"),
    (480, 244, "7,00"),
    (360, 258, "MwSt. 19%"),
    (480, 258, "19,00"),
    (360, 272, "Rechnungsbetrag"),
    (480, 272, "226,00"),
]


def test_two_vat_rates_without_a_tax_total_add_up() -> None:
    data = read(TWO_RATES)["data"]
    assert isinstance(data, dict)
    assert (data["number"], data["issue_date"]) == ("2024-117", "2024-03-21")
    assert (data["subtotal"], data["tax"], data["total"]) == ("200.00", "26.00", "226.00")


def test_no_currency_printed_is_the_address_country_s_at_a_guess() -> None:
    plain = [(x, y, t.replace("$", ""), *rest) for x, y, t, *rest in US]
    got = read(plain)
    data, fields = got["data"], got["fields"]
    assert isinstance(data, dict) and isinstance(fields, dict)
    assert data["currency"] == "USD" and fields["currency"] < 0.9  # "Seattle, WA 98101"


SERVICES: Draw = [
    (40, 50, "Harbor Design LLC", 13),
    (40, 64, "88 Pier Avenue, Portland, OR 97201"),
    (400, 50, "INVOICE", 15),
    (400, 70, "Invoice No: HD-0419"),
    (400, 84, "Date: May 2, 2024"),
    (40, 120, "Bill To:"),
    (40, 132, "Cedar Cafe"),
    (40, 190, "Description"),
    (480, 190, "Amount"),
    (40, 206, "Logo design"),
    (480, 206, "$1,200.00"),
    (40, 222, "Menu layout, two pages"),
    (480, 222, "$450.00"),
    (380, 260, "Total"),
    (480, 260, "$1,650.00"),
]


def test_a_table_of_services_with_a_description_and_an_amount() -> None:
    got = read(SERVICES)
    data, fields = got["data"], got["fields"]
    assert isinstance(data, dict) and isinstance(fields, dict)
    assert [(i["description"], i["amount"]) for i in data["line_items"]] == [
        ("Logo design", "1200.00"),
        ("Menu layout, two pages", "450.00"),
    ]
    assert data["total"] == "1650.00" and data["customer"]["name"] == "Cedar Cafe"
    assert fields["line_items"] < 0.9  # no quantity x price to check them by


def test_tax_labels_after_a_rate_or_a_plus_and_whole_amounts_with_dashed_cents() -> None:
    for text in ("plus VAT 14%", "10% VAT:", "zzgl. 19 % USt.", "Total Impuesto", "DPH 21 %:"):
        found = sum_label(text)
        assert found is not None and found[0] == "tax", text
    assert sum_label("5 Stück") is None and sum_label("19 % Rabatt") is None
    assert sum_label("Cena bez daně:") == ("net", len("Cena bez daně"))
    comma = NumberStyle(",", ".")
    assert cell_amount("Kč 12.100,-", comma) == Decimal("12100")
    assert cell_amount("45.-", NumberStyle(".", ",")) == Decimal("45")
    assert currency_of("Kč 900") == "CZK"


def test_dots_that_only_group_thousands_make_a_decimal_comma_document() -> None:
    assert number_styles("Kč 1.000  Kč 9.000  Kč 12.100,-")[0] == NumberStyle(",", ".")
    assert number_styles("Net 1.000  Tax 190")[0] == NumberStyle(",", ".")
    assert number_styles("Net 1,000.00  Tax 190.00")[0] == NumberStyle(".", ",")


def test_more_party_headings_and_labels() -> None:
    from conveyor.agents.invoice_labels import TITLE
    from conveyor.agents.invoice_party_labels import party_heading

    assert party_heading("Provider") == ("seller", 8)
    assert party_heading("Aussteller") == ("seller", 10)
    assert party_heading("Recipient") == ("buyer", 9)
    assert party_heading("Empfänger") == ("buyer", 9)
    assert party_heading("Kupující") == ("buyer", 8)
    assert TITLE.match(fold("Faktura")) and TITLE.match(fold("Fatura"))
    found = field_label("Payment until:")
    assert found is not None and found[0] == "due"
    found = field_label("Datum splatnosti")
    assert found is not None and found[0] == "due"


MENU_CARDS = "Design of the menu cards"
SWISS_LETTER: Draw = [
    (160, 20, "Atelier Brun GmbH"),
    (160, 28, "c/o Lea Brun"),
    (160, 36, "Seeweg 4"),
    (160, 44, "4051 Basel"),
    (40, 80, "Kantonsschule Olten"),
    (40, 88, "Mensa"),
    (40, 96, "Bahnhofstrasse 12"),
    (40, 104, "4600 Olten"),
    (40, 130, "Invoice KSO-7"),
    (40, 150, "Date:"),
    (110, 150, "30.06.2023"),
    (40, 160, "Payment until:"),
    (110, 160, "30.07.2023"),
    (40, 200, "Pos. Description"),
    (300, 200, "Quantity Unit price Price"),
    (40, 212, "1"),
    # The quantity drawn right after the description, too close to be its own cell.
    (300 - stringWidth("Design of the menu cards ", "Helvetica", 9), 212, MENU_CARDS),
    (300, 212, "12 h"),
    (345, 212, "150.00"),
    (400, 212, "1'800.00"),
    (40, 224, "2"),
    (60, 224, "Printing"),
    (300, 224, "2 pcs"),
    (345, 224, "100.00"),
    (400, 224, "200.00"),
    (60, 240, "Sub-Total"),
    (400, 240, "2'000.00"),
    (60, 252, "plus VAT 8.1%"),
    (400, 252, "162.00"),
    (60, 264, "Total"),
    (400, 264, "2'162.00"),
]


def test_a_letter_with_the_seller_block_over_the_buyer_and_a_header_of_two_word_labels() -> None:
    data = read(SWISS_LETTER)["data"]
    assert isinstance(data, dict)
    # The seller's "c/o" line and street are its own block, not the buyer.
    assert data["vendor"]["name"] == "Atelier Brun GmbH"
    assert data["customer"]["name"] == "Kantonsschule Olten"
    assert data["due_date"] == "2023-07-30"
    assert (data["subtotal"], data["tax"], data["total"]) == ("2000.00", "162.00", "2162.00")
    # "Unit price" is one label and "Price" the amount; "12 h" printed against the
    # description is the quantity.
    first, second = data["line_items"]
    assert (first["quantity"], first["unit_price"], first["amount"]) == ("12", "150.00", "1800.00")
    assert first["description"] == "Design of the menu cards"
    assert (second["quantity"], second["amount"]) == ("2", "200.00")


def test_header_labels_of_several_words_and_the_last_price_as_the_amount() -> None:
    from conveyor.agents.invoice_table_header import find_header
    from conveyor.documents.layout import lines_of

    text = extract_text(pdf([(40, 100, "Qty"), (80, 100, "Item"), (300, 100, "Unit price Price")]))
    (line,) = lines_of(text.layouts(1)[0])
    header = find_header(line)
    assert header is not None
    assert [c.kind for c in header.columns] == ["quantity", "description", "price", "amount"]


QTY_FIRST_LETTER: Draw = [
    (40, 60, "Harbor Repairs LLC", 14),
    (40, 76, "8 Pier Road, Portland, OR 97201"),
    (40, 120, "Bill To"),
    (40, 132, "Customer"),
    (40, 144, "1 Main St, Salem, OR 97301"),
    (340, 120, "Invoice #2024-05-17"),
    (122, 170, "Portland, May 17, 2024"),
    (40, 200, "QTY"),
    (80, 200, "Description"),
    (400, 200, "Price"),
    (500, 200, "Amount"),
    (40, 214, "1"),
    (80, 214, "Hull inspection"),
    (400, 214, "90.00"),
    (500, 214, "$90.00"),
    (40, 228, "3"),
    (80, 228, "Paint, litres"),
    (400, 228, "20.00"),
    (500, 228, "$60.00"),
    (400, 250, "Subtotal"),
    (500, 250, "$150.00"),
    (400, 262, "10% Tax:"),
    (500, 262, "$15.00"),
    (400, 274, "Total"),
    (500, 274, "$165.00"),
]


def test_a_quantity_first_table_a_hashed_number_and_a_letter_s_date_line() -> None:
    result = read(QTY_FIRST_LETTER)
    data = result["data"]
    assert isinstance(data, dict)
    # "#" marks a number even when it looks like a date.
    assert data["number"] == "2024-05-17"
    # No labelled date: the letter's "Town, date" line, believed a little less.
    assert data["issue_date"] == "2024-05-17"
    fields = result["fields"]
    assert isinstance(fields, dict) and fields["issue_date"] < 0.9
    # "Bill To" over "Customer": the block's first line is its name.
    assert data["customer"]["name"] == "Customer"
    assert [i["quantity"] for i in data["line_items"]] == ["1", "3"]
    assert data["tax"] == "15.00"


def test_a_value_half_a_line_below_beside_its_label() -> None:
    data = read(
        [
            (40, 60, "Nordlicht GmbH", 14),
            (40, 100, "Rechnung Nr. 7"),
            (300, 120, "Rechnungsdatum"),
            (420, 120, "05.03.2016"),
            (300, 134, "Fällig am"),
            (420, 139, "19.03.2016"),
            (300, 180, "Gesamtbetrag"),
            (420, 180, "119,00 €"),
        ]
    )["data"]
    assert isinstance(data, dict) and data["due_date"] == "2016-03-19"


def test_names_are_not_legal_forms_alone_nor_headings() -> None:
    from conveyor.agents.invoice_parties import Party, _not_a_label

    data = read(
        [
            (48, 30, "Your Garage Inc.", 14),
            (48, 50, "1234 Company St,"),
            (48, 62, "Company Town, ST 12345"),
            (380, 100, "INVOICE", 16),
            (340, 130, "Invoice #"),
            (480, 130, "77"),
            (380, 200, "Total"),
            (480, 200, "$126.00"),
        ]
    )["data"]
    assert isinstance(data, dict) and data["vendor"]["name"] == "Your Garage Inc."
    assert _not_a_label(Party("Bill To", 0.85)).name is None
    assert _not_a_label(Party("Faktura", 0.75)).name is None
    assert _not_a_label(Party("Petr Nový", 0.75)).name == "Petr Nový"


def test_no_field_of_an_invoice_whose_sums_do_not_add_up_is_trusted() -> None:
    assert max(read(FR)["fields"].values()) >= 0.9  # type: ignore[attr-defined]
    broken = [(x, y, t.replace("1 608,00", "1 708,00"), *rest) for x, y, t, *rest in FR]
    fields = read(broken)["fields"]
    assert isinstance(fields, dict) and max(fields.values()) < 0.9


def test_a_name_alone_under_its_heading_is_not_trusted_without_an_address() -> None:
    from conveyor.agents.invoice_parties import Party
    from conveyor.agents.invoice_reader import _corroborated
    from conveyor.agents.invoice_sheet import Sheet

    sheet = Sheet.of(extract_text(pdf([(40, 40, "Seller"), (40, 52, "Kiosk Blau")])))
    assert _corroborated(sheet, Party("Kiosk Blau", 0.97)) < 0.9
    assert _corroborated(sheet, Party("Kiosk Blau", 0.97, address="Hafen 1, 20457 Hamburg")) > 0.9


def test_shipping_and_a_discount_between_the_net_and_the_total() -> None:
    data = read(
        [
            (40, 40, "Blue Ridge Outfitters LLC", 14),
            (40, 56, "77 Summit Ave, Asheville, NC 28801"),
            (380, 40, "INVOICE", 16),
            (380, 70, "Invoice #"),
            (470, 70, "BR-5512"),
            (380, 84, "Invoice Date"),
            (470, 84, "03/14/2024"),
            (40, 120, "Bill To"),
            (40, 132, "Trailhead Camp Inc."),
            (40, 144, "1 Lake Rd, Boone, NC 28607"),
            (40, 180, "Description"),
            (300, 180, "Qty"),
            (380, 180, "Unit Price"),
            (480, 180, "Amount"),
            (40, 196, "Tent, 4 person"),
            (300, 196, "2"),
            (380, 196, "150.00"),
            (480, 196, "300.00"),
            (380, 230, "Subtotal"),
            (480, 230, "300.00"),
            (380, 244, "Discount"),
            (480, 244, "-30.00"),
            (380, 258, "Shipping & Handling"),
            (480, 258, "25.00"),
            (380, 272, "Sales Tax"),
            (480, 272, "19.60"),
            (380, 286, "Total"),
            (480, 286, "314.60"),
            (380, 300, "Cash"),
            (480, 300, "320.00"),
            (380, 314, "Change"),
            (480, 314, "5.40"),
        ]
    )["data"]
    assert isinstance(data, dict)
    # The net is the total without VAT (EN 16931 BT-109): 300.00 - 30.00 + 25.00.
    assert (data["subtotal"], data["tax"], data["total"]) == ("295.00", "19.60", "314.60")


def test_more_sum_labels() -> None:
    kinds = {
        "CGST 9%": "tax",
        "IGST @18%": "tax",
        "Taxable Value": "net",
        "Amount before tax": "net",
        "Total Amount Due": "due",
        "Invoice Amount": "gross",
        "Shipping & Handling": "charge",
        "Versandkosten": "charge",
        "Frais de port": "charge",
        "Rabatt": "discount",
        "Change": "-sum",
        "Cash tendered": "-sum",
        "Tip": "-sum",
    }
    for text, kind in kinds.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, text
    assert sum_label("Cardboard box") is None


def test_a_hashed_number_behind_an_unknown_label_is_a_guess() -> None:
    result = read(
        [
            (40, 40, "Festival Tech Ltd.", 14),
            (380, 40, "F A C T U R A", 16),
            (380, 70, "Referencia: #1721"),
            (380, 84, "Pedido #55"),
            (380, 200, "Total"),
            (480, 200, "£774.70"),
        ]
    )
    data, fields = result["data"], result["fields"]
    assert isinstance(data, dict) and isinstance(fields, dict)
    assert data["number"] == "1721" and fields["number"] < 0.8


def test_a_row_that_does_not_multiply_out_keeps_its_quantity_and_price_columns() -> None:
    from conveyor.agents.invoice_sheet import Sheet
    from conveyor.agents.invoice_table_header import find_header
    from conveyor.agents.invoice_table_row import read_row

    sheet = Sheet.of(
        extract_text(
            pdf(
                [
                    (40, 100, "Item"),
                    (250, 100, "Quantity"),
                    (330, 100, "Price per item"),
                    (430, 100, "10% VAT"),
                    (520, 100, "Amount"),
                    (40, 120, "Support"),
                    (250, 120, "20"),
                    (330, 120, "$ 15"),
                    (430, 120, "$ 30"),
                    (520, 120, "$ 330"),
                ]
            )
        )
    )
    header = find_header(sheet.lines[0])
    assert header is not None and "price" in [c.kind for c in header.columns]
    row = read_row(sheet.lines[1], header, sheet)
    assert row is not None
    assert (row.item.quantity, row.item.unit_price, row.item.amount) == (
        Decimal(20),
        Decimal(15),
        Decimal(330),
    )
    assert row.confidence < 0.9  # as printed, not multiplied out


def test_polish_and_finnish_labels_a_spaced_series_number_and_a_reference() -> None:
    from conveyor.agents.invoice_number import _token
    from conveyor.agents.invoice_party_labels import party_heading

    assert _token("FV 7/2021") == "FV 7/2021" and _token("A-17 vom 1.2.2026") == "A-17"
    for text, kind in {
        "Faktura nr": "number",
        "Data wystawienia:": "issue",
        "Termin płatności:": "due",
        "Data sprzedaży:": "-date",
        "Laskun nro:": "number",
        "Eräpäivä:": "due",
        "Reference:": "reference",
    }.items():
        found = field_label(text)
        assert found is not None and found[0] == kind, text
    for text, kind in {"Do zapłaty": "due", "Kwota VAT": "tax", "Zapłacono": "-sum"}.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, text
    assert party_heading("Sprzedawca") == ("seller", 10)
    assert party_heading("Nabywca") == ("buyer", 7)


def test_a_reference_is_the_number_only_when_none_is_labelled() -> None:
    base: Draw = [(40, 40, "Studio Gris SARL", 14), (380, 200, "Total"), (480, 200, "90.00 EUR")]
    data = read([*base, (40, 100, "Reference:"), (130, 100, "MG2022-7")])["data"]
    assert isinstance(data, dict) and data["number"] == "MG2022-7"
    labelled: Draw = [(40, 100, "Reference:"), (130, 100, "MG2022-7"), (40, 120, "Invoice No. 55")]
    data = read([*base, *labelled])["data"]
    assert isinstance(data, dict) and data["number"] == "55"


def test_a_row_of_sum_labels_over_a_row_of_values_and_a_gross_column_after_the_net() -> None:
    # Drawn without the Polish letters Helvetica lacks; labels are matched folded anyway.
    data = read(
        [
            (40, 40, "Simple App Sp. z o.o.", 14),
            (40, 90, "Faktura nr FV 7/2021"),
            (40, 140, "Lp."),
            (70, 140, "Nazwa"),
            (260, 140, "Ilosc"),
            (310, 140, "Cena netto"),
            (400, 140, "Wartosc netto"),
            (490, 140, "Wartosc brutto"),
            (40, 156, "1"),
            (70, 156, "Prace programistyczne"),
            (260, 156, "1"),
            (310, 156, "1 000,00"),
            (400, 156, "1 000,00"),
            (490, 156, "1 230,00"),
            (300, 200, "Wartosc netto"),
            (400, 200, "Kwota VAT"),
            (490, 200, "Wartosc brutto"),
            (300, 214, "1 000,00"),
            (400, 214, "230,00"),
            (490, 214, "1 230,00"),
        ]
    )["data"]
    assert isinstance(data, dict)
    assert data["number"] == "FV 7/2021"
    assert (data["subtotal"], data["tax"], data["total"]) == ("1000.00", "230.00", "1230.00")
    (item,) = data["line_items"]
    assert (item["quantity"], item["unit_price"], item["amount"]) == ("1", "1000.00", "1000.00")


def test_a_position_joined_to_its_description_is_no_quantity_and_a_shipping_row_stays() -> None:
    from conveyor.agents.invoice_sheet import Sheet
    from conveyor.agents.invoice_table import read_items

    sheet = Sheet.of(
        extract_text(
            pdf(
                [
                    (40, 100, "Pos."),
                    (90, 100, "Bezeichnung"),
                    (300, 100, "Menge"),
                    (380, 100, "Einzelpreis"),
                    (480, 100, "Betrag"),
                    (40, 116, "1 Prace programistyczne"),
                    (300, 116, "2"),
                    (380, 116, "10,00"),
                    (480, 116, "20,00"),
                    (40, 132, "Versandkosten"),
                    (300, 132, "1"),
                    (380, 132, "4,90"),
                    (480, 132, "4,90"),
                    (380, 160, "Gesamtbetrag"),
                    (480, 160, "24,90"),
                ]
            )
        )
    )
    items, _, _ = read_items(sheet)
    assert [(i.description, i.quantity, i.amount) for i in items] == [
        ("1 Prace programistyczne", Decimal(2), Decimal("20.00")),
        ("Versandkosten", Decimal(1), Decimal("4.90")),
    ]


def test_a_block_ends_where_the_block_beside_it_begins() -> None:
    from conveyor.agents.invoice_parties import parties
    from conveyor.agents.invoice_sheet import Sheet

    sheet = Sheet.of(
        extract_text(
            pdf(
                [
                    (40, 100, "BILL TO"),
                    (200, 100, "SHIP TO"),
                    (40, 114, "Name"),
                    (200, 114, "Same as recipient"),
                    (40, 128, "1 Main St, Salem, OR 97301"),
                ]
            )
        )
    )
    _, customer = parties(sheet)
    assert customer.name == "Name"  # the block's own first line, not the ship-to cell


def test_a_due_date_stated_in_a_sum_s_label() -> None:
    result = read(
        [
            (40, 40, "Harbor Repairs LLC", 14),
            (340, 60, "INVOICE NO. 98765432 1/1/2000"),
            (300, 200, "SUBTOTAL"),
            (480, 200, "100.00"),
            (300, 214, "TOTAL DUE BY 2/2/2000"),
            (480, 214, "100.00"),
        ]
    )
    data, fields = result["data"], result["fields"]
    assert isinstance(data, dict) and isinstance(fields, dict)
    assert data["issue_date"] == "2000-01-01" and data["due_date"] == "2000-02-02"
    assert fields["due_date"] < 0.9 and fields["issue_date"] < 0.9


def test_a_name_alone_beside_the_labels_is_the_buyer_at_a_guess() -> None:
    result = read(
        [
            (100, 50, "Brasserie Nord", 14),
            (100, 66, "4 Rue des Fleurs"),
            (100, 78, "75000 Paris"),
            (30, 150, "INVOICE", 16),
            (30, 190, "Reference:"),
            (130, 190, "MG2022-1"),
            (280, 190, "Jane Roe"),
            (300, 260, "Amount due"),
            (480, 260, "181.50 EUR"),
        ]
    )
    data, fields = result["data"], result["fields"]
    assert isinstance(data, dict) and isinstance(fields, dict)
    assert data["customer"]["name"] == "Jane Roe" and fields["customer.name"] < 0.7


def test_one_legal_form_vocabulary_found_in_a_line_and_judged_whole() -> None:
    from conveyor.agents.legal_forms import LEGAL_FORM, is_legal_form

    for form in ("GmbH", "Ltd.", "SARL", "B.V.", "S.p.A.", "Inc", "LLC", "Sp. z o.o.", "Oy"):
        assert is_legal_form(form), form
        assert LEGAL_FORM.search(f"Muster {form}, Hauptstr. 1"), form
    # whole: a name's last word, not a word that merely contains one
    assert not is_legal_form("Agency") and not is_legal_form("Incline")
    assert not LEGAL_FORM.search("Agency Seattle")
    # words of running text are not forms there, though a line may still show them
    assert not is_legal_form("Company") and not is_legal_form("as")
    assert LEGAL_FORM.search("Acme Company")


def test_a_letterhead_s_name_is_its_block_s_first_line_not_an_address_code_or_tax_id() -> None:
    out = read(
        [
            (280, 40, "COD.01"),
            (30, 50, "Empresa de Prueba", 12),
            (30, 64, "Direccion de Prueba"),
            (30, 76, "Capital Federal"),
            (330, 90, "CUIT 30-12345678-9"),
            (30, 104, "IVA Responsable Inscripto"),
            (400, 30, "Factura", 14),
            (360, 56, "Nº: 4000-12345678"),
            (360, 72, "Fecha: 27/03/2011"),
            (30, 130, "Sr.(s):"),
            (130, 130, "Joao Da Silva"),
            (30, 144, "Dirección: Rua 76 km 34.5"),
            (400, 300, "Neto:"),
            (500, 300, "100,00"),
            (400, 314, "IVA 21%"),
            (500, 314, "21,00"),
            (400, 328, "Total:"),
            (500, 328, "121,00"),
        ]
    )
    data = out["data"]
    assert isinstance(data, dict)
    assert data["vendor"]["name"] == "Empresa de Prueba"
    # a heading that ends its cell: its value is the cell beside it
    assert data["customer"]["name"] == "Joao Da Silva"
    # nor is a street line a name, when nothing else is
    street = read([(40, 40, "8636 Sentinel Place"), (400, 40, "Jaxson Van Doorn")])["data"]
    assert isinstance(street, dict) and street["vendor"]["name"] != "8636 Sentinel Place"


def test_the_euro_sign_as_a_lone_e_of_a_tex_font_and_summe_brutto() -> None:
    from conveyor.agents.values import currencies_in

    style = NumberStyle(thousands=" ", decimal=",")
    assert cell_amount("2 900,00 e", style) == Decimal("2900.00")
    assert currencies_in("280,00 e 120,00 e")["EUR"] == 2
    assert currencies_in("Rue de la Paix 2,50 e poi")["EUR"] == 0  # once is only a word
    found = sum_label("Summe Brutto 4 266,15 e")
    assert found is not None and found[0] == "gross" and found[1] == len("Summe Brutto")


def test_a_table_row_read_without_its_amount_leaves_no_field_trusted() -> None:
    assert max(read(US)["fields"].values()) >= 0.9  # type: ignore[attr-defined]
    out = read([*US, (40, 272, "Parking"), (300, 272, "3"), (380, 272, "$12.00")])
    items = out["data"]["line_items"]  # type: ignore[index]
    assert items[-1]["amount"] is None
    assert max(out["fields"].values()) < 0.9  # type: ignore[attr-defined]


def test_a_block_set_flush_right_under_its_heading_and_a_created_date() -> None:
    right = 555.0  # every line below ends where its heading does

    def flush(y: float, text: str) -> tuple[float, float, str]:
        return (right - stringWidth(text, "Helvetica", 9), y, text)

    out = read(
        [
            (40, 50, "INVOICE", 20),
            flush(50, "Invoice #: 123"),
            flush(62, "Created: 2018-01-01"),
            (40, 110, "INVOICE FROM"),
            flush(110, "INVOICE TO"),
            (40, 124, "Aperture Science, Inc."),
            flush(124, "Umbrella Corp."),
            (40, 136, "Brevort Lake Rd 1234"),
            flush(136, "123 Queen Victoria St"),
            flush(148, "London EC4N"),
            (40, 220, "Item"),
            flush(220, "Price"),
            (40, 236, "Portal Device"),
            flush(236, "10,000.00 USD"),
            flush(260, "Total: 10,000.00 USD"),
        ]
    )
    data = out["data"]
    assert isinstance(data, dict)
    assert data["customer"]["name"] == "Umbrella Corp."
    assert data["issue_date"] == "2018-01-01"


def test_a_legal_form_names_a_business_only_after_a_word_of_letters() -> None:
    from conveyor.agents.legal_forms import name_forms

    # "AB" (Swedish) ends Dutch postcodes: "1012 AB Amsterdam" is an address line.
    assert name_forms("1012 AB Amsterdam") == []
    assert [m.group(0) for m in name_forms("Lumen Design B.V.")] == ["B.V."]
    data = read(
        [
            (40, 40, "Lumen Design B.V.", 14),
            (40, 58, "Hoofdstraat 82"),
            (40, 70, "1012 AB Amsterdam"),
            (380, 40, "Factuur", 16),
            (380, 70, "Factuurnummer"),
            (480, 70, "2024-723"),
            (40, 150, "Factuur aan"),
            (40, 163, "Bergmann Trading N.V."),
            (40, 175, "Kanaalstraat 52"),
            (40, 187, "3011 AB Rotterdam"),
            (40, 250, "Omschrijving"),
            (300, 250, "Aantal"),
            (380, 250, "Prijs"),
            (500, 250, "Bedrag"),
            (40, 268, "Advieswerk"),
            (300, 268, "2"),
            (380, 268, "100,00"),
            (500, 268, "200,00"),
            (380, 300, "Totaal"),
            (500, 300, "200,00 €"),
        ]
    )["data"]
    assert isinstance(data, dict)
    assert data["vendor"]["name"] == "Lumen Design B.V."
    assert data["customer"]["name"] == "Bergmann Trading N.V."


def test_day_month_year_with_spanish_de_and_ordinal_marks() -> None:
    for text, want in (
        ("1 de mayo de 2025", datetime.date(2025, 5, 1)),
        ("3 de marzo del 2024", datetime.date(2024, 3, 3)),
        ("1° settembre 2025", datetime.date(2025, 9, 1)),
        ("1º de enero de 2026", datetime.date(2026, 1, 1)),
    ):
        assert [t.date for t in dates_in(text)] == [want], text
    assert dates_in("12 de 2024") == []


def test_an_invoice_word_and_a_number_sign_in_either_order_and_any_language() -> None:
    for text in (
        "Factura N.º",
        "N.º de factura",
        "Rg.-Nr.",
        "Réf. facture",
        "Numero della fattura",
        "Invoice Ref",
        "Document ID",
    ):
        found = field_label(text)
        assert found == ("number", len(text)), text
    assert field_label("Bill to") is None and field_label("Inventory") is None


def test_pay_before_and_payment_date_labels_are_due_dates() -> None:
    for text in (
        "À payer avant le",
        "A régler avant le",
        "Date limite de paiement",
        "Uiterste betaaldatum",
        "Fecha límite de pago",
        "Pagamento entro",
        "Vence",
        "Zahlungsdatum",
        "Payment date",
    ):
        assert field_label(text) == ("due", len(text)), text
    out = read(
        [
            (40, 40, "Nordlicht Conseil SAS", 14),
            (40, 58, "38 rue Garibaldi, 75011 Paris"),
            (40, 100, "FACTURE", 16),
            (330, 140, "N° de facture: 2020-565"),
            (330, 154, "Date d'émission: 17/08/2025"),
            (330, 168, "À payer avant le: 31/08/2025"),
            (380, 230, "Total TTC"),
            (500, 230, "120,00 €"),
        ]
    )["data"]
    assert isinstance(out, dict)
    assert (out["issue_date"], out["due_date"]) == ("2025-08-17", "2025-08-31")


def test_buyer_headings_an_invoice_to_in_any_language_and_dotted_quantity_headers() -> None:
    from conveyor.agents.invoice_columns import column_kind
    from conveyor.agents.invoice_party_labels import party_heading

    for text in ("An", "Aan:", "Rechnung an", "Factuur aan", "Fatturare a", "Datos del cliente"):
        assert party_heading(text) == ("buyer", len(text.rstrip(":"))), text
    assert party_heading("Customer details") == ("buyer", 16)
    # the title is no heading: "Factura" must not read as "Factur" + "a"
    for title in ("Factura", "Fattura", "Angebot", "An die Firma"):
        assert party_heading(title) is None, title
    for header in ("Q.tà", "Q.ty", "Uds.", "Stk.", "pcs"):
        assert column_kind(header) == "quantity", header


def test_a_street_of_the_block_beside_the_title_is_not_the_number() -> None:
    draw: Draw = [
        (360, 40, "Rivoli Studio AG", 12),
        (40, 52, "RECHNUNG", 18),
        (360, 54, "Garibaldistraße 74"),
        (360, 66, "10115 Berlin"),
        (40, 140, "Kunde: Lumen Partners AG"),
        (330, 140, "Rechnungsnummer"),  # over its value: less sure than a title's number
        (330, 152, "RE29741"),
        (380, 230, "Gesamtbetrag"),
        (500, 230, "120,00 €"),
    ]
    data = read(draw)["data"]
    assert isinstance(data, dict) and data["number"] == "RE29741"
    # and a number printed alone across the title's line is still the title's
    far: Draw = [(40, 52, "Faktura", 18), (420, 52, "č. 198900000001", 18)]
    far += [(380, 230, "Celkem"), (500, 230, "120,00 Kč")]
    data = read(far)["data"]
    assert isinstance(data, dict) and data["number"] == "198900000001"


def test_a_due_date_written_in_many_words_and_one_value_with_two_dates() -> None:
    base: Draw = [
        (40, 40, "Marina Consulting S.A.", 14),
        (40, 100, "FACTURA", 16),
        (330, 140, "Factura N.º: F-1643"),
        (330, 154, "Fecha factura: 1 de abril de 2025"),
        (380, 230, "Total"),
        (500, 230, "1.440,00 €"),
    ]
    out = read([*base, (330, 168, "Fecha de vencimiento: 1 de mayo de 2025")])
    assert isinstance(out["data"], dict) and out["data"]["due_date"] == "2025-05-01"
    two = read([*base, (330, 168, "Vencimiento: 1 de mayo de 2025 / 1 de junio de 2025")])
    fields = two["fields"]
    assert isinstance(fields, dict) and fields["due_date"] < 0.9


def test_a_bare_no_heading_a_table_column_is_not_surer_than_a_number_label() -> None:
    data = read(
        [
            (40, 35, "Kestrel Consulting Ltd", 14),
            (380, 35, "INVOICE", 16),
            (380, 69, "Number: 2025-064"),
            (380, 81, "Issue date: September 20, 2025"),
            (40, 251, "No."),
            (70, 251, "Item"),
            (300, 251, "Quantity"),
            (400, 251, "Rate"),
            (540, 251, "Total"),
            (40, 269, "1"),
            (70, 269, "Hosting (annual)"),
            (300, 269, "2"),
            (400, 269, "150.00"),
            (540, 269, "300.00"),
            (360, 300, "Total"),
            (540, 300, "£300.00"),
        ]
    )["data"]
    assert isinstance(data, dict) and data["number"] == "2025-064"


def test_typographic_grouping_characters_of_locales() -> None:
    swiss = NumberStyle(".", "'")
    assert cell_amount("CHF 1\u2019234.50", swiss) == Decimal("1234.50")
    assert number_styles("Total CHF 1\u2019234.50\nMWST 94.95")[0] == swiss
    french = NumberStyle(",", " ")
    assert cell_amount("1\u202f234,56 €", french) == Decimal("1234.56")
    assert cell_amount("12\u00a0345\u00a0678,00", french) == Decimal("12345678.00")


def test_a_row_that_sums_the_items_above_it_ends_the_table() -> None:
    draw: Draw = [
        (40, 40, "Northwind Cafe Ltd", 14),
        (40, 55, "4 High Street, London"),
        (40, 100, "INVOICE", 16),
        (40, 120, "Reference:"),
        (130, 120, "MG2022"),
        (30, 200, "Item"),
        (130, 200, "Description"),
        (324, 200, "Unit price"),
        (419, 200, "Quantity"),
        (542, 200, "Total"),
    ]
    for k, (name, price, qty, total) in enumerate(
        [("Coffee", "2.00", "24", "48.00"), ("Pizza", "7.00", "2", "14.00")]
    ):
        y = 220 + 20 * k
        draw += [(30, y, name), (327, y, f"{price} GBP"), (449, y, qty), (516, y, f"{total} GBP")]
    # a note and the subtotal on one line, under the table's description column
    draw += [
        (30, 280, "18/08/2022: The bill is paid."),
        (283, 280, "Subtotal"),
        (511, 280, "62.00 GBP"),
    ]
    draw += [
        (355, 300, "Tax"),
        (516, 300, "6.20 GBP"),
        (312, 320, "Amount due"),
        (511, 320, "68.20 GBP"),
    ]
    data = read(draw)["data"]
    assert isinstance(data, dict)
    assert [item["description"] for item in data["line_items"]] == ["Coffee", "Pizza"]
    assert (data["subtotal"], data["total"]) == ("62.00", "68.20")


def test_a_table_over_two_pages_keeps_its_footer_and_page_numbers_out_of_the_rows() -> None:
    header: Draw = [(40, 60, "Description"), (300, 60, "Qty"), (400, 60, "Unit price")]
    header.append((520, 60, "Amount"))
    first: Draw = [
        (40, 30, "Castello Consulting SA", 14),
        (40, 42, "2 rue Mar, 75011 Paris"),
        (380, 30, "FACTURE", 16),
        (380, 44, "N° de facture: 2020-531"),
        *[(x, y + 200, t) for x, y, t, *_ in header],
        (40, 278, "Maintenance"),
        (300, 278, "3"),
        (400, 278, "150,00"),
        (520, 278, "450,00"),
        # the footer: the seller's line, the page's number
        (40, 800, "Castello Consulting SA"),
        (190, 800, "2 rue Mar"),
        (300, 800, "75011 Paris"),
        (440, 800, "Page 1 sur 2"),
    ]
    second: Draw = [
        (480, 25, "Page 2 sur 2"),
        *header,
        (40, 78, "Création du site"),
        (300, 78, "2"),
        (400, 78, "1 000,00"),
        (520, 78, "2 000,00"),
        (360, 110, "Total HT"),
        (520, 110, "2 450,00"),
        (360, 124, "TVA 20 %"),
        (520, 124, "490,00"),
        (360, 138, "Total TTC"),
        (520, 138, "2 940,00 €"),
    ]
    data = extraction(first, second).data
    items = data["line_items"]
    assert [item["description"] for item in items] == ["Maintenance", "Création du site"]
    assert [item["amount"] for item in items] == ["450.00", "2000.00"]


def test_a_customer_number_label_is_no_buyer_heading() -> None:
    from conveyor.agents.invoice_party_labels import party_heading
    from conveyor.agents.invoice_rules import _BILL_TO

    for text in ("Customer No.: C-1797", "Kunden-Nr.", "N° client", "Client ID 44"):
        assert party_heading(text) is None, text
        assert not _BILL_TO.match(text), text
    assert party_heading("Customer") == ("buyer", 8)
    assert _BILL_TO.match("Customer: Acme Ltd")


def test_a_number_a_date_or_a_street_is_no_party_name() -> None:
    from conveyor.agents.invoice_marks import not_a_name

    for text in ("# 36651", "August 28, 2025", "234 Client Address St, Suite X", "12-34"):
        assert not_a_name(text), text
    for text in ("SuperStore", "1&1 Telecom GmbH", "3 Brothers Ltd", "Foo Bar"):
        assert not not_a_name(text), text


def test_a_buyer_block_that_opens_with_its_street_is_named_by_its_attention_line() -> None:
    invoice = read(
        [
            (400, 60, "Foo Bar Consulting"),
            (400, 72, "1 Baz Road, Leeds LS2 7AB"),
            (60, 150, "Invoice To:"),
            (60, 162, "1 Makebelieve Avenue,"),
            (60, 174, "Sim City"),
            (60, 186, "Attention: Jane Roe"),
            (400, 150, "Invoice No: INV-7"),
            (400, 162, "Date: 2024-03-01"),
            (60, 260, "Description"),
            (300, 260, "Amount"),
            (60, 280, "Consulting"),
            (300, 280, "100.00"),
            (250, 320, "Total"),
            (300, 320, "100.00"),
        ]
    )
    data = invoice["data"]
    assert isinstance(data, dict)
    assert data["customer"]["name"] == "Jane Roe"


def test_a_total_row_with_hours_beside_the_money_and_a_pay_to_seller() -> None:
    invoice = read(
        [
            (250, 60, "INVOICE", 16),
            (250, 90, "Invoice #: 1001"),
            (80, 120, "Invoice Date:"),
            (220, 120, "August 28, 2025"),
            (80, 160, "Bill To:"),
            (80, 174, "Mock Client Inc."),
            (80, 186, "123 Fake Street"),
            (80, 220, "Pay To:"),
            (80, 234, "Jane Maker"),
            (80, 246, "456 Maker Lane"),
            (120, 290, "Project"),
            (290, 290, "Hours"),
            (400, 290, "Rate"),
            (500, 290, "Amount"),
            (120, 310, "Project 1"),
            (290, 310, "24.50"),
            (400, 310, "$75.00"),
            (500, 310, "$1837.50"),
            (120, 328, "TOTAL"),
            (290, 328, "24.50"),
            (500, 328, "$1837.50"),
        ]
    )
    data = invoice["data"]
    assert isinstance(data, dict)
    assert data["vendor"]["name"] == "Jane Maker"
    assert data["total"] == "1837.50"


def test_a_two_digit_year_and_an_abbreviated_date_label() -> None:
    assert [t.date for t in dates_in("Date: 22/10/21")] == [datetime.date(2021, 10, 22)]
    assert dates_in("Page 1/2") == []
    assert dates_in("1.5/2/33.5") == []
    assert field_label("INV DATE") == ("issue", 8)


def test_a_net_alone_is_the_total_when_the_page_says_no_vat_is_charged() -> None:
    draw: Draw = [
        (60, 60, "Muster GmbH, Musterallee 42, 12345 Musterhausen", 7),
        (60, 80, "Martina Musterfrau"),
        (60, 92, "Musterweg 4"),
        (60, 104, "54321 Musterstadt"),
        (400, 140, "Datum: 14.11.2021"),
        (60, 160, "Rechnung 003-2021", 12),
        (60, 200, "Beschreibung"),
        (480, 200, "Gesamt"),
        (60, 220, "Beratung"),
        (480, 220, "457.27 EUR"),
        (60, 240, "Netto"),
        (480, 240, "457.27 EUR"),
    ]
    exempt = read([*draw, (60, 270, "Kein Ausweis von Umsatzsteuer, da Kleinunternehmer.")])
    plain = read(draw)
    assert isinstance(exempt["data"], dict) and isinstance(plain["data"], dict)
    assert exempt["data"]["total"] == "457.27"
    assert plain["data"]["total"] is None


def test_a_subtotal_column_is_the_lines_amount_and_a_quantity_is_no_unit_price() -> None:
    invoice = read(
        [
            (400, 60, "Invoice Number: 7"),
            (400, 72, "Date: 2021-10-22"),
            (30, 120, "Bill From:"),
            (30, 132, "Big Corp Ltd"),
            (30, 144, "2 Flowers Street, London"),
            (30, 200, "Description"),
            (330, 200, "Quantity"),
            (490, 200, "Subtotal"),
            (30, 220, "Nike Air Max"),
            (330, 220, "1"),
            (490, 220, "53 EUR"),
            (30, 240, "Laces"),
            (330, 240, "2"),
            (490, 240, "6 EUR"),
            (330, 280, "Total without VAT"),
            (490, 280, "59 EUR"),
        ]
    )
    data = invoice["data"]
    assert isinstance(data, dict)
    items = data["line_items"]
    assert [(i["description"], i["quantity"], i["amount"]) for i in items] == [
        ("Nike Air Max", "1", "53"),
        ("Laces", "2", "6"),
    ]
    assert all(i["unit_price"] is None for i in items)


def test_a_date_column_header_is_no_issue_date_label_and_a_lone_date_under_the_title_is() -> None:
    invoice = read(
        [
            (60, 60, "Lowland Research Ltd", 14),
            (400, 60, "INVOICE #1", 16),
            (430, 80, "May 7, 2020"),
            (60, 140, "Client"),
            (110, 140, "Some Client Inc."),
            (110, 152, "234 Client Street, Sometown"),
            (60, 300, "Date"),
            (160, 300, "Description"),
            (440, 300, "Hours"),
            (480, 300, "Rate"),
            (520, 300, "Amount"),
            (60, 320, "2020/04/01"),
            (160, 320, "Some activity"),
            (440, 320, "1"),
            (480, 320, "$50"),
            (520, 320, "$50.00"),
            (480, 360, "Total"),
            (520, 360, "$50.00"),
        ]
    )
    data = invoice["data"]
    assert isinstance(data, dict)
    assert data["issue_date"] == "2020-05-07"


def test_a_space_grouping_a_decimal_point_and_signs_only_one_currency_prints() -> None:
    # SI style: "1 250.40" beside a point; offered only when the page shows it.
    assert number_styles("Due CHF 3 480.10\nNet 3 250.40")[0] == NumberStyle(".", " ")
    assert NumberStyle(".", " ") not in number_styles("Net 1,000.00  Tax 190.00")
    assert cell_amount("CHF 3 480.10", NumberStyle(".", " ")) == Decimal("3480.10")
    # A dollar-like sign with its country's letters is that country's currency, read
    # from price-parser's data; a sign several currencies print decides nothing new.
    assert currency_of("R$ 7.310,25") == "BRL" and currency_of("HK$ 88.00") == "HKD"
    assert cell_amount("R$ 7.310,25", NumberStyle(",", ".")) == Decimal("7310.25")
    assert currency_of("412,00 kr") is None


def test_a_payment_slip_s_payee_under_its_account_and_a_payment_reference() -> None:
    from conveyor.agents.bank_codes import is_iban, is_payment_reference

    assert is_iban("CH32 0900 0000 1234 5678 901") and not is_iban("CH33 0900 0000 1234 5678 901")
    assert is_payment_reference("RF74 4711 INV") and not is_payment_reference("RF75 4711 INV")
    assert is_payment_reference("00000 00000 00000 00000 48072 14")
    assert not is_payment_reference("00000 00000 00000 00000 48072 15")
    assert not is_payment_reference("2024-0117")
    slip: Draw = [
        (30, 40, "Zahlteil", 11),
        (30, 70, "Konto / Zahlbar an"),
        (30, 82, "CH32 0900 0000 1234 5678 901"),
        (30, 94, "Kessler Holzbau AG"),
        (30, 106, "Bahnweg 4"),
        (30, 118, "3600 Thun"),
        (30, 140, "Referenz"),
        (30, 152, "RF74 4711 INV"),
        (30, 176, "Zahlbar durch"),
        (30, 188, "Lea Brunner"),
        (30, 200, "Seeweg 9"),
        (30, 212, "6300 Zug"),
    ]
    data = read(slip)["data"]
    assert isinstance(data, dict)
    assert data["vendor"]["name"] == "Kessler Holzbau AG"
    assert data["customer"]["name"] == "Lea Brunner"
    assert data["number"] is None  # the reference is the bank's, not an invoice number


def test_the_amount_word_alone_over_its_value_and_totals_to_pay() -> None:
    for label in ("Montant", "Importo", "Betrag", "Valor total da nota", "VALOR TOTAL DA NFS-e"):
        assert sum_label(label) == ("gross", len(label)), label
    for label in ("Total a pagar", "Valor a pagar"):
        assert sum_label(label) == ("due", len(label)), label
    slip: Draw = [
        (30, 40, "Sezione pagamento", 11),
        (30, 70, "Conto / Pagabile a"),
        (30, 82, "CH32 0900 0000 1234 5678 901"),
        (30, 94, "Fratelli Rossi SA"),
        (30, 106, "Via Cantonale 12"),
        (30, 118, "6900 Lugano"),
        (30, 150, "Valuta"),
        (80, 150, "Importo"),
        (30, 162, "CHF"),
        (80, 162, "1 250.40"),
    ]
    data = read(slip)["data"]
    assert isinstance(data, dict)
    assert data["total"] == "1250.40" and data["currency"] == "CHF"
    assert data["vendor"]["name"] == "Fratelli Rossi SA"


def test_party_boxes_with_a_small_name_label_over_the_name() -> None:
    from conveyor.agents.invoice_marks import not_a_name

    assert not_a_name("CNPJ / CPF / NIF") and not_a_name("VAT / Tax ID")
    assert not not_a_name("Oficina Lima Ltda")
    boxes: Draw = [
        (30, 40, "NOTA DE SERVIÇO", 12),
        (30, 70, "EMITENTE", 6),
        (30, 80, "Prestador", 8),
        (180, 80, "Nº 000.000.417", 8),
        (160, 96, "CNPJ / CPF / NIF", 6),
        (30, 100, "PRESTADOR / FORNECEDOR", 8),
        (160, 100, "12.345.678/0001-90", 8),
        (30, 114, "Nome / Razão social", 6),
        (30, 122, "Oficina Lima Ltda", 8),
        (30, 136, "Endereço", 6),
        (30, 144, "Rua das Flores, 25", 8),
        (30, 170, "TOMADOR / ADQUIRENTE", 8),
        (30, 184, "Nome / Razão social", 6),
        (30, 192, "Padaria Sol Nascente", 8),
        (30, 206, "Endereço", 6),
        (30, 214, "Avenida Central, 900", 8),
    ]
    data = read(boxes)["data"]
    assert isinstance(data, dict)
    assert data["vendor"]["name"] == "Oficina Lima Ltda"
    assert data["customer"]["name"] == "Padaria Sol Nascente"
    # The same label in the size of what is under it is a placeholder name, not a box.
    same_size: Draw = [
        (30, 40, "INVOICE", 14),
        (30, 70, "BILL TO"),
        (30, 82, "Name"),
        (30, 94, "Street Address"),
        (30, 106, "City, ST ZIP Code"),
    ]
    data = read(same_size)["data"]
    assert isinstance(data, dict) and data["customer"]["name"] != "Street Address"


def test_a_serial_number_a_request_to_pay_by_a_date_and_a_service_provider() -> None:
    assert field_label("Serial No. K-2231") == ("weak_number", len("Serial No."))
    assert field_label("Invoice due date:") == ("due", len("Invoice due date"))
    assert field_label("Kindly remit by 2026-04-01") == ("due", len("Kindly remit by"))
    letter: Draw = [
        (40, 50, "INVOICE", 16),
        (380, 50, "Serial No. K-2231"),
        (380, 64, "Invoice date: 2026-03-02"),
        (40, 110, "Service Provider"),
        (300, 110, "Client"),
        (40, 124, "Name:"),
        (110, 124, "Brightline Studio"),
        (300, 124, "Harbor Books LLC"),
        (40, 136, "Street:"),
        (110, 136, "4 Mill Lane"),
        (300, 136, "18 Quay Road"),
        (40, 300, "Please pay until: 2026-03-16"),
    ]
    data = read(letter)["data"]
    assert isinstance(data, dict)
    assert data["number"] == "K-2231"
    assert data["due_date"] == "2026-03-16"
    assert data["vendor"]["name"] == "Brightline Studio"


def test_a_person_over_a_company_in_the_buyer_s_block_and_a_wrapped_seller_name() -> None:
    letter: Draw = [
        (40, 50, "INVOICE", 16),
        (380, 50, "Invoice No: 7781"),
        (40, 100, "Seller:"),
        (40, 112, "Nordlicht"),
        (40, 124, "Werkstätten Lübeck GmbH"),
        (40, 136, "Hafenstraße 3"),
        (300, 100, "Bill to:"),
        (300, 112, "Maria Olsen"),
        (300, 124, "Fjordline Trading Ltd"),
        (300, 136, "7 Pier Street"),
    ]
    data = read(letter)["data"]
    assert isinstance(data, dict)
    assert data["customer"]["name"] == "Fjordline Trading Ltd"  # for Maria Olsen's attention
    assert data["vendor"]["name"] == "Nordlicht Werkstätten Lübeck GmbH"  # one name, wrapped


def test_a_row_s_numbers_centred_on_a_description_of_two_lines() -> None:
    page: Draw = [
        (40, 50, "INVOICE", 16),
        (380, 50, "Invoice No: Q-88"),
        (40, 200, "Qty"),
        (100, 200, "Service"),
        (380, 200, "Rate"),
        (500, 200, "Amount"),
        (100, 230, "Logo redesign"),
        (40, 236.5, "1.00"),
        (380, 236.5, "$120.00"),
        (500, 236.5, "$120.00"),
        (100, 243, "two rounds of drafts"),
        (100, 270, "Brand guide"),
        (40, 276.5, "2.00"),
        (380, 276.5, "$40.00"),
        (500, 276.5, "$80.00"),
        (100, 283, "print and web"),
        (400, 320, "Total"),
        (500, 320, "$200.00"),
    ]
    data = read(page)["data"]
    assert isinstance(data, dict)
    names = [item["description"] for item in data["line_items"]]
    assert names == ["Logo redesign two rounds of drafts", "Brand guide print and web"]


def test_typographic_apostrophes_fold_to_the_ascii_one() -> None:
    assert fold("D\u2019échéance") == "d'echeance"
    assert field_label("Date d\u2019échéance : 01/03/2026") == ("due", len("Date d\u2019échéance"))


def test_sections_of_a_table_each_with_its_subtotal_and_a_total_net_ttc() -> None:
    assert sum_label("Total Net TTC :") == ("gross", len("Total Net TTC"))
    assert sum_label("Total Net HT :") == ("net", len("Total Net HT"))
    page: Draw = [
        (40, 40, "FACTURE", 16),
        (380, 40, "Facture n° : F-2026-014"),
        (40, 200, "Désignation"),
        (300, 200, "Quantité"),
        (380, 200, "Prix unitaire"),
        (480, 200, "Montant"),
        (40, 218, "Fournitures"),
        (40, 232, "Papier A4"),
        (300, 232, "2"),
        (380, 232, "4,00"),
        (480, 232, "8,00"),
        (40, 246, "Encre noire"),
        (300, 246, "1"),
        (380, 246, "12,00"),
        (480, 246, "12,00"),
        (380, 262, "Sous-total :"),
        (480, 262, "20,00"),
        (40, 280, "Main-d'oeuvre"),
        (40, 294, "Montage"),
        (300, 294, "2"),
        (380, 294, "30,00"),
        (480, 294, "60,00"),
        (380, 310, "Sous-total :"),
        (480, 310, "60,00"),
        (380, 330, "Total HT :"),
        (480, 330, "80,00"),
        (380, 344, "TVA 20 % :"),
        (480, 344, "16,00"),
        (380, 358, "Total Net TTC :"),
        (480, 358, "96,00"),
    ]
    data = read(page)["data"]
    assert isinstance(data, dict)
    assert [item["description"] for item in data["line_items"]] == [
        "Papier A4",
        "Encre noire",
        "Montage",
    ]
    assert (data["subtotal"], data["tax"], data["total"]) == ("80.00", "16.00", "96.00")


def test_a_currency_named_in_words_beside_an_amount_or_in_a_column_header() -> None:
    from conveyor.agents.values import currency_word

    assert currency_word("euro") == "EUR" and currency_word("EUR") == "EUR"
    assert currency_word("VALOR") is None and currency_word("uur") is None
    letter: Draw = [
        (40, 50, "Factuur", 14),
        (40, 80, "Graag ontvang ik 96.00 euro voor de lessen van maart."),
        (40, 120, "Wat"),
        (200, 120, "Prijs (euro)"),
        (40, 134, "Les 1"),
        (200, 134, "48.00"),
        (40, 146, "Les 2"),
        (200, 146, "48.00"),
        (40, 170, "Totaal: 96.00"),
    ]
    data = read(letter)["data"]
    assert isinstance(data, dict) and data["currency"] == "EUR"


def test_an_invoice_written_as_a_letter_is_signed_by_its_seller() -> None:
    letter: Draw = [
        (40, 50, "Factuur", 14),
        (40, 80, "Geachte medewerker van de openbare bibliotheek,"),
        (40, 100, "Hierbij factureer ik de workshop van 4 maart: 250.00 euro."),
        (40, 140, "Met vriendelijke groet,"),
        (40, 152, "Sanne de Vries"),
    ]
    data = read(letter)["data"]
    assert isinstance(data, dict) and data["vendor"]["name"] == "Sanne de Vries"
    thanks: Draw = [
        (40, 50, "Factuur", 14),
        (40, 100, "Hierbij factureer ik de workshop van 4 maart: 250.00 euro."),
        (40, 140, "Thank you for your business"),
    ]
    data = read(thanks)["data"]
    assert isinstance(data, dict) and data["vendor"]["name"] != "for your business"


def test_a_section_subtotal_off_by_the_rounding_of_its_rows() -> None:
    page: Draw = [
        (40, 40, "INVOICE", 16),
        (380, 40, "Invoice No: H-310"),
        (40, 200, "Description"),
        (280, 200, "Quantity"),
        (390, 200, "Unit Price"),
        (500, 200, "Amount"),
        (40, 220, "Week 1"),
        (280, 220, "3.33"),
        (390, 220, "10.01"),
        (500, 220, "33.33"),
        (40, 234, "Week 2"),
        (280, 234, "3.33"),
        (390, 234, "10.01"),
        (500, 234, "33.33"),
        (40, 250, "Subtotal"),
        (500, 250, "66.67"),
        (40, 268, "Expenses"),
        (40, 282, "Train ticket"),
        (280, 282, "1"),
        (390, 282, "20.00"),
        (500, 282, "20.00"),
        (400, 310, "Total"),
        (500, 310, "86.67"),
    ]
    data = read(page)["data"]
    assert isinstance(data, dict)
    assert [item["description"] for item in data["line_items"]] == [
        "Week 1",
        "Week 2",
        "Train ticket",
    ]
