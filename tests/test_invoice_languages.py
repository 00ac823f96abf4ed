"""The vocabulary of invoices in more languages (Romanian, Czech, Slovak, Hungarian,
Croatian, Slovene, Bulgarian, Lithuanian, Latvian, Estonian, Finnish, Turkish, Catalan,
Greek), read on snippets written here: labels, sums, party headings, column headers,
legal forms, and the folding that lets Greek and Cyrillic labels match."""

# Greek and Cyrillic letters are the words' own, not look-alikes of Latin ones.
# ruff: noqa: RUF001

from __future__ import annotations

from conveyor.agents.invoice_labels import field_label, fold


def test_folding_drops_greek_accents_and_the_final_sigma() -> None:
    assert fold("Σύνολο φόρος") == "συνολο φοροσ"
    assert fold("ΗΜΕΡΟΜΗΝΙΑ") == "ημερομηνια"
    assert len(fold("Ώρα ΐ")) == len("Ώρα ΐ")
    assert fold("Счёт-фактура") == "счет-фактура"


def test_the_numero_sign_is_a_number_sign() -> None:
    assert fold("№") == "#"
    found = field_label("Fattura № 12")
    assert found is not None and found[0] == "number"


def test_a_label_ends_where_its_word_ends_in_any_script() -> None:
    assert field_label("Datumλ") is None
    found = field_label("Datum: 04.03.2024")
    assert found == ("date", 5)
