"""Arithmetic as the judge of the sums: taxes withheld taken off the total, several taxes
added, a label's qualifier in parentheses, a sum row of net, tax and gross. Each invoice
is a snippet drawn here."""

from __future__ import annotations

from conveyor.agents.invoice_labels import sum_label
from tests.snippets import Draw, extraction


def read(draw: Draw) -> tuple[dict[str, object], dict[str, float]]:
    result = extraction(draw)
    assert isinstance(result.data, dict)
    return result.data, result.fields


HEAD: Draw = [
    (40, 40, "Taller Norte SL"),
    (40, 52, "Calle Mayor 5, 28013 Madrid"),
    (380, 40, "FACTURA"),
    (380, 60, "Factura nº"),
    (470, 60, "2024-117"),
    (380, 72, "Fecha"),
    (470, 72, "03/04/2024"),
    (40, 100, "Cliente"),
    (40, 112, "Lucía Gómez Ruiz"),
    (40, 124, "Calle Sol 9, 41001 Sevilla"),
]


def test_a_tax_withheld_is_taken_off_the_total_and_is_no_part_of_the_net() -> None:
    data, fields = read(
        [
            *HEAD,
            (300, 200, "Base imponible"),
            (470, 200, "1.000,00 €"),
            (300, 214, "IVA 21%"),
            (470, 214, "210,00 €"),
            (300, 228, "Retención IRPF 15%"),
            (470, 228, "-150,00 €"),
            (300, 242, "Total factura"),
            (470, 242, "1.060,00 €"),
        ]
    )
    assert (data["subtotal"], data["tax"], data["total"]) == ("1000.00", "210.00", "1060.00")
    # The withholding is returned with the sums it makes add up, so the invoice's
    # cross-check (net + tax - withheld = total) passes and the sums are trusted.
    assert data["withheld"] == "150.00"
    assert min(fields["subtotal"], fields["tax"], fields["total"], fields["withheld"]) >= 0.9
    assert sum_label("ISR Retenido:") == ("withheld", 12)
    assert sum_label("Withholding tax") == ("withheld", 15)


def test_several_taxes_a_discount_and_qualifiers_in_parentheses_add_up() -> None:
    data, _ = read(
        [
            *HEAD,
            (300, 200, "Subtotal (12 pcs): $1,000.00"),
            (300, 214, "Discount (10%): $100.00"),
            (300, 228, "Shipping & Handling:"),
            (470, 228, "$10.00"),
            (300, 242, "State Tax (6%):"),
            (470, 242, "$54.00"),
            (300, 256, "Federal Tax (2%):"),
            (470, 256, "$18.00"),
            (300, 270, "Order Total: $982.00"),
        ]
    )
    # 1,000 - 100 + 10 + 54 + 18: the net is the total without its taxes.
    assert (data["subtotal"], data["tax"], data["total"]) == ("910.00", "72.00", "982.00")


def test_a_sum_row_of_net_tax_and_gross() -> None:
    data, fields = read(
        [
            *HEAD,
            (380, 84, "Valuta: NOK"),
            (40, 180, "Beskrivelse"),
            (300, 180, "Beløp (ekskl. mva)"),
            (400, 180, "Mva (25 %)"),
            (480, 180, "Beløp (inkl. mva)"),
            (40, 260, "Sum"),
            (300, 260, "1 000,00"),
            (400, 260, "250,00"),
            (480, 260, "1 250,00"),
        ]
    )
    assert (data["subtotal"], data["tax"], data["total"]) == ("1000.00", "250.00", "1250.00")
    assert fields["total"] >= 0.9


