"""Parties by evidence: a code in groups of digits is no name, no one bills themselves,
and a letterhead set flush right has its name on its first line. Each invoice is a
snippet drawn here."""

from __future__ import annotations

from conveyor.agents.invoice_marks import not_a_name
from tests.snippets import Draw, invoice_data


def read(draw: Draw) -> dict[str, object]:
    return invoice_data(draw)


def test_a_code_in_groups_of_digits_is_no_name() -> None:
    assert not_a_name("NL33 ABNA 0383 9284 93")  # an account whose check digits fail
    assert not_a_name("AB 12 34 56 C")
    assert not not_a_name("Studio 54 Events")
    assert not not_a_name("3M Deutschland GmbH")


SUMS: Draw = [
    (40, 300, "Description"),
    (300, 300, "Qty"),
    (380, 300, "Unit price"),
    (480, 300, "Amount"),
    (40, 316, "Consulting"),
    (300, 316, "2"),
    (380, 316, "100.00"),
    (480, 316, "200.00"),
    (380, 350, "Subtotal"),
    (480, 350, "200.00"),
    (380, 364, "VAT 20%"),
    (480, 364, "40.00"),
    (380, 378, "Total"),
    (480, 378, "240.00 EUR"),
]


def test_a_buyer_named_as_the_seller_is_no_buyer() -> None:
    data = read(
        [
            (40, 40, "Invoice No: 20-A0091"),
            (40, 52, "Issue Date: 2020-11-11"),
            (40, 90, "Nordwind Handel GmbH"),
            (40, 102, "VAT ID: DE837566332"),
            (40, 114, "Hafenstraße 1, 20457 Hamburg"),
            (40, 150, "Erika Mustermann"),
            (40, 162, "VAT ID: AT8375614432"),
            (40, 174, "Ringstraße 5, 1010 Wien"),
            *SUMS,
            (40, 420, "Payment instructions"),
            (40, 432, "Account holder: Nordwind Handel GmbH"),
            (40, 444, "IBAN: DE89 3704 0044 0532 0130 00"),
        ]
    )
    vendor, customer = data["vendor"], data["customer"]
    assert isinstance(vendor, dict) and isinstance(customer, dict)
    assert vendor["name"] == "Nordwind Handel GmbH"
    assert customer["name"] != vendor["name"]


def test_a_letterhead_set_flush_right_is_named_by_its_first_line() -> None:
    data = read(
        [
            (40, 40, "Invoice"),
            (40, 120, "Bill To"),
            (40, 132, "Harbour Tools BV"),
            (40, 144, "Dorpstraat 587"),
            (40, 156, "3884AR Leusden"),
            (555, 120, "Admiral Motors", "right"),
            (555, 132, "2517 N Oak Ave", "right"),
            (555, 144, "Fort Meade", "right"),
            (555, 156, "FL 33941", "right"),
            (555, 168, "United States of America", "right"),
            (555, 190, "NL33 ABNA 0383 9284 93", "right"),
            (400, 220, "Invoice #: V1002"),
            (400, 232, "Created on: 8/1/2022"),
            *SUMS,
        ]
    )
    vendor = data["vendor"]
    assert isinstance(vendor, dict)
    assert vendor["name"] == "Admiral Motors"
