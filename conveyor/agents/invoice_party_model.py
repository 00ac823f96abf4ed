"""The learned chooser of an invoice's parties: one logistic model per role (the seller's
name, the buyer's) over the features of invoice_party_features, each candidate scored by
it, the best one read.

    choose(role, found) -> (name, confidence) | None

The models are trained by benchmarks/train_parties.py (scikit-learn, training only) and
exported to invoice_party_model.json beside this file; here each is a dot product in
plain Python (conveyor.agents.logistic). A candidate's confidence is its share of the
softmax over the document's candidates, at most its own probability, never over TRUST:
the models were trained on a hundred-odd invoices.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from conveyor.agents.invoice_party_features import FEATURES, ROLES, Candidate, candidates
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_sum_features import table_region
from conveyor.agents.invoice_table import read_items
from conveyor.agents.logistic import Model, model_of, score
from conveyor.documents.text import DocumentText

MODEL_FILE = Path(__file__).with_name("invoice_party_model.json")
TRUST = 0.85
# Where it is wired (offline._learned_parties, on as shipped): only where the rules read
# no name for a role or one below RULES_UNSURE (none, 0.6 or 0.75), and only a candidate
# the model gives MODEL_SURE or more of its share. Chosen by leave-one-source-out on the
# opened sets (benchmarks/train_parties.py prints the grid): of the names the rules read at
# 0.85 they had 72 of 77 right, the model alone 57; below 0.8 (none included) the rules 38
# of 60, the model 33. There, from a share of 0.6 to 0.8, it adds a right name for each
# role and loses none; at 0.5 or less it loses some. With rounds 9 to 11 opened (142
# documents): at 0.85 the rules 89 of 100, the model 71; below 0.8 the rules 49 of 76, the
# model 39; from a share of 0.6 to 0.8 it adds two vendors and one customer and loses none.
RULES_UNSURE = {"vendor": 0.8, "customer": 0.8}
MODEL_SURE = {"vendor": 0.6, "customer": 0.6}


@lru_cache(maxsize=1)
def load(path: Path = MODEL_FILE) -> dict[str, Model]:
    return from_json(json.loads(path.read_text()))


def from_json(data: dict[str, Any]) -> dict[str, Model]:
    return {role: model_of(data[role], FEATURES) for role in ROLES}


def logit(model: Model, candidate: Candidate) -> float:
    return score(model.weights, candidate.vector())


def best(found: list[Candidate], model: Model) -> tuple[str, float] | None:
    """The candidate of highest score, and its confidence: its share of the softmax over
    all of them, never more than the model's own probability for it."""
    if not found:
        return None
    scores = [logit(model, c) for c in found]
    top = max(scores)
    whole = sum(math.exp(s - top) for s in scores)
    index = scores.index(top)
    return found[index].value, min(1.0 / whole, 1.0 / (1.0 + math.exp(-top)))


def choose(role: str, found: list[Candidate]) -> tuple[str, float] | None:
    picked = best(found, load()[role])
    if picked is None:
        return None
    return picked[0], min(picked[1], TRUST)


def read(text: DocumentText, chosen: dict[str, tuple[str | None, float]]) -> list[Candidate]:
    """The candidates of the pages, with the rules' names (`chosen`, by role)."""
    sheet = Sheet.of(text)
    _, _, end = read_items(sheet)
    return candidates(sheet, table_region(sheet, end), chosen)


def decide(
    picks: dict[str, tuple[str, float] | None],
    rules: dict[str, tuple[str | None, float]],
    *,
    unsure: dict[str, float] | None = None,
    sure: dict[str, float] | None = None,
) -> dict[str, tuple[str | None, float]]:
    """Each role's name and confidence: the model's pick (`picks`) where the rules read
    none or were unsure of theirs (`rules`, by role) and the model is fairly sure, the
    rules' elsewhere. A pick that is the other party's name is not taken (no one bills
    themselves): the seller is decided first, the buyer against it. A pick that is the
    rules' own name keeps their confidence: the model agreeing lifts nothing. `unsure`, `sure`:
    other thresholds than RULES_UNSURE and MODEL_SURE, to measure them."""
    unsure = unsure or RULES_UNSURE
    sure = sure or MODEL_SURE
    out = dict(rules)
    for role in ROLES:
        picked = picks.get(role)
        other = out["customer" if role == "vendor" else "vendor"][0]
        if rules[role][1] >= unsure[role] or picked is None or picked[1] < sure[role]:
            continue
        if other is not None and _folded(picked[0]) == _folded(other):
            continue
        own = rules[role][0]
        if own is not None and _folded(picked[0]) == _folded(own):
            continue  # the rules' own name: it keeps their confidence
        out[role] = picked
    return out


def _folded(name: str) -> str:
    return " ".join(name.casefold().split())