def test_a_column_named_subtotal_is_no_sum_and_a_row_with_the_rate_between() -> None:
    data, _ = read(
        [
            *HEAD,
            (40, 180, "Description"),
            (250, 180, "Price"),
            (330, 180, "Quantity"),
            (470, 180, "Subtotal"),
            (40, 196, "Website design"),
            (250, 196, "€34.20"),
            (330, 196, "100"),
            (470, 196, "€3,420.00"),
            (40, 210, "Website development"),
            (250, 210, "€45.50"),
            (330, 210, "100"),
            (470, 210, "€4,550.00"),
            (300, 260, "Total due"),
            (300, 274, "€7,970.00"),
        ]
    )
    # The first item's amount under the "Subtotal" column is not the invoice's net.
    assert data["total"] == "7970.00" and data["subtotal"] != "3420.00"
    data, _ = read(
        [
            *HEAD,
            (40, 180, "Tuote"),
            (200, 180, "Veroton"),
            (280, 180, "ALV-%"),
            (350, 180, "ALV"),
            (450, 180, "Verollinen"),
            (40, 196, "Konsultointi"),
            (200, 196, "200,00"),
            (280, 196, "24,00"),
            (350, 196, "48,00"),
            (450, 196, "248,00"),
            (40, 212, "Yhteensä"),
            (200, 212, "200,00"),
            (280, 212, "24,00"),
            (350, 212, "48,00"),
            (450, 212, "248,00"),
        ]
    )
    assert (data["subtotal"], data["tax"], data["total"]) == ("200.00", "48.00", "248.00")


def test_a_net_and_its_tax_with_no_total_printed_make_it_at_a_guess() -> None:
    data, fields = read(
        [
            *HEAD,
            (300, 200, "Op. Gravadas:"),
            (470, 200, "S/ 200.00"),
            (300, 214, "IGV:"),
            (470, 214, "S/ 36.00"),
        ]
    )
    assert (data["subtotal"], data["tax"], data["total"]) == ("200.00", "36.00", "236.00")
    assert data["currency"] == "PEN"
    assert fields["total"] < 0.9


def test_a_lone_netto_or_brutto_qualifies_the_words_before_it() -> None:
    """Totals printed as "<label> | netto | <amount>" in three columns, followed by a paid
    amount, a rounding and the amount due, and a VAT breakdown whose rows add up by
    themselves: the document's sums are the labelled ones, not a breakdown row or the
    rounding that happens to make one."""
    rows = [
        ("Summe aller Positionen", "netto", "2.000,00"),
        ("Gesamtsumme", "netto", "2.000,00"),
        ("Summe Umsatzsteuer", "", "380,00"),
        ("Gesamtsumme", "brutto", "2.380,00"),
        ("Gezahlter Betrag", "brutto", "100,00"),
        ("Rundungsbetrag", "brutto", "0,00"),
        ("Fälliger Betrag", "brutto", "2.280,00"),
        ("Aufschlüsselung der Umsatzsteuer", "", ""),
        ("Gesamtsumme", "netto", "300,00"),
        ("Umsatzsteuerbetrag", "", "-57,00"),
    ]
    draw: Draw = [
        (40, 40, "Werkstatt Nord GmbH"),
        (40, 52, "Hauptstraße 5, 20095 Hamburg"),
        (380, 40, "RECHNUNG"),
        (380, 60, "Rechnungsnummer:"),
        (470, 60, "R-2024-117"),
        (380, 72, "Rechnungsdatum:"),
        (470, 72, "03.04.2024"),
    ]
    for n, (label, qualifier, amount) in enumerate(rows):
        y = 200 + 14 * n
        draw += [(300, y, label), (420, y, qualifier), (480, y, amount)]
    data, _ = read([d for d in draw if d[2]])
    assert (data["subtotal"], data["tax"], data["total"]) == ("2000.00", "380.00", "2380.00")
    assert sum_label("Gezahlter Betrag brutto") == ("-sum", 16)
    assert sum_label("Rundungsbetrag brutto")[0] == "-sum"  # type: ignore[index]
    assert sum_label("Fälliger Betrag brutto")[0] == "due"  # type: ignore[index]
    assert sum_label("Summe MwSt.")[0] == sum_label("Totale IVA")[0] == "tax"  # type: ignore[index]
