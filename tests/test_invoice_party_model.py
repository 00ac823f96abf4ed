"""The learned party chooser: its candidates and features, the shipped models read by
feature name without scikit-learn, and its place in the offline reader
(offline.LEARNED_PARTIES): where the rules read no buyer, never lifting a document the rules
doubted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conveyor.agents import invoice_party_model, offline
from conveyor.agents.invoice_party_features import FEATURES, Candidate, candidates
from conveyor.agents.invoice_reader import DOUBT
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.offline import extract_offline, rules_invoice
from conveyor.documents.text import extract_text
from tests.snippets import Draw, pdf, text_layer

HEADED = """Harbour Supplies Ltd
12 High Street, London EC1 2AB
INVOICE                      Invoice No: A-17
Bill to:
Northwind Trading GmbH
Hafenstrasse 1
20457 Hamburg
Contact: Jane Doe
Widgets                  2    50.00     100.00
Total 100.00 EUR
"""

_HEAD: Draw = [
    (42, 40, "Harbour Supplies Ltd", 14),
    (42, 58, "12 High Street, London EC1 2AB"),
    (42, 70, "VAT GB123456789"),
    (400, 40, "INVOICE", 14),
    (400, 70, "Invoice No: A-17"),
    (400, 82, "Date: 12/03/2024"),
]
_ITEMS: Draw = [
    (42, 200, "DESCRIPTION"),
    (300, 200, "QTY"),
    (360, 200, "PRICE"),
    (450, 200, "AMOUNT"),
    (42, 215, "Widgets"),
    (300, 215, "2"),
    (360, 215, "50.00"),
    (450, 215, "100.00"),
]
# A letter's window under the sender line, no heading over it and no postcode under it:
# the rules read no buyer here.
_WINDOW: Draw = [
    (42, 96, "Harbour Supplies Ltd - 12 High Street - London", 6),
    (42, 120, "Northwind trading GmbH"),
    (42, 132, "Harbour Road 4"),
    (42, 144, "Leeds"),
]
LETTER: Draw = [*_HEAD, *_WINDOW, *_ITEMS, (360, 240, "TOTAL"), (450, 240, "100.00 EUR")]
# The same without its total: a key field missing, so the rules doubt every field.
UNTOTALLED: Draw = [*_HEAD, *_WINDOW, *_ITEMS]


def test_candidates_and_their_features() -> None:
    found = {c.value: c for c in candidates(Sheet.of(text_layer(HEADED)))}
    buyer = found["Northwind Trading GmbH"]
    assert buyer.features["above_buyer"] == 1.0 and buyer.features["first_under"] == 1.0
    assert buyer.features["legal_end"] == 1.0 and buyer.features["block_postcode"] == 1.0
    seller = found["Harbour Supplies Ltd"]
    assert seller.features["top_fifth"] == 1.0 and seller.features["legal"] == 1.0
    assert "above_buyer" not in seller.features
    # What follows a label in its cell is a candidate of its own.
    assert found["Jane Doe"].features["how_after_label"] == 1.0
    assert len(buyer.vector()) == len(FEATURES)


def test_the_rules_names_are_marked() -> None:
    chosen = {"vendor": ("Harbour Supplies Ltd", 0.75), "customer": (None, 0.0)}
    found = {c.value: c for c in candidates(Sheet.of(text_layer(HEADED)), None, chosen)}
    assert found["Harbour Supplies Ltd"].features["rules_vendor_conf"] == 0.75
    assert "rules_customer" not in found["Northwind Trading GmbH"].features


def test_weights_are_aligned_by_feature_name() -> None:
    shipped = json.loads(invoice_party_model.MODEL_FILE.read_text())
    models = invoice_party_model.load()
    for role in ("vendor", "customer"):
        names, coef = shipped[role]["features"], shipped[role]["coef"]
        shuffled = {role: {"features": names[::-1], "coef": coef[::-1]} for role in shipped}
        assert invoice_party_model.from_json(shuffled)[role] == models[role]
    # A feature the file does not name weighs nothing; one it names that is gone is unused.
    partial = {
        role: {"features": ["legal", "no_such_feature"], "coef": [2.0, 5.0]}
        for role in ("vendor", "customer")
    }
    weights = invoice_party_model.from_json(partial)["vendor"].weights
    assert weights[FEATURES.index("legal")] == 2.0 and sum(weights) == 2.0


@pytest.fixture
def learned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline, "LEARNED_PARTIES", True)  # as shipped, whatever a test set


@pytest.mark.usefixtures("learned")
def test_where_the_rules_read_no_buyer_the_model_reads_it_unsure() -> None:
    text = extract_text(pdf(LETTER))
    invoice, fields, _ = rules_invoice(text)
    assert invoice.customer.name is None and fields["customer.name"] == 0.0
    extraction = extract_offline(text, "invoice")
    assert extraction.data["customer"]["name"] == "Northwind trading GmbH"
    conf = extraction.fields["customer.name"]
    assert invoice_party_model.MODEL_SURE["customer"] <= conf <= invoice_party_model.TRUST
    assert extraction.data["vendor"]["name"] == invoice.vendor.name  # the rules' seller


@pytest.mark.usefixtures("learned")
def test_the_model_never_lifts_a_document_the_rules_doubted() -> None:
    text = extract_text(pdf(UNTOTALLED))
    _, fields, _ = rules_invoice(text)
    assert max(fields.values()) <= DOUBT  # no total: the rules doubt every field
    extraction = extract_offline(text, "invoice")
    assert extraction.data["customer"]["name"] == "Northwind trading GmbH"
    assert max(extraction.fields.values()) <= DOUBT
    assert extraction.confidence <= DOUBT


@pytest.mark.usefixtures("learned")
def test_a_seller_the_model_names_leaves_the_document_doubted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The rules read no seller (a key field missing: every field doubted); a model sure
    # of one, as sure as it may be, names it and the rest stays as doubted as it was.
    # Nothing where a letterhead or a footer is: the page's upper third is empty.
    draw: Draw = [(400, 300, "INVOICE", 14), (400, 320, "Invoice No: A-17")]
    draw += [(x, y + 200, text) for x, y, text, *_ in _ITEMS]
    draw += [(360, 440, "TOTAL"), (450, 440, "100.00 EUR")]
    text = extract_text(pdf(draw))
    invoice, fields, _ = rules_invoice(text)
    assert invoice.vendor.name is None and max(fields.values()) <= DOUBT

    def sure(role: str, found: list[Candidate]) -> tuple[str, float] | None:
        return ("Widget Makers Ltd", invoice_party_model.TRUST) if role == "vendor" else None

    monkeypatch.setattr(invoice_party_model, "choose", sure)
    extraction = extract_offline(text, "invoice")
    assert extraction.data["vendor"]["name"] == "Widget Makers Ltd"
    assert max(extraction.fields.values()) <= DOUBT
    assert extraction.confidence <= DOUBT


def test_switched_off_the_rules_names_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline, "LEARNED_PARTIES", False)
    extraction = extract_offline(extract_text(pdf(LETTER)), "invoice")
    assert extraction.data["customer"]["name"] is None


def test_the_model_file_loads_and_scores_without_scikit_learn() -> None:
    script = (
        "import sys\n"
        "sys.modules['sklearn'] = None  # import sklearn fails\n"
        "from conveyor.agents import invoice_party_model as m\n"
        "from conveyor.agents.invoice_party_features import Candidate\n"
        "models = m.load()\n"
        "a = Candidate('Acme Ltd', {'legal': 1.0, 'legal_end': 1.0, 'above_buyer': 1.0,\n"
        "    'first_under': 1.0, 'above_near': 1.0, 'block_postcode': 1.0, 'bias': 1.0})\n"
        "b = Candidate('Total', {'sum_label': 1.0, 'one_word': 1.0, 'bias': 1.0})\n"
        "print(m.best([b, a], models['customer'])[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Acme Ltd"
