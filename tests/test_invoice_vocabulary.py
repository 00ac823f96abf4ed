"""The vocabulary of invoice labels across languages: Scandinavian, Portuguese, Polish and
Latin American Spanish words for the fields and sums, read on snippets written here."""

from __future__ import annotations

import datetime
from decimal import Decimal

from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_party_labels import TAX_ID, party_heading
from conveyor.agents.invoice_sum_labels import NO_VAT
from conveyor.agents.values import NumberStyle, cell_amount, dates_in, month_number
from tests.snippets import extraction


def test_field_labels_of_the_scandinavian_languages_and_portuguese() -> None:
    for text, kind in {
        "Fakturanr.:": "number",
        "Fakturanummer": "number",
        "Fakturadato:": "issue",
        "Fakturadatum": "issue",
        "Forfallsdato:": "due",
        "Forfaldsdato": "due",
        "Förfallodatum": "due",
        "Betalingsfrist:": "due",
        "Sista betalningsdag": "due",
        "Data de emissão:": "issue",
        "Data da fatura": "issue",
        "Data de vencimento": "due",
        "Fatura n.º": "number",
        "Fecha y hora de emisión": "issue",
        "Ordredato:": "-date",
        "Leveransedato:": "-date",
        "Kundenr.:": "-number",
        "Ordrenummer:": "-number",
        "Dato:": "date",
        "Folio: 1234": "number",
        "Folio fiscal": "-number",
        "Número de certificado SAT": "-number",
    }.items():
        found = field_label(text)
        assert found is not None and found[0] == kind, (text, found)


def test_sum_labels_of_the_scandinavian_languages_portuguese_and_spanish() -> None:
    for text, kind in {
        "Sum ekskl. mva": "net",
        "Beløp ekskl. mva": "net",
        "Summa exkl. moms": "net",
        "Total sem IVA": "net",
        "Neto:": "net",
        "Op. Gravadas:": "net",
        "Mva (25 %)": "tax",
        "Moms": "tax",
        "IGV:": "tax",
        "Sum inkl. mva": "gross",
        "Totalt": "gross",
        "I alt": "gross",
        "Sum": "gross",
        "Order Total:": "gross",
        "Å betale": "due",
        "At betale": "due",
        "Att betala": "due",
        "Frakt": "charge",
        "Desconto": "discount",
        "Rabat": "discount",
    }.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, (text, found)
    # "Summe" stays German's gross; a word that begins with "sum" is no label.
    assert sum_label("Summary of services") is None


def test_party_headings_titles_tax_ids_and_no_vat_notes() -> None:
    assert party_heading("Selger")[0] == "seller"  # type: ignore[index]
    assert party_heading("Leverantör")[0] == "seller"  # type: ignore[index]
    assert party_heading("Datos del emisor")[0] == "seller"  # type: ignore[index]
    assert party_heading("Datos del receptor")[0] == "buyer"  # type: ignore[index]
    assert party_heading("Kjøper")[0] == "buyer"  # type: ignore[index]
    assert party_heading("Leveringsadresse")[0] == "other"  # type: ignore[index]
    assert TITLE.match(fold("Kvittering")) and TITLE.match(fold("Receipt"))
    assert TAX_ID.search(fold("Foretaksregisteret: NO 931 793 403 MVA"))
    assert TAX_ID.search(fold("Org.nr. 931 793 403"))
    assert NO_VAT.search(fold("Fritatt for mva etter mval. § 3-6"))
    assert NO_VAT.search(fold("IVA isento ao abrigo do artigo 53.º"))


def test_month_names_of_more_languages_and_an_iso_date_with_its_time() -> None:
    assert month_number("desember") == 12 and month_number("maj") == 5
    assert month_number("março") == 3 and month_number("października") == 10
    assert [t.date for t in dates_in("4. desember 2024")] == [datetime.date(2024, 12, 4)]
    assert [t.date for t in dates_in("Emitida 2017-07-05T09:09:23")] == [datetime.date(2017, 7, 5)]


