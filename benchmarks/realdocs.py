"""The `invoice` agent on real invoices: ../shared/realdocs (its README says what is there).

    python benchmarks/realdocs.py [--corpus DIR] [--path text-only|as-is]
                                  [--failures] [--json out.json]

DIR: ../shared/realdocs (the default), benchmarks/tuning or benchmarks/fresh (more
layouts, each with its own held-out sources marked in its index.json) or benchmarks/corpus
with --evaluation.

Each PDF is read exactly as a worker's `invoice` agent reads it without a model: its text
(extract_text), then the e-invoice XML it carries if any (conveyor.agents.einvoice, the
as-is path; the text-only copies carry none), else the offline extractor; its fields are
compared with the document's ground truth:

| truth key      | field            | right when                                          |
| -------------- | ---------------- | --------------------------------------------------- |
| issuer         | vendor.name      | the same words (case, punctuation and spacing aside; |
|                |                  | a leading salutation and a trailing legal form too:  |
|                |                  | "Herrn Max Mustermann" is "Max Mustermann", "Au bon  |
|                |                  | moulin SARL" is "Au bon moulin")                     |
| customer       | customer.name    | the same                                            |
| invoice_number | number           | the same characters, spaces aside                   |
| date, date_due | issue/due_date   | the same date; an absent truth wants null           |
| currency       | currency         | the same code                                       |
| amount         | total            | the same value                                      |
| amount_untaxed | subtotal         | the same value (from amount - tax when absent)      |
| amount_tax     | tax              | the same value (from amount - untaxed when absent); |
|                |                  | a truth of 0.00 is also met by null                 |
| lines          | line_items       | as many items, each with the truth's amount, unit    |
|                |                  | price and quantity, its name within the description |
|                |                  | (not scored when the truth has no lines)            |

Sources are split before any tuning into those the rules were developed on and those
held out (HELD_OUT): the held-out ones are reported apart, and --failures does not show
their documents (so that nobody tunes on them by accident; --held-out-failures does).

Reported: per field, per language, per source, tuned against held out; the reliability
of the per-field confidences (bins of confidence against accuracy); documents scored
>= 0.9 and how many of them are entirely right.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conveyor.agents.offline import extract_offline  # noqa: E402
from conveyor.documents.text import DocumentText, extract_text  # noqa: E402
from conveyor.documents.types import Extraction  # noqa: E402

DEFAULT_CORPUS = HERE.parent.parent / "shared" / "realdocs"
# Chosen before looking at any extraction from them: the documents the rules were NOT
# developed on. Six documents, three languages, three kinds of software.
HELD_OUT = ("azure-samples", "oca-edi")
FIELDS = (
    "vendor.name",
    "customer.name",
    "number",
    "issue_date",
    "due_date",
    "currency",
    "total",
    "subtotal",
    "tax",
    "line_items",
)
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.97, 1.01)
TRUST = 0.9


# ------------------------------------------------------------------------------- truth


def _money(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def expected(truth: dict[str, Any]) -> dict[str, Any]:
    """The truth as the extractor's fields (None: the document does not state it)."""
    total, net, tax = (_money(truth.get(k)) for k in ("amount", "amount_untaxed", "amount_tax"))
    if tax is None and total is not None and net is not None:
        tax = total - net
    if net is None and total is not None and tax is not None:
        net = total - tax
    return {
        "vendor.name": truth.get("issuer"),
        "customer.name": truth.get("customer"),
        "number": truth.get("invoice_number"),
        "issue_date": truth.get("date"),
        "due_date": truth.get("date_due"),
        "currency": truth.get("currency"),
        "total": total,
        "subtotal": net,
        "tax": tax,
        "line_items": truth.get("lines") or None,
    }


def _words(text: Any) -> str:
    folded = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(re.findall(r"[^\W_]+", folded))


_SALUTATION = re.compile(r"^(?:herrn?|frau|mr|mrs|ms|mme|m|mevr|dhr|sr|sra) ")
_LEGAL_FORM = re.compile(
    r" (?:gmbh(?: co kg)?|mbh|ag|kg|ltd|limited|llc|inc|corp|plc|sarl|sas|sa|bv|b v|bvba|nv|"
    r"spa|s p a|srl|sl)$"
)


def _name(text: Any) -> str:
    words = _words(text)
    return _LEGAL_FORM.sub("", _SALUTATION.sub("", words))


def right(name: str, want: Any, got: Any) -> bool:
    """Whether the extractor's `got` for field `name` meets the truth `want`."""
    if name == "tax" and want == 0 and got is None:
        return True
    if want is None:
        return got in (None, [], "")
    if got in (None, [], ""):
        return False
    if name in ("total", "subtotal", "tax"):
        return _money(got) == want
    if name == "number":
        return re.sub(r"\s", "", str(got)) == re.sub(r"\s", "", str(want))
    if name in ("vendor.name", "customer.name"):
        return _name(got) == _name(want)
    if name == "line_items":
        return _items_right(want, got)
    return bool(str(got) == str(want))


