"""The learned invoice-number chooser: its candidates and features, the shipped model read
without scikit-learn, and its place in the offline reader (where the rules read none)."""

from __future__ import annotations

import subprocess
import sys

from conveyor.agents import invoice_number_model
from conveyor.agents.invoice_number_features import FEATURES, candidates
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.offline import extract_offline, rules_invoice
from conveyor.documents.text import extract_text
from tests.snippets import Draw, pdf, text_layer

LABELLED = """ACME Supplies Ltd
INVOICE                      # A-20931
Date: 12/03/2024
Customer No: 4711
Widgets                  2    50.00     100.00
Total 100.00 EUR
"""

# A title set no larger than the letterhead beside it, and "INVOICE:" over no "No.": the
# rules read no number here.
UNLABELLED: Draw = [
    (42, 40, "ACME SUPPLIES LTD."),
    (550, 40, "INVOICE", "right"),
    (42, 100, "12 High Street"),
    (550, 100, "INVOICE: A-20931", "right"),
    (42, 115, "London EC1 2AB"),
    (550, 115, "INVOICE DATE: 12/03/2024", "right"),
    (550, 130, "CUSTOMER ID: C-4711", "right"),
    (42, 200, "DESCRIPTION"),
    (300, 200, "QTY"),
    (360, 200, "PRICE"),
    (450, 200, "AMOUNT"),
    (42, 215, "Widgets"),
    (300, 215, "2"),
    (360, 215, "50.00"),
    (450, 215, "100.00"),
    (360, 240, "TOTAL"),
    (450, 240, "100.00"),
]


def test_candidates_and_their_features() -> None:
    found = {c.value: c for c in candidates(Sheet.of(text_layer(LABELLED)))}
    # No date and no amount with decimals is a candidate; a customer's number is one.
    assert "12/03/2024" not in found and "100.00" not in found and "50.00" not in found
    number, customer = found["A-20931"], found["4711"]
    assert number.features["hashed"] == 1.0 and number.features["title_line"] == 1.0
    assert number.features["dash"] == 1.0 and number.features["letters"] == 1.0
    assert customer.features["same_-number"] == 1.0 and customer.features["all_digits"] == 1.0
    assert customer.features["under_title"] == 1.0 and "title_line" not in customer.features
    assert len(number.vector()) == len(FEATURES)


def test_the_shipped_model_reads_the_number() -> None:
    text = text_layer(LABELLED)
    picked = invoice_number_model.choose(*invoice_number_model.read(text))
    assert picked is not None and picked[0] == "A-20931"
    assert picked[1] <= invoice_number_model.TRUST


def test_where_the_rules_read_none_the_model_reads_it_unsure() -> None:
    text = extract_text(pdf(UNLABELLED))
    invoice, fields, _ = rules_invoice(text)
    assert invoice.number is None and fields["number"] == 0.0
    extraction = extract_offline(text, "invoice")
    assert extraction.data["number"] == "A-20931"
    assert invoice_number_model.MODEL_SURE <= extraction.fields["number"] < 0.9


def test_the_model_file_loads_and_scores_without_scikit_learn() -> None:
    script = (
        "import sys\n"
        "sys.modules['sklearn'] = None  # import sklearn fails\n"
        "from conveyor.agents import invoice_number_model as m\n"
        "from conveyor.agents.invoice_number_features import Candidate\n"
        "model = m.load()\n"
        "c = Candidate('A-1', {'same_number': 1.0, 'bias': 1.0})\n"
        "d = Candidate('4711', {'same_-number': 1.0, 'bias': 1.0})\n"
        "print(m.best([c, d], model)[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "A-1"
