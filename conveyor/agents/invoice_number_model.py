"""The learned invoice-number chooser: one logistic model over the features of
invoice_number_features, each candidate scored by it, the best one read.

    choose(sheet, table) -> (value, confidence) | None

The model is trained by benchmarks/train_number.py (scikit-learn, training only) and
exported to invoice_number_model.json beside this file; here it is a dot product in plain
Python (conveyor.agents.logistic, as the sums chooser's). A candidate's confidence is its
share of the softmax over the document's candidates (at most its own probability), never
over TRUST: the model was trained on a hundred-odd invoices.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from conveyor.agents.invoice_number_features import FEATURES, Candidate, candidates
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_sum_features import table_region
from conveyor.agents.invoice_table import read_items
from conveyor.agents.logistic import Model, model_of, score
from conveyor.documents.text import DocumentText

MODEL_FILE = Path(__file__).with_name("invoice_number_model.json")
TRUST = 0.85
# Where it is wired (offline._read_invoice): only where the rules read no number or one at
# a guess (below WEAK), and only a candidate the model gives this share or more. Chosen by
# leave-one-source-out on the opened sets: where the rules read their number at 0.75 or
# 0.85 (most often a sure one capped as the document's sums do not add up) they were right
# 44 times in 46, the model 31 times.
RULES_UNSURE = 0.75
MODEL_SURE = 0.7


@lru_cache(maxsize=1)
def load(path: Path = MODEL_FILE) -> Model:
    return from_json(json.loads(path.read_text()))


def from_json(data: dict[str, Any]) -> Model:
    return model_of(data, FEATURES)


def logit(model: Model, candidate: Candidate) -> float:
    return score(model.weights, candidate.vector())


def best(found: list[Candidate], model: Model) -> tuple[str, float] | None:
    """The candidate of highest score, and its confidence: its share of the softmax over
    all of them, but never more than the model's own probability for it (a page with one
    candidate, an item's quantity "1", gives it the whole share)."""
    if not found:
        return None
    scores = [logit(model, c) for c in found]
    top = max(scores)
    whole = sum(math.exp(s - top) for s in scores)
    index = scores.index(top)
    return found[index].value, min(1.0 / whole, 1.0 / (1.0 + math.exp(-top)))


def choose(sheet: Sheet, table: tuple[int, int] | None = None) -> tuple[str, float] | None:
    picked = best(candidates(sheet, table), load())
    if picked is None:
        return None
    return picked[0], min(picked[1], TRUST)


def read(text: DocumentText) -> tuple[Sheet, tuple[int, int] | None]:
    """The pages as the chooser reads them: the sheet in its voted number style and the
    lines of its item table."""
    sheet = Sheet.of(text)
    _, _, end = read_items(sheet)
    return sheet, table_region(sheet, end)
