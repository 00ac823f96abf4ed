"""The learned item-row chooser: its candidates and features, the shipped model aligned by
feature name, and its place in the offline reader (only where the rules read no item)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from conveyor.agents import invoice_item_model
from conveyor.agents.invoice_item_features import FEATURES, candidates
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.offline import extract_offline, rules_invoice
from conveyor.documents.text import extract_text
from tests.snippets import Draw, pdf

# A table headed in words the rules' vocabulary does not know as a header ("Usługa",
# "Cena" alone, "Wart."): they read no item here.
UNKNOWN_HEADER: Draw = [
    (42, 40, "Studio Projektowe Nowak"),
    (42, 55, "ul. Jasna 10, 12-345 Kraków"),
    (42, 100, "Faktura Nr 7/2024"),
    (42, 115, "Data wystawienia: 12.03.2024"),
    (42, 200, "Usługa"),
    (300, 200, "Ilość"),
    (360, 200, "Cena"),
    (470, 200, "Wart."),
    (42, 220, "Projekt strony"),
    (300, 220, "2"),
    (360, 220, "150,00"),
    (470, 220, "300,00"),
    (42, 235, "Hosting roczny"),
    (300, 235, "12"),
    (360, 235, "10,00"),
    (470, 235, "120,00"),
    (360, 265, "Razem"),
    (470, 265, "420,00"),
]


def test_candidates_and_their_features() -> None:
    sheet = Sheet.of(extract_text(pdf(UNKNOWN_HEADER)))
    found = {sheet.lines[c.index].text: c for c in candidates(sheet)}
    row = found["Projekt strony 2 150,00 300,00"]
    assert (row.reading.quantity, row.reading.unit_price) == (Decimal(2), Decimal("150.00"))
    assert row.reading.amount == Decimal("300.00")
    assert row.features["fits"] == 1.0 and row.features["aligned_below"] == 1.0
    assert row.features["run_sums"] == 1.0  # 300,00 + 120,00 is the 420,00 under them
    total = found["Razem 420,00"]
    assert total.features["sum_label"] == 1.0 and "fits" not in total.features
    assert len(row.vector()) == len(FEATURES)


def test_where_the_rules_read_no_item_the_model_reads_them_unsure() -> None:
    text = extract_text(pdf(UNKNOWN_HEADER))
    invoice, _, _ = rules_invoice(text)
    assert invoice.line_items == []
    extraction = extract_offline(text, "invoice")
    items = extraction.data["line_items"]
    assert [(i["description"], i["quantity"], i["unit_price"], i["amount"]) for i in items] == [
        ("Projekt strony", "2", "150.00", "300.00"),
        ("Hosting roczny", "12", "10.00", "120.00"),
    ]
    assert 0.5 <= extraction.fields["line_items"] <= invoice_item_model.TRUST


def test_switched_off_the_reader_reads_no_item(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(invoice_item_model, "LEARNED_ITEMS", False)
    extraction = extract_offline(extract_text(pdf(UNKNOWN_HEADER)), "invoice")
    assert extraction.data["line_items"] == []


def test_the_weights_are_aligned_by_feature_name() -> None:
    data = {"features": ["fits", "bias", "not_a_feature"], "coef": [2.0, -1.0, 5.0]}
    model = invoice_item_model.from_json(data)
    assert len(model.weights) == len(FEATURES)
    assert model.weights[FEATURES.index("fits")] == 2.0
    assert model.weights[FEATURES.index("bias")] == -1.0
    assert model.weights[FEATURES.index("sum_label")] == 0.0  # not in the file: no weight
    shipped = invoice_item_model.load()
    assert len(shipped.weights) == len(FEATURES) and any(shipped.weights)
