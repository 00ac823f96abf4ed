"""Train the learned invoice-number chooser (conveyor/agents/invoice_number_model) on the
opened sets, and measure it by leave-one-source-out against the rules.

    python benchmarks/train_number.py --realdocs /work/shared/realdocs [--export] [--json out]

Opened sets: the realdocs text-only copies (give --realdocs: from a worktree
../shared/realdocs is not beside it, and a missing set stops the script), benchmarks/
tuning, round4 to round8, fresh and round9 to round11; never the held-out corpus, round12
and round13.
A source is one repository (a folder of text-only/): each is left out in turn, the model
trained on the others, its documents' number chosen. "rules" is the offline reader's
number as it stands (it saw every source: optimistic); "wired >= 0.9" keeps the rules'
number where they read it at >= 0.9 and takes the model's top candidate otherwise (the
brief's first wiring); "chosen" takes the model's top candidate only where the rules read
their number below invoice_number_model.RULES_UNSURE (none, or a guess) and the model's
share is MODEL_SURE or more, as offline._read_invoice does. scikit-learn is needed here only.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from opened_sets import best_of, corpora, folds, trained_on, truthed  # noqa: E402
from realdocs import DEFAULT_CORPUS, right  # noqa: E402

from conveyor.agents import invoice_number_model as model_  # noqa: E402
from conveyor.agents.invoice_number_features import FEATURES, Candidate, candidates  # noqa: E402
from conveyor.agents.offline import rules_invoice  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402

SURE = 0.9  # the brief's wiring: the rules' number at or above it is kept


@dataclass
class Doc:
    corpus: str
    source: str
    path: str
    candidates: list[Candidate]
    want: Any
    rules: Any
    rules_conf: float


def read(corpus: Path) -> list[Doc]:
    docs = []
    for pdf, truth in truthed(corpus):
        want = truth["number"]
        text = extract_text(pdf, name=pdf.name)
        invoice, fields, _ = rules_invoice(text)
        got = invoice.number
        sheet, table = model_.read(text)
        docs.append(
            Doc(
                corpus.name,
                pdf.parent.name,
                str(pdf.relative_to(corpus)),
                candidates(sheet, table),
                want,
                got,
                fields.get("number", 0.0),
            )
        )
    return docs


def train(docs: list[Doc], c: float) -> model_.Model:
    from sklearn.linear_model import LogisticRegression

    xs, ys = [], []
    for doc in docs:
        for cand in doc.candidates:
            xs.append(cand.vector())
            ys.append(int(right("number", doc.want, cand.value)))
    fit = LogisticRegression(C=c, max_iter=5000, fit_intercept=False).fit(xs, ys)
    return model_.Model([float(w) for w in fit.coef_[0]])


def loso(docs: list[Doc], c: float) -> list[dict[str, Any]]:
    rows = []
    for _, others, own in folds(docs):
        model = train(others, c)
        for doc in own:
            picked = model_.best(doc.candidates, model)
            value, conf = picked if picked else (None, 0.0)
            conf = min(conf, model_.TRUST)
            ok = right("number", doc.want, value)
            rules_ok = right("number", doc.want, doc.rules)
            wired_ok = rules_ok if doc.rules_conf >= SURE else ok
            switch = doc.rules_conf < model_.RULES_UNSURE and conf >= model_.MODEL_SURE
            rows.append(
                {
                    "doc": f"{doc.corpus}/{doc.path}",
                    "model_ok": ok,
                    "conf": round(conf, 4),
                    "rules_ok": rules_ok,
                    "rules_conf": doc.rules_conf,
                    "wired_ok": wired_ok,
                    "chosen_ok": ok if switch else rules_ok,
                    "reachable": any(right("number", doc.want, x.value) for x in doc.candidates),
                    "got": value,
                    "rules": doc.rules,
                }
            )
    return rows


KEYS = ("reachable", "model_ok", "rules_ok", "wired_ok", "chosen_ok")


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| set | docs | truth among candidates | model (LOSO) | rules | wired >= 0.9 | chosen |"]
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in [*sorted({r["doc"].split("/")[0] for r in rows}), None]:
        group = [r for r in rows if name is None or r["doc"].split("/")[0] == name]
        n = len(group)
        cols = (sum(r[k] for r in group) for k in KEYS)
        out.append(f"| {name or 'all'} | {n} | " + " | ".join(f"{x}/{n}" for x in cols) + " |")
    unsure = [r for r in rows if r["rules_conf"] < SURE]
    out.append(
        f"rules unsure (< {SURE}): {len(unsure)} documents; there the rules read "
        f"{sum(r['rules_ok'] for r in unsure)}, the model {sum(r['model_ok'] for r in unsure)}"
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--json", type=Path, help="write each LOSO document's result here")
    parser.add_argument("--c", type=float, nargs="+", default=[1.0], help="C values to try")
    parser.add_argument("--realdocs", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    opened = corpora(parser, args.realdocs)
    docs = [doc for corpus in opened for doc in read(corpus)]
    sources = len({d.source for d in docs})
    cands = sum(len(d.candidates) for d in docs)
    print(f"{len(docs)} documents, {sources} sources, {cands} candidates", flush=True)
    c, rows = best_of(
        args.c,
        lambda c: loso(docs, c),
        table,
        lambda rows: sum(r["chosen_ok"] for r in rows),
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.export:
        model = train(docs, c)
        data = {
            "features": list(FEATURES),
            "coef": [round(w, 6) for w in model.weights],
            "c": c,
            "trained_on": trained_on(docs, opened),
        }
        model_.MODEL_FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {model_.MODEL_FILE} (C {c})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
