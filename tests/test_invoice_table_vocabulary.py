"""Item tables headed in more languages (Norwegian, Danish, Swedish, Portuguese, Latin
American Spanish), and taxes printed under each item that do not end the table. Each
table is a snippet drawn here."""

from __future__ import annotations

from conveyor.agents.invoice_columns import column_kind
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_table import read_items
from conveyor.documents.text import extract_text
from tests.snippets import Draw, invoice_data, pdf


def items(draw: Draw) -> list[dict[str, object]]:
    lines = invoice_data(draw)["line_items"]
    assert isinstance(lines, list)
    return lines


def table(draw: Draw) -> list[dict[str, object]]:
    """The item table alone, as invoice_table reads it (no other field to decide)."""
    rows, _, _ = read_items(Sheet.of(extract_text(pdf(draw))))
    return [row.model_dump(mode="json") for row in rows]


def test_column_headers_of_more_languages() -> None:
    for text, kind in {
        "Beskrivelse": "description",
        "Beskrivning": "description",
        "Descrição": "description",
        "Antall": "quantity",
        "Antal": "quantity",
        "Quantidade": "quantity",
        "Enh.pris": "price",
        "Enhetspris": "price",
        "à-pris": "price",
        "Valor Unitario": "price",
        "Preço unitário": "price",
        "Beløp": "amount",
        "Belopp": "amount",
        "Valor Total": "amount",
        "Mva (25 %)": "rate",
        "Moms %": "rate",
        "Enhet": "unit",
        "Desconto": "discount",
        "Name": "description",
        "Product name": "description",
        "Count": "quantity",
    }.items():
        assert column_kind(text) == kind, (text, column_kind(text))


def test_a_norwegian_table() -> None:
    found = items(
        [
            (40, 40, "Fjord Bygg AS"),
            (380, 40, "FAKTURA"),
            (380, 60, "Fakturanr.: 1077"),
            (380, 72, "Fakturadato: 2024-04-04"),
            (40, 160, "Beskrivelse"),
            (250, 160, "Antall"),
            (320, 160, "Enh.pris"),
            (420, 160, "Beløp"),
            (40, 180, "Arbeid etter avtale"),
            (250, 180, "2"),
            (320, 180, "1 000,00"),
            (420, 180, "2 000,00"),
            (40, 194, "Materialer"),
            (250, 194, "1"),
            (320, 194, "311,41"),
            (420, 194, "311,41"),
            (320, 230, "Sum ekskl. mva"),
            (420, 230, "2 311,41"),
        ]
    )
    assert [(i["description"], i["quantity"], i["unit_price"], i["amount"]) for i in found] == [
        ("Arbeid etter avtale", "2", "1000.00", "2000.00"),
        ("Materialer", "1", "311.41", "311.41"),
    ]


def test_taxes_under_each_item_do_not_end_the_table() -> None:
    found = items(
        [
            (40, 40, "Aceros del Norte SA de CV"),
            (380, 40, "FACTURA"),
            (380, 60, "Folio: 167"),
            (40, 160, "Descripción"),
            (250, 160, "Valor Unitario"),
            (350, 160, "Cantidad"),
            (450, 160, "Importe"),
            (40, 180, "ACERO"),
            (250, 180, "$1,000.00"),
            (350, 180, "1.5"),
            (450, 180, "$1,500.00"),
            (40, 192, "Traslado 002 - IVA"),
            (450, 192, "$240.00"),
            (40, 204, "Retención 001 - ISR"),
            (450, 204, "$150.00"),
            (40, 216, "ZAMAC"),
            (250, 216, "$100.00"),
            (350, 216, "2"),
            (450, 216, "$200.00"),
            (250, 250, "Subtotal:"),
            (450, 250, "$1,700.00"),
        ]
    )
    assert [(i["description"], i["quantity"], i["unit_price"], i["amount"]) for i in found] == [
        ("ACERO", "1.5", "1000.00", "1500.00"),
        ("ZAMAC", "2", "100.00", "200.00"),
    ]


def test_numbers_set_close_under_two_columns_and_an_amount_that_includes_its_vat() -> None:
    found = table(
        [
            (40, 40, "Admiral Tools Ltd"),
            (380, 40, "INVOICE"),
            (380, 60, "Invoice #: V1002"),
            (40, 160, "Description"),
            (300, 160, "Qty"),
            (345, 160, "Price"),
            (410, 160, "Dsc"),
            (445, 160, "VAT"),
            (500, 160, "Amount"),
            # Quantity and price, discount and VAT rate: each pair one run of words.
            (40, 180, "Expensive Watch"),
            (300, 180, "14 $458,845.25"),
            (410, 180, "7% 14.5%"),
            (500, 180, "$6,840,419.10"),
            (40, 194, "Toothbrush"),
            (300, 194, "62"),
            (345, 194, "$5.10"),
            (445, 194, "9%"),
            (500, 194, "$344.66"),
        ]
    )
    assert [(i["quantity"], i["unit_price"], i["amount"]) for i in found] == [
        ("14", "458845.25", "6840419.10"),
        ("62", "5.10", "344.66"),
    ]


def test_the_lone_e_of_a_tex_euro_is_no_unit_of_a_quantity() -> None:
    found = table(
        [
            (60, 160, "Description"),
            (400, 160, "P.U. HT"),
            (460, 160, "Qté"),
            (505, 160, "Total"),
            (60, 180, "Description du service"),
            (400, 180, "450,00 e"),
            (467, 180, "2"),
            (501, 180, "900 e"),
            (60, 196, "Forfait mensuel"),
            (400, 196, "200,00 e"),
            (467, 196, "1"),
            (501, 196, "200 e"),
        ]
    )
    assert [(i["quantity"], i["unit_price"]) for i in found] == [("2", "450.00"), ("1", "200.00")]
