"""Train the learned party chooser (conveyor/agents/invoice_party_model) on the opened sets,
and measure it by leave-one-source-out against the rules.

    python benchmarks/train_parties.py --realdocs /work/shared/realdocs --no-own-rules \
        [--c 1] [--export] [--json out] [--cache docs.pickle]

The shipped models: `--no-own-rules --c 1 --export`. Opened sets only
(benchmarks/opened_sets.py): never the held-out corpus, round12, round13. A source is one
repository; each is left out in turn, the models trained on the others, its documents'
parties chosen. "rules" is the offline reader's name as it stands (it was written on every
one of these sources: optimistic); "model alone" the model's top candidate; "wired" the
whole reader with the model's name where the rules read none or one below
invoice_party_model.RULES_UNSURE and the model's share is MODEL_SURE or more, as
offline._learned_parties does (both by invoice_party_model.decide). The grid prints the
same for other thresholds, both roles alike: what each would add and lose.
`--pairwise` trains on pairs of a page's right and wrong candidates instead (measured: no
better); `--no-rules` leaves out what the rules chose for either role. scikit-learn is
needed here only.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from opened_sets import best_of, corpora, folds, trained_on, truthed  # noqa: E402
from realdocs import DEFAULT_CORPUS, right  # noqa: E402

from conveyor.agents import invoice_party_model as model_  # noqa: E402
from conveyor.agents.invoice_party_features import FEATURES, ROLES, Candidate  # noqa: E402
from conveyor.agents.offline import rules_invoice  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402

FIELD = {"vendor": "vendor.name", "customer": "customer.name"}
UNSURE = (0.01, 0.7, 0.8, 0.9)
SURE = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PAIRWISE = False


@dataclass
class Doc:
    corpus: str
    source: str
    path: str
    candidates: list[Candidate]
    want: dict[str, Any]
    rules: dict[str, str | None]
    rules_conf: dict[str, float]


def read(corpus: Path) -> list[Doc]:
    docs = []
    for pdf, truth in truthed(corpus):
        text = extract_text(pdf, name=pdf.name)
        invoice, fields, _ = rules_invoice(text)
        rules = {"vendor": invoice.vendor.name, "customer": invoice.customer.name}
        conf = {role: fields.get(FIELD[role], 0.0) for role in ROLES}
        found = model_.read(text, {role: (rules[role], conf[role]) for role in ROLES})
        want = {role: truth[FIELD[role]] for role in ROLES}
        rel = str(pdf.relative_to(corpus))
        docs.append(Doc(corpus.name, pdf.parent.name, rel, found, want, rules, conf))
    return docs


def own_rules(role: str) -> frozenset[str]:
    """The features that say what the rules chose for `role`, left out of its model with
    --no-own-rules: trained beside them, a model learns to copy the rules (they were
    written on these sources) and says nothing where they are unsure. What the rules
    chose for the other role stays: the buyer is seldom the seller."""
    return frozenset({f"rules_{role}", f"rules_{role}_conf"})


def drops(no_own: bool, everything: bool) -> dict[str, frozenset[str]]:
    if everything:
        every = frozenset().union(*(own_rules(role) for role in ROLES))
        return {role: every for role in ROLES}
    return {role: own_rules(role) if no_own else frozenset() for role in ROLES}


def train(docs: list[Doc], role: str, c: float, drop: frozenset[str] = frozenset()) -> model_.Model:
    from sklearn.linear_model import LogisticRegression

    keep = [k for k, name in enumerate(FEATURES) if name not in drop]
    xs, ys = [], []
    for doc in docs:
        rows = [
            ([cand.vector()[k] for k in keep], right(FIELD[role], doc.want[role], cand.value))
            for cand in doc.candidates
        ]
        if not PAIRWISE:
            for x, y in rows:
                xs.append(x)
                ys.append(int(y))
            continue
        # Each right candidate against each wrong one of its document, both ways round:
        # the model learns which of a page's candidates is the name, as it is used.
        for x, y in rows:
            if not y:
                continue
            for z, w in rows:
                if w:
                    continue
                diff = [a - b for a, b in zip(x, z, strict=True)]
                xs.extend([diff, [-d for d in diff]])
                ys.extend([1, 0])
    fit = LogisticRegression(C=c, max_iter=5000, fit_intercept=False).fit(xs, ys)
    weights = [0.0] * len(FEATURES)
    for k, w in zip(keep, fit.coef_[0], strict=True):
        weights[k] = float(w)
    return model_.Model(weights)


def loso(docs: list[Doc], c: float, drop: dict[str, frozenset[str]]) -> list[dict[str, Any]]:
    rows = []
    for _, others, own in folds(docs):
        models = {role: train(others, role, c, drop[role]) for role in ROLES}
        for doc in own:
            row: dict[str, Any] = {"doc": f"{doc.corpus}/{doc.path}"}
            for role in ROLES:
                picked = model_.best(doc.candidates, models[role])
                if picked is not None:
                    picked = (picked[0], min(picked[1], model_.TRUST))
                want = doc.want[role]
                row[role] = {
                    "want": want,
                    "rules": doc.rules[role],
                    "rules_conf": doc.rules_conf[role],
                    "rules_ok": right(FIELD[role], want, doc.rules[role]),
                    "got": picked[0] if picked else None,
                    "conf": round(picked[1], 4) if picked else 0.0,
                    "model_ok": right(FIELD[role], want, picked[0] if picked else None),
                    "reachable": any(right(FIELD[role], want, x.value) for x in doc.candidates),
                }
            rows.append(row)
    return rows


def wired(
    r: dict[str, Any], unsure: dict[str, float] | None, sure: dict[str, float] | None
) -> dict[str, bool]:
    """Whether each role's name is right in the whole reader, the model wired in."""
    picks = {role: (r[role]["got"], r[role]["conf"]) if r[role]["got"] else None for role in ROLES}
    rules = {role: (r[role]["rules"], r[role]["rules_conf"]) for role in ROLES}
    names = model_.decide(picks, rules, unsure=unsure, sure=sure)
    return {
        role: right(FIELD[role], r[role]["want"], names[role][0])
        if names[role] != rules[role]
        else bool(r[role]["rules_ok"])
        for role in ROLES
    }


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| set | docs | role | truth among candidates | rules (in-sample) | model alone (LOSO) "
        "| wired (LOSO) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for name in [*sorted({r["doc"].split("/")[0] for r in rows}), None]:
        group = [r for r in rows if name is None or r["doc"].split("/")[0] == name]
        n = len(group)
        for role in ROLES:
            cols = [
                sum(r[role]["reachable"] for r in group),
                sum(r[role]["rules_ok"] for r in group),
                sum(r[role]["model_ok"] for r in group),
                sum(wired(r, None, None)[role] for r in group),
            ]
            out.append(
                f"| {name or 'all'} | {n} | {role} | " + " | ".join(f"{x}/{n}" for x in cols) + " |"
            )
    return out


