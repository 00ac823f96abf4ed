"""Train the learned item-row chooser (conveyor/agents/invoice_item_model) on the opened
sets, and measure it by leave-one-source-out against the rules.

    python benchmarks/train_items.py --realdocs /work/shared/realdocs [--export] [--json out]

Opened sets only (benchmarks/opened_sets.py; a missing one stops the script). Documents
whose truth lists no line items are not scored (realdocs.py does not score them) and not
trained on. A candidate line is an item when its amount is a truth item's and the truth
item's name is within the line's words. Each source is left out in turn, the model
trained on the others, its documents read. "rules" is the offline reader's items as they
stand (they saw every source: optimistic, their training score); "model" the model's
items alone (LOSO); "wired" the model's items only where the rules read none, as
offline._read_invoice does. scikit-learn is needed here only.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from opened_sets import best_of, corpora, folds, trained_on, truthed  # noqa: E402
from realdocs import DEFAULT_CORPUS, _money, _words, right  # noqa: E402

from conveyor.agents import invoice_item_model as model_  # noqa: E402
from conveyor.agents.invoice_item_features import FEATURES, Candidate, candidates  # noqa: E402
from conveyor.agents.invoice_reader import styled_sheet  # noqa: E402
from conveyor.agents.invoice_sheet import Sheet  # noqa: E402
from conveyor.agents.offline import rules_invoice  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402
from conveyor.documents.types import LineItem  # noqa: E402


@dataclass
class Doc:
    corpus: str
    source: str
    path: str
    sheet: Sheet
    candidates: list[Candidate]
    labels: list[int]
    want: Any
    rules: list[dict[str, Any]]
    rules_conf: float
    sums: tuple[Any, Any]  # the invoice's net and total as read


def _dump(items: list[LineItem]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json") for item in items]


def _label(sheet: Sheet, cand: Candidate, want: list[dict[str, Any]] | None) -> int:
    """Whether the candidate's line is one of the truth's items: its amount, and the
    item's name among its words (a name of several lines: its first word), or its
    quantity and unit price."""
    words = set(_words(sheet.lines[cand.index].text).split())
    reading = cand.reading
    for line in want or []:
        if _money(line.get("price_subtotal")) != reading.amount:
            continue
        name = _words(line.get("name", "")).split()
        if name and name[0] in words:
            return 1
        qty, price = _money(line.get("qty")), _money(line.get("price_unit"))
        if qty is not None and qty == reading.quantity and price == reading.unit_price:
            return 1
    return 0


def read(corpus: Path) -> list[Doc]:
    docs = []
    for pdf, truth in truthed(corpus):
        text = extract_text(pdf, name=pdf.name)
        invoice, fields, _ = rules_invoice(text)
        sheet = styled_sheet(text)[0]
        found = candidates(sheet)
        want = truth["line_items"]
        docs.append(
            Doc(
                corpus.name,
                pdf.parent.name,
                str(pdf.relative_to(corpus)),
                sheet,
                found,
                [_label(sheet, c, want) for c in found],
                want,
                _dump(invoice.line_items),
                fields.get("line_items", 0.0),
                (invoice.subtotal, invoice.total),
            )
        )
    return docs


def train(docs: list[Doc], c: float) -> model_.Model:
    from sklearn.linear_model import LogisticRegression

    xs, ys = [], []
    for doc in docs:
        if not doc.want:
            continue
        xs += [cand.vector() for cand in doc.candidates]
        ys += doc.labels
    fit = LogisticRegression(C=c, max_iter=5000, fit_intercept=False).fit(xs, ys)
    return model_.Model([float(w) for w in fit.coef_[0]])


def loso(docs: list[Doc], c: float) -> list[dict[str, Any]]:
    rows = []
    for _, others, own in folds(docs):
        model = train(others, c)
        for doc in own:
            picked = model_.pick(doc.sheet, doc.candidates, model)
            items, conf = picked if picked else ([], 0.0)
            got = _dump(items)
            scored = bool(doc.want)
            ok = scored and right("line_items", doc.want, got)
            rules_ok = scored and right("line_items", doc.want, doc.rules)
            switch = not doc.rules
            made = sum((i.amount or 0 for i in items), Decimal(0))
            rules_made = sum((_money(i["amount"]) or 0 for i in doc.rules), Decimal(0))
            adds = bool(items) and made in doc.sums and rules_made not in doc.sums
            rows.append(
                {
                    "doc": f"{doc.corpus}/{doc.path}",
                    "scored": scored,
                    "model_ok": ok,
                    "conf": round(conf, 4),
                    "rules_ok": rules_ok,
                    "rules_conf": doc.rules_conf,
                    "wired_ok": ok if switch else rules_ok,
                    "switched": switch and bool(items),
                    "rules": bool(doc.rules),
                    "adds_ok": ok if (switch or adds) else rules_ok,
                    "adds": adds,
                    "reachable": sum(doc.labels) == len(doc.want or []) > 0,
                    "got": len(items),
                    "want": len(doc.want or []),
                }
            )
    return rows


KEYS = ("reachable", "model_ok", "rules_ok", "wired_ok")


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| set | docs with items | every item a candidate | model (LOSO) | rules | wired |"]
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    scored = [r for r in rows if r["scored"]]
    for name in [*sorted({r["doc"].split("/")[0] for r in rows}), None]:
        group = [r for r in scored if name is None or r["doc"].split("/")[0] == name]
        n = len(group)
        cols = (sum(r[k] for r in group) for k in KEYS)
        out.append(f"| {name or 'all'} | {n} | " + " | ".join(f"{x}/{n}" for x in cols) + " |")
    for bound in (0.75, 0.85):
        unsure = [r for r in scored if r["rules"] and r["rules_conf"] <= bound]
        out.append(
            f"rules unsure (items read at <= {bound}): {len(unsure)} documents; there the rules "
            f"read {sum(r['rules_ok'] for r in unsure)} right, the model "
            f"{sum(r['model_ok'] for r in unsure)}"
        )
    adds = [r for r in scored if r["adds"]]
    out.append(
        f"rules' items that do not make the net or total, the model's that do: {len(adds)} "
        f"documents; the rules right {sum(r['rules_ok'] for r in adds)}, the model "
        f"{sum(r['model_ok'] for r in adds)} (wired there too: "
        f"{sum(r['adds_ok'] for r in scored)}/{len(scored)})"
    )
    read = [r for r in scored if r["got"]]
    sure = [r for r in read if r["conf"] >= model_.TRUST]
    unsure = [r for r in read if r["conf"] < model_.TRUST]
    out.append(
        f"the model's items at its TRUST ({model_.TRUST}; their sum printed): "
        f"{sum(r['model_ok'] for r in sure)}/{len(sure)} right; below it "
        f"{sum(r['model_ok'] for r in unsure)}/{len(unsure)}"
    )
    switched = [r for r in rows if r["switched"]]
    out.append(
        f"wired: the model read items for {len(switched)} documents the rules read none of "
        f"({sum(r['scored'] for r in switched)} with truth items, "
        f"{sum(r['wired_ok'] for r in switched)} right; "
        f"{sum(r['conf'] >= 0.9 for r in switched)} at >= 0.9)"
    )
    for r in switched:
        out.append(f"  {r['doc']}: {r['got']} items (truth {r['want']}), ok {r['wired_ok']}")
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
        lambda rows: sum(r["wired_ok"] for r in rows),
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
