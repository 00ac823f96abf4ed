"""Net and tax as the document states them (docs/document-agents.md): a printed net, a tax
printed as zero or an exemption in words give the net (then net = total, tax 0); a total
and no tax at all give neither. Each invoice is a snippet drawn here."""

from __future__ import annotations

from decimal import Decimal

from pytest import MonkeyPatch

from conveyor.agents import invoice_reader
from conveyor.agents.invoice_labels import fold
from conveyor.agents.invoice_sum_labels import NO_VAT
from tests.snippets import Draw, extraction

HEAD: Draw = [
    (40, 40, "Harbour Tools Ltd"),
    (40, 52, "12 Quay Street, Bristol BS1 4DJ"),
    (380, 40, "INVOICE"),
    (380, 60, "Invoice No."),
    (470, 60, "2024-117"),
    (380, 72, "Date"),
    (470, 72, "2024-04-03"),
    (40, 100, "Bill to"),
    (40, 112, "Meadow Farm Supplies Ltd"),
    (40, 124, "4 Mill Lane, Bath BA1 1AA"),
    (40, 170, "Description"),
    (300, 170, "Qty"),
    (380, 170, "Unit price"),
    (470, 170, "Amount"),
    (40, 184, "Garden shears"),
    (300, 184, "2"),
    (380, 184, "150.00"),
    (470, 184, "300.00"),
    (40, 198, "Hedge trimmer"),
    (300, 198, "1"),
    (380, 198, "600.00"),
    (470, 198, "600.00"),
]


def sums(draw: Draw) -> tuple[object, ...]:
    """(net, tax, total) read, as Decimals (equal to the ints the tests write) or None."""
    data = extraction(draw).data
    assert isinstance(data, dict)
    return tuple(
        None if data[k] is None else Decimal(data[k]) for k in ("subtotal", "tax", "total")
    )


GERMAN: Draw = [
    (40, 40, "Hafenwerkzeug GmbH"),
    (40, 52, "Kaistraße 12, 20457 Hamburg"),
    (380, 40, "RECHNUNG"),
    (380, 60, "Rechnungsnummer"),
    (470, 60, "2024-117"),
    (380, 72, "Rechnungsdatum"),
    (470, 72, "03.04.2024"),
    (40, 100, "Rechnungsempfänger"),
    (40, 112, "Wiesenhof Handel GmbH"),
    (40, 124, "Mühlweg 4, 80331 München"),
    (40, 170, "Bezeichnung"),
    (300, 170, "Menge"),
    (380, 170, "Einzelpreis"),
    (470, 170, "Betrag"),
    (40, 184, "Gartenschere"),
    (300, 184, "2"),
    (380, 184, "150,00"),
    (470, 184, "300,00"),
    (40, 198, "Heckenschere"),
    (300, 198, "1"),
    (380, 198, "600,00"),
    (470, 198, "600,00"),
]


def test_a_total_and_no_tax_at_all_give_no_net() -> None:
    # The items make the total, and nothing says no tax is in it (a receipt's total may
    # hold one it does not itemise): the net is stated nowhere.
    assert sums([*HEAD, (380, 230, "Total"), (470, 230, "£900.00")]) == (None, None, 900)
    total: Draw = [(380, 230, "Gesamtbetrag"), (470, 230, "900,00 €")]
    assert sums([*GERMAN, *total]) == (None, None, 900)
    exempt = (40, 270, "Gemäß § 19 UStG wird keine Umsatzsteuer berechnet.")
    assert sums([*GERMAN, *total, exempt]) == (900, 0, 900)


def test_a_tax_printed_as_zero_makes_the_net_the_total() -> None:
    draw: Draw = [*HEAD, (380, 230, "VAT 0%"), (470, 230, "0.00")]
    assert sums([*draw, (380, 244, "Total"), (470, 244, "£900.00")]) == (900, 0, 900)


def test_a_printed_net_is_kept_with_no_tax_line() -> None:
    draw: Draw = [*HEAD, (380, 230, "Subtotal"), (470, 230, "900.00")]
    assert sums([*draw, (380, 244, "Total"), (470, 244, "£900.00")]) == (900, None, 900)
    # The one sum is a net by its label, and all there is to pay: both.
    assert sums([*HEAD, (330, 230, "Total excl. VAT:"), (470, 230, "£900.00")]) == (900, None, 900)


EXEMPTIONS = (
    "VAT not applicable: small business exemption.",
    "Kein Ausweis von Umsatzsteuer, da Kleinunternehmer gem. § 19 UStG.",
    "TVA non applicable, art. 293 B du CGI",
    "Vrijgesteld van btw op grond van artikel 25 Wet OB.",
    "Operación exenta de IVA según el artículo 20 de la Ley 37/1992.",
    "Operazione esente IVA ai sensi dell'art. 10 DPR 633/72.",
    "Factura no afecta o exenta electrónica",
)


def test_an_exemption_in_words_makes_the_tax_zero_and_the_net_the_total() -> None:
    total: Draw = [(380, 230, "Total"), (470, 230, "900.00 EUR")]
    for sentence in EXEMPTIONS:
        assert NO_VAT.search(fold(sentence)), sentence
        assert sums([*HEAD, *total, (40, 270, sentence)]) == (900, 0, 900), sentence
    assert sums([*HEAD, *total]) == (None, None, 900)


def test_the_learned_chooser_s_sums_follow_the_convention_too(monkeypatch: MonkeyPatch) -> None:
    # It reads no words: an exemption stated in them is settled after it (as_stated).
    monkeypatch.setattr(invoice_reader, "LEARNED_SUMS", True)
    total: Draw = [(380, 230, "Gesamtbetrag"), (470, 230, "900,00 €")]
    exempt = (40, 270, "Gemäß § 19 UStG wird keine Umsatzsteuer berechnet.")
    assert sums([*GERMAN, *total, exempt]) == (900, 0, 900)
    assert sums([*GERMAN, *total]) == (None, None, 900)
