"""The currency of a sign several countries print: "$" is the US dollar unless the page
names a country that prints it for its own (Mexico's RFC, Argentina's CUIT), "kr" the
krone of the country named; the sol's "S/". Each invoice is a snippet drawn here."""

from __future__ import annotations

from conveyor.agents.invoice_currency import _vat_id_currency
from conveyor.agents.values import NumberStyle, cell_amount, currency_of, sign_currencies
from tests.snippets import Draw, extraction


def read(draw: Draw) -> tuple[dict[str, object], dict[str, float]]:
    result = extraction(draw)
    assert isinstance(result.data, dict)
    return result.data, result.fields


def invoice(seller: list[str], sign: str) -> Draw:
    head: Draw = [(40, 40 + 12 * i, text) for i, text in enumerate(seller)]
    return [
        *head,
        (380, 40, "FACTURA"),
        (380, 60, "Factura nº 17"),
        (380, 72, "Fecha 2024-03-04"),
        (300, 200, "Subtotal"),
        (470, 200, f"{sign}100.00"),
        (300, 214, "IVA 16%"),
        (470, 214, f"{sign}16.00"),
        (300, 228, "Total"),
        (470, 228, f"{sign}116.00"),
    ]


def test_a_bare_dollar_sign_is_the_peso_of_the_country_the_page_names() -> None:
    data, fields = read(invoice(["Aceros del Norte SA", "RFC AAA010101AAA"], "$"))
    assert data["currency"] == "MXN" and fields["currency"] < 0.9
    data, _ = read(invoice(["Aceros del Sur SA", "CUIT 30-12345678-9"], "$"))
    assert data["currency"] == "ARS"
    # With no country named, "$" stays the US dollar, and is not trusted either.
    data, fields = read(invoice(["Steel Works LLC"], "$"))
    assert data["currency"] == "USD" and fields["currency"] < 0.9


def test_the_sol_sign_and_the_krone_of_the_country_named() -> None:
    assert currency_of("S/ 200.00") == "PEN" and currency_of("S/. 200.00") == "PEN"
    assert cell_amount("S/ 200.00", NumberStyle(".", ",")) is not None
    assert currency_of("PRODUTOS/SERVIÇOS 1") is None
    assert {"NOK", "DKK", "SEK"} <= sign_currencies("kr")
    data, _ = read(invoice(["Fjord Bygg AS", "Org.nr. NO 931 793 403 MVA"], "kr "))
    assert data["currency"] == "NOK"


def test_no_sign_at_all_is_the_currency_of_the_country_its_vat_ids_name() -> None:
    assert _vat_id_currency("VAT: FI76543218") == "EUR"
    assert _vat_id_currency("USt-IdNr.: DE123456789\nVAT ID: ATU12345678") == "EUR"
    assert _vat_id_currency("VAT Reg No: GB 123 4567 89") == "GBP"
    assert _vat_id_currency("VAT: DK12345678\nVAT: DE123456789") is None  # they disagree
    draw = invoice(["Yritys Oy", "Yritystie 11, 40000 Jyväskylä", "VAT: FI76543218"], "")
    data, fields = read(draw)
    assert data["currency"] == "EUR" and fields["currency"] < 0.9
