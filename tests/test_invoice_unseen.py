"""Rules taught by layouts the reader had not been tuned on, each stated for any invoice
and checked on a snippet drawn here: currency names in any case, legal forms of more
countries, labels and headings that are no names, headings in two languages, due dates
in a sentence."""

from __future__ import annotations

from decimal import Decimal

from conveyor.agents.values import NumberStyle, cell_amount, currency_word
from tests.snippets import invoice_data

COMMA = NumberStyle(",", ".")


def party(data: dict[str, object], key: str) -> object:
    value = data[key]
    assert isinstance(value, dict)
    return value["name"]


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