def _items_right(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> bool:
    if len(want) != len(got):
        return False
    return all(_item_right(w, g) for w, g in zip(want, got, strict=True))


def _item_right(want: dict[str, Any], got: dict[str, Any]) -> bool:
    pairs = (("price_subtotal", "amount"), ("price_unit", "unit_price"), ("qty", "quantity"))
    for truth_key, key in pairs:
        if want.get(truth_key) is not None and _money(got.get(key)) != _money(want[truth_key]):
            return False
    name, description = _words(want.get("name", "")), _words(got.get("description") or "")
    return bool(name) and name in description


# ------------------------------------------------------------------------------ running


@dataclass
class Doc:
    path: str
    source: str
    language: str
    held_out: bool
    confidence: float
    seconds: float
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> want/got/ok/conf
    error: str | None = None


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"vendor": {"name": x}} -> {"vendor.name": x}; lists stay whole."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _index(corpus: Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads((corpus / "index.json").read_text())
    except (OSError, ValueError):
        return []
    return rows if isinstance(rows, list) else []


def languages(corpus: Path) -> dict[str, str]:
    """Each document's language, by "source/NAME" (several sources have an invoice.pdf)."""
    return {_key(Path(row["file"])): row.get("language", "?") for row in _index(corpus)}


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def held_out_sources(corpus: Path) -> tuple[str, ...]:
    """The sources a corpus's index marks `"held_out": true` (benchmarks/tuning writes its
    split down there); a corpus whose index marks none: HELD_OUT (realdocs' split)."""
    rows = _index(corpus)
    if not any("held_out" in row for row in rows):
        return HELD_OUT
    return tuple(sorted({Path(row["file"]).parent.name for row in rows if row.get("held_out")}))


def _einvoice(pdf: Path, text: DocumentText) -> Extraction | None:
    try:
        from conveyor.agents.einvoice import from_pdf
    except ImportError:  # a checkout without the e-invoice reader
        return None
    return from_pdf(pdf, text)


def rounds(corpus: Path) -> dict[str, int]:
    """Each document's round of collection, by "source/NAME" (an index row without one: 1).
    benchmarks/fresh scores a held-out round once when gathered and once at the end."""
    return {_key(Path(row["file"])): int(row.get("round", 1)) for row in _index(corpus)}


def run(
    corpus: Path, path: str, held_out: tuple[str, ...] | None = None, round_: int | None = None
) -> list[Doc]:
    """Every document of `corpus` read and scored; `held_out`: the sources not tuned on
    (None: the corpus's own split, see held_out_sources; a corpus kept for evaluation,
    benchmarks/corpus, is held out whole); `round_`: only that round's documents."""
    held_out = held_out_sources(corpus) if held_out is None else held_out
    collected = rounds(corpus)
    folder = corpus / ("text-only" if path == "text-only" else "invoices")
    langs = languages(corpus)
    docs = []
    for pdf in sorted(folder.glob("*/*.pdf")):
        truth_file = pdf.with_suffix(".json")
        if not truth_file.exists() or round_ not in (None, collected.get(_key(pdf), 1)):
            continue
        truth = json.loads(truth_file.read_text())[0]
        source = pdf.parent.name
        kept_out = source in held_out or "*" in held_out
        label, language = str(pdf.relative_to(folder)), langs.get(_key(pdf), "?")
        started = time.perf_counter()
        try:
            text = extract_text(pdf, name=pdf.name)
            extraction = _einvoice(pdf, text) or extract_offline(text, "invoice")
        except Exception as exc:  # a benchmark reports a crash as a result, and goes on
            docs.append(failed(label, source, language, exc, held_out=kept_out))
            continue
        seconds = time.perf_counter() - started
        docs.append(scored(label, source, language, truth, extraction, seconds, held_out=kept_out))
    return docs


def scored(
    label: str,
    source: str,
    language: str,
    truth: dict[str, Any],
    found: Extraction,
    seconds: float,
    *,
    held_out: bool | None = None,
) -> Doc:
    """One document's fields against its truth (held_out None: its source in HELD_OUT)."""
    kept_out = source in HELD_OUT if held_out is None else held_out
    doc = Doc(label, source, language, kept_out, found.confidence, seconds)
    got = flatten(found.data)
    for name, want in expected(truth).items():
        if name == "line_items" and want is None:
            continue  # no item list to compare
        value = got.get(name)
        doc.fields[name] = {
            "want": want,
            "got": value,
            "ok": right(name, want, value),
            "conf": found.fields.get(name, 0.0),
        }
    return doc


def failed(
    label: str, source: str, language: str, exc: Exception, *, held_out: bool | None = None
) -> Doc:
    """A crash, reported as a result: every field of the document counts as wrong."""
    kept_out = source in HELD_OUT if held_out is None else held_out
    doc = Doc(label, source, language, kept_out, 0.0, 0.0)
    doc.error = f"{type(exc).__name__}: {exc}"
    return doc


# ------------------------------------------------------------------------------- report


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f} %" if d else "-"


def _tally(docs: list[Doc], name: str | None = None) -> tuple[int, int]:
    ok = total = 0
    for doc in docs:
        for fname, f in doc.fields.items():
            if name is None or fname == name:
                total += 1
                ok += f["ok"]
    return ok, total