def test_a_number_alone_under_the_title_past_a_labelled_line() -> None:
    result = extraction(
        [
            (40, 40, "Taller Norte SAC"),
            (400, 60, "FACTURA", 14),
            (385, 80, "E L E C T R Ó N I C A"),
            (385, 100, "R.U.C.: 20123456789"),
            (40, 104, "Dirección: Av Italia 232, Lima"),
            (400, 120, "F001-123", 12),
            (40, 160, "Fecha Emisión: 21/01/2018"),
        ]
    )
    assert isinstance(result.data, dict)
    assert result.data["number"] == "F001-123"
    assert result.fields["number"] < 0.9  # a guess short of a labelled number


def test_more_date_formats() -> None:
    for text, want in {
        "2024.03.04": datetime.date(2024, 3, 4),
        "2024. 03. 04.": datetime.date(2024, 3, 4),
        "04.03.24": datetime.date(2024, 3, 4),
        "Mar-04-2024": datetime.date(2024, 3, 4),
        "04 Mar 24": datetime.date(2024, 3, 4),
        "05-MAR-24": datetime.date(2024, 3, 5),
        "5/Mar/2024": datetime.date(2024, 3, 5),
        "3rd of March 2024": datetime.date(2024, 3, 3),
        "15.januar 2024": datetime.date(2024, 1, 15),
    }.items():
        assert [t.date for t in dates_in(text)] == [want], text
    # Amounts, versions and times are no dates.
    for text in ("Total 1.234.56", "v1.2.3", "08.30 - 12.30 Uhr", "4 items 24"):
        assert dates_in(text) == [], text


def test_accounting_negatives_and_a_code_glued_to_its_amount() -> None:
    point, comma = NumberStyle(".", ","), NumberStyle(",", ".")
    assert cell_amount("(1,234.50)", point) == Decimal("-1234.50")
    assert cell_amount("($1,234.50)", point) == Decimal("-1234.50")
    assert cell_amount("12,50-", comma) == Decimal("-12.50")
    assert cell_amount("EUR 1.234,56-", comma) == Decimal("-1234.56")
    assert cell_amount("USD1,234.00", point) == Decimal("1234.00")
    # A count in parentheses, a rate, a product code, a whole amount with dashed cents.
    assert cell_amount("(2)", point) is None and cell_amount("(19%)", point) is None
    assert cell_amount("SKU123", point) is None
    assert cell_amount("12.100,-", comma) == Decimal("12100")


def test_a_sum_without_or_with_its_tax_in_any_language() -> None:
    for text, kind in {
        "Bedrag excl. BTW": "net",
        "Summe ohne MwSt.": "net",
        "Montant hors TVA": "net",
        "Importe sin IVA": "net",
        "Beløp uten mva": "net",
        "Excl. VAT:": "net",
        "Amount incl. VAT": "gross",
        "Total (inkl. moms)": "gross",
        "Gesamtbetrag inkl. MwSt": "gross",
        "Wartość z VAT": "gross",
    }.items():
        found = sum_label(text)
        assert found is not None and found[0] == kind, (text, found)
    # In parentheses alone it qualifies a column's header, and labels no sum.
    assert sum_label("(ekskl. mva)") is None


def test_an_invoice_word_and_a_date_word_in_either_order() -> None:
    for text in (
        "Fakturadato",
        "Bill date",
        "Datum faktury",
        "Fecha de la factura",
        "Data da fatura",
        "Date of the invoice",
        "Document date",
    ):
        found = field_label(text)
        assert found is not None and found[0] == "issue", (text, found)
    assert field_label("Order date") == ("-date", 10)
    assert field_label("Due date") == ("due", 8)


def test_a_series_over_its_value_beside_the_number_s_label_prefixes_it() -> None:
    result = extraction(
        [
            (40, 40, "Aceros del Norte SA de CV"),
            (250, 60, "Serie"),
            (290, 60, "Folio"),
            (350, 60, "Fecha y hora de emisión"),
            (250, 72, "A"),
            (290, 72, "167ABC"),
            (350, 72, "2017-07-05T09:09:23"),
        ]
    )
    assert isinstance(result.data, dict)
    assert result.data["number"] == "A167ABC"
    assert result.data["issue_date"] == "2017-07-05"