def grid(rows: list[dict[str, Any]]) -> list[str]:
    out = ["rules below | model at least | vendor right (+added -lost) | customer right (+ -)"]
    for unsure in UNSURE:
        for sure in SURE:
            cols = []
            for role in ROLES:
                same = dict.fromkeys(ROLES, unsure), dict.fromkeys(ROLES, sure)
                now = [wired(r, *same)[role] for r in rows]
                base = [bool(r[role]["rules_ok"]) for r in rows]
                added = sum(a and not b for a, b in zip(now, base, strict=True))
                lost = sum(b and not a for a, b in zip(now, base, strict=True))
                cols.append(f"{sum(now)} (+{added} -{lost})")
            out.append(f"{unsure} | {sure} | " + " | ".join(cols))
    return out


def changes(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        for role in ROLES:
            now, base = wired(r, None, None)[role], bool(r[role]["rules_ok"])
            if now != base:
                cell = r[role]
                out.append(
                    f"{'+' if now else '-'} {r['doc']} {role}: {cell['rules']!r} "
                    f"({cell['rules_conf']}) -> {cell['got']!r} ({cell['conf']})"
                )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--json", type=Path, help="write each LOSO document's result here")
    parser.add_argument("--c", type=float, nargs="+", default=[1.0], help="C values to try")
    parser.add_argument("--realdocs", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--no-own-rules", action="store_true", help="see own_rules")
    parser.add_argument("--no-rules", action="store_true", help="without any rules' feature")
    parser.add_argument("--cache", type=Path, help="keep the read documents here (a pickle)")
    parser.add_argument("--pairwise", action="store_true", help="train on pairs of candidates")
    args = parser.parse_args()
    global PAIRWISE
    PAIRWISE = args.pairwise
    opened = corpora(parser, args.realdocs)
    drop = drops(args.no_own_rules, args.no_rules)
    if args.cache and args.cache.exists():
        docs = pickle.loads(args.cache.read_bytes())
    else:
        docs = [doc for corpus in opened for doc in read(corpus)]
        if args.cache:
            args.cache.write_bytes(pickle.dumps(docs))
    sources = len({d.source for d in docs})
    cands = sum(len(d.candidates) for d in docs)
    print(f"{len(docs)} documents, {sources} sources, {cands} candidates", flush=True)
    c, rows = best_of(
        args.c,
        lambda c: loso(docs, c, drop),
        lambda rows: [*table(rows), *grid(rows), *changes(rows)],
        lambda rows: sum(sum(wired(r, None, None).values()) for r in rows),
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    if args.export:
        data: dict[str, Any] = {"c": c}
        for role in ROLES:
            model = train(docs, role, c, drop[role])
            data[role] = {
                "features": list(FEATURES),
                "coef": [round(w, 6) for w in model.weights],
                "without": sorted(drop[role]),
            }
        data["trained_on"] = trained_on(docs, opened)
        model_.MODEL_FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {model_.MODEL_FILE} (C {c})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