def report(docs: list[Doc], path: str) -> list[str]:
    tuned = [d for d in docs if not d.held_out]
    held = [d for d in docs if d.held_out]
    out = [f"## Real invoices, {path}: {len(docs)} documents", ""]
    out += [
        f"| field | all ({len(docs)}) | tuned on ({len(tuned)}) | held out ({len(held)}) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name in (*FIELDS, None):
        cells = []
        for group in (docs, tuned, held):
            ok, total = _tally(group, name)
            cells.append(f"{pct(ok, total)} ({ok}/{total})")
        out.append(f"| {name or '**all fields**'} | " + " | ".join(cells) + " |")
    complete = [sum(_complete(d) for d in g) for g in (docs, tuned, held)]
    out.append(
        "| documents entirely right | "
        + " | ".join(f"{c}/{len(g)}" for c, g in zip(complete, (docs, tuned, held), strict=True))
        + " |"
    )
    for title, key in (("language", "language"), ("source", "source")):
        groups: dict[str, list[Doc]] = defaultdict(list)
        for doc in docs:
            groups[getattr(doc, key)].append(doc)
        out += ["", f"| {title} | documents | fields right |", "| --- | ---: | ---: |"]
        for name, group in sorted(groups.items()):
            ok, total = _tally(group)
            mark = " (held out)" if key == "source" and group[0].held_out else ""
            out.append(f"| {name}{mark} | {len(group)} | {pct(ok, total)} ({ok}/{total}) |")
    out += reliability(docs)
    seconds = sum(d.seconds for d in docs)
    out += ["", f"Read and extracted in {seconds:.2f} s ({len(docs) / seconds:.1f} documents/s)."]
    errors = [d for d in docs if d.error]
    if errors:
        out += ["", "Crashes:"] + [f"- {d.path}: {d.error}" for d in errors]
    return out


def _complete(doc: Doc) -> bool:
    return all(f["ok"] for f in doc.fields.values())


def reliability(docs: list[Doc]) -> list[str]:
    out = ["", "| field confidence | fields | right | accuracy |", "| --- | ---: | ---: | ---: |"]
    for low, high in pairwise(BINS):
        group = [f for d in docs for f in d.fields.values() if low <= f["conf"] < high]
        ok = sum(f["ok"] for f in group)
        label = f"[{low:.2f}, {min(high, 1.0):.2f}{']' if high > 1 else ')'}"
        out.append(f"| {label} | {len(group)} | {ok} | {pct(ok, len(group))} |")
    every = [f for d in docs for f in d.fields.values()]
    trusted = [f for f in every if f["conf"] >= TRUST]
    wrong = [f for f in every if not f["ok"]]
    out += [
        "",
        f"Fields scored ≥ {TRUST}: {pct(sum(f['ok'] for f in trusted), len(trusted))} right "
        f"({len(trusted)} fields); wrong fields scored ≥ {TRUST}: "
        f"{pct(sum(f['conf'] >= TRUST for f in wrong), len(wrong))} of {len(wrong)}.",
    ]
    high = [d for d in docs if d.confidence >= TRUST]
    out.append(
        f"Documents scored ≥ {TRUST}: {len(high)}, of which entirely right: "
        f"{sum(_complete(d) for d in high)}."
    )
    return out


def failures(docs: list[Doc], held_out: bool) -> list[str]:
    out = ["", "## Wrong fields", ""]
    for doc in docs:
        if doc.held_out and not held_out:
            continue
        for name, f in doc.fields.items():
            if not f["ok"]:
                want, got = _short(f["want"]), _short(f["got"])
                out.append(f"- {doc.path} {name} ({f['conf']:.2f}): want {want}, got {got}")
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) < 300 else text[:300] + "..."


def combined(paths: list[Path]) -> list[Doc]:
    """The documents of several --json outputs (one per corpus and path), for one
    reliability table across them."""
    docs = []
    for path in paths:
        for row in json.loads(path.read_text()):
            docs.append(Doc(**{**row, "fields": row["fields"]}))
    return docs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--path", choices=("text-only", "as-is"), default="text-only")
    parser.add_argument("--failures", action="store_true", help="list wrong fields (tuned)")
    parser.add_argument("--held-out-failures", action="store_true")
    parser.add_argument("--json", type=Path, help="write every field's result here")
    parser.add_argument(
        "--evaluation",
        action="store_true",
        help="the corpus is an evaluation set (benchmarks/corpus): every source held out",
    )
    parser.add_argument("--round", type=int, help="only the documents of this round (index.json)")
    parser.add_argument(
        "--combine",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the reliability table of several --json outputs together, no reading",
    )
    args = parser.parse_args()
    if args.combine:
        print("\n".join(reliability(combined(args.combine))))
        return 0
    docs = run(args.corpus, args.path, ("*",) if args.evaluation else None, args.round)
    if not docs:
        print(f"realdocs: no documents to read in {args.corpus} (its index.json)", file=sys.stderr)
        return 2
    lines = report(docs, args.path)
    if args.failures or args.held_out_failures:
        lines += failures(docs, args.held_out_failures)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps([d.__dict__ for d in docs], default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
