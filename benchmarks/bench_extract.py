"""Extraction quality and speed over generated documents with known truth.

    python benchmarks/bench_extract.py [--quick] [--invoices N] [--contracts N]
                                       [--extractors offline] [--json results.json]
    python benchmarks/bench_extract.py --report results.json   # the tables again
    python benchmarks/bench_extract.py --realdocs ../shared/realdocs   # + real invoices

Measured in one run, in one process pinned to one core (os.sched_setaffinity):

1. generation: milliseconds per sample PDF (conveyor.testing.samples);
2. text extraction (conveyor.documents.text): pages/s over every generated PDF, for
   invoices, for contracts and for one 200-page contract, the median of 3 passes;
   and text with word positions (DocumentText.layouts(), what the invoice reader uses);
3. for each extractor: field-level precision, recall and accuracy per document type;
   the accuracy of the invoice fields that have a target (number, dates, totals);
   confidence calibration: how many documents with every field right score >= 0.9, how
   many with a wrong field score < 0.9, and the accuracy of fields scored above and below
   0.9; the hard cases one by one; documents/s; tokens and cost per document where the
   extractor reports them.

Field rules: a field is right when it equals the truth after normalising (amounts by
value, text by case and spaces, lists item by item). Precision counts the non-null
answers that are right, recall the non-null truths that were found; a null answer for a
null truth is right for accuracy and counted in neither.

Adding an extractor: write a factory `(args) -> Extractor` and register it in EXTRACTORS.
Its `run(sample, text)` may be a plain or an async function and returns an Outcome (the
Extraction, plus tokens and cost if it has any); `close()` ends whatever it started.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import inspect
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from realdocs import flatten  # noqa: E402  (the real-invoice scorer, beside this file)

from conveyor.agents.offline import classify, extract_offline  # noqa: E402
from conveyor.documents.text import DocumentText, extract_text  # noqa: E402
from conveyor.documents.types import Extraction  # noqa: E402
from conveyor.testing.samples import Sample, make_contract, make_invoice  # noqa: E402

THRESHOLD = 0.9
TARGET_FIELDS = ("number", "issue_date", "due_date", "subtotal", "tax", "total")
LONG_CONTRACT_PAGES = 200


# ------------------------------------------------------------------------ the extractors


@dataclass
class Outcome:
    extraction: Extraction
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class Extractor:
    name: str
    run: Callable[[Sample, DocumentText], Outcome | Awaitable[Outcome]]
    close: Callable[[], Awaitable[None] | None] = lambda: None


def offline_extractor(args: argparse.Namespace) -> Extractor:
    def run(sample: Sample, text: DocumentText) -> Outcome:
        return Outcome(extract_offline(text, sample.kind))

    return Extractor("offline", run)


def llm_extractor(args: argparse.Namespace) -> Extractor:
    # The LLM extractor against the simulated model, with its options: see extract_llm.py.
    from extract_llm import llm_extractor as make

    extractor: Extractor = make(args, Extractor, Outcome)
    return extractor


EXTRACTORS: dict[str, Callable[[argparse.Namespace], Extractor]] = {
    "offline": offline_extractor,
    "llm": llm_extractor,
}


# ------------------------------------------------------------------------------ scoring


def normal(value: Any) -> Any:
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, str):
        try:
            return Decimal(value)
        except InvalidOperation:
            return " ".join(value.casefold().split())
    return value


@dataclass
class FieldTally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    right: int = 0
    total: int = 0

    def add(self, truth: Any, got: Any) -> bool:
        ok = bool(normal(truth) == normal(got))
        self.total += 1
        self.right += ok
        if got is not None and got != []:
            if ok:
                self.tp += 1
            else:
                self.fp += 1
        if truth is not None and truth != [] and not ok:
            self.fn += 1
        return ok

    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def accuracy(self) -> float:
        return self.right / self.total if self.total else 1.0


@dataclass
class DocScore:
    name: str
    kind: str
    hard: list[str]
    confidence: float
    wrong: list[str]
    checks: list[str]


@dataclass
class ExtractorResult:
    name: str
    fields: dict[str, dict[str, FieldTally]] = field(default_factory=dict)  # kind -> field
    docs: list[DocScore] = field(default_factory=list)
    # (field confidence >= threshold, right) counts
    field_calibration: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


def score(result: ExtractorResult, sample: Sample, extraction: Extraction) -> None:
    truth = flatten(sample.truth.model_dump(mode="json"))
    got = flatten(extraction.data)
    tallies = result.fields.setdefault(sample.kind, {})
    wrong = []
    for name, value in truth.items():
        ok = tallies.setdefault(name, FieldTally()).add(value, got.get(name))
        if not ok:
            wrong.append(name)
        confidence = extraction.fields.get(name)
        if confidence is not None:
            band = "high" if confidence >= THRESHOLD else "low"
            key = f"{band}_{'right' if ok else 'wrong'}"
            result.field_calibration[key] = result.field_calibration.get(key, 0) + 1
    result.docs.append(
        DocScore(
            sample.name,
            sample.kind,
            list(sample.hard),
            extraction.confidence,
            wrong,
            extraction.checks,
        )
    )


# ------------------------------------------------------------------------------ running


def corpus(invoices: int, contracts: int) -> tuple[list[Sample], float]:
    started = time.perf_counter()
    samples = [make_invoice(seed) for seed in range(invoices)]
    # Contracts of 1 to 12 pages: short agreements and longer ones.
    samples += [make_contract(seed, pages=1 + seed % 12) for seed in range(contracts)]
    return samples, (time.perf_counter() - started) / max(1, len(samples))


def text_speed(pdfs: list[bytes], repeats: int = 3) -> tuple[float, float]:
    """Pages per second of extract_text over `pdfs`, the median of `repeats` passes: per
    second of this process's CPU time (what one core does, whoever else shares it) and per
    second of wall time (what it did on this machine as busy as it was)."""
    pages = sum(extract_text(pdf).page_count for pdf in pdfs)  # also warms PDFium up
    cpu_rates, wall_rates = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for pdf in pdfs:
            extract_text(pdf)
        cpu_rates.append(pages / (time.process_time() - cpu))
        wall_rates.append(pages / (time.perf_counter() - wall))
    return statistics.median(cpu_rates), statistics.median(wall_rates)


def layout_speed(pdfs: list[bytes], repeats: int = 3) -> tuple[float, float]:
    """Pages per second of extract_text and then every page's words with their boxes."""
    pages = sum(len(extract_text(pdf).layouts()) for pdf in pdfs)
    cpu_rates, wall_rates = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for pdf in pdfs:
            extract_text(pdf).layouts()
        cpu_rates.append(pages / (time.process_time() - cpu))
        wall_rates.append(pages / (time.perf_counter() - wall))
    return statistics.median(cpu_rates), statistics.median(wall_rates)


async def run_extractor(
    extractor: Extractor, samples: list[Sample], texts: list[DocumentText]
) -> ExtractorResult:
    result = ExtractorResult(extractor.name)
    started = time.perf_counter()
    for sample, text in zip(samples, texts, strict=True):
        outcome = extractor.run(sample, text)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        assert isinstance(outcome, Outcome)
        score(result, sample, outcome.extraction)
        result.input_tokens += outcome.input_tokens
        result.output_tokens += outcome.output_tokens
        if outcome.cost_usd is not None:
            result.cost_usd = (result.cost_usd or 0.0) + outcome.cost_usd
    result.seconds = time.perf_counter() - started
    closed = extractor.close()
    if inspect.isawaitable(closed):
        await closed
    return result


def pin_to_one_core() -> str:
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity here)"


def machine() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "nproc": str(os.cpu_count()),
        "python": platform.python_version(),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    for package in ("pypdfium2", "reportlab", "pydantic"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    return facts


# ------------------------------------------------------------------------------- report


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def report(results: dict[str, Any]) -> list[str]:
    lines = ["## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in results["machine"].items()]
    speed = results["speed"]
    lines += [
        "",
        "## Speed (one core)",
        "",
        "| measure | per CPU second | per wall second | target (CPU) | met |",
        "| --- | ---: | ---: | --- | :---: |",
    ]
    for key, label in (
        ("invoice", "text extraction, invoices (pages/s)"),
        ("contract", "text extraction, contracts (pages/s)"),
        ("long_contract", f"text extraction, one {LONG_CONTRACT_PAGES}-page contract (pages/s)"),
    ):
        cpu, wall = speed[f"{key}_pages_per_s"]
        met = "yes" if cpu >= 500 else "**no**"
        lines.append(f"| {label} | {cpu:,.0f} | {wall:,.0f} | ≥ 500 | {met} |")
    if "invoice_layout_pages_per_s" in speed:
        cpu, wall = speed["invoice_layout_pages_per_s"]
        label = "text and word boxes, invoices (pages/s)"
        lines.append(f"| {label} | {cpu:,.0f} | {wall:,.0f} | - | - |")
    lines += [
        "",
        f"Sample generation: {speed['generation_ms']:.1f} ms per document (wall). "
        f"Characters per page: invoices {speed['invoice_chars_per_page']:,.0f}, "
        f"contracts {speed['contract_chars_per_page']:,.0f}. "
        f"classify() named the right type for {pct(results['classify_accuracy'])} "
        "of the documents.",
    ]
    for name, ex in results["extractors"].items():
        lines += ["", f"## Extractor `{name}`", ""]
        docs = ex["docs"]
        lines += [
            f"{len(docs)} documents in {ex['seconds']:.2f} s "
            f"({len(docs) / max(ex['seconds'], 1e-9):,.0f} documents/s, text extraction "
            "not included)."
        ]
        if ex["input_tokens"] or ex["output_tokens"]:
            cost = ex["cost_usd"]
            lines.append(
                f"Tokens per document: {ex['input_tokens'] / len(docs):,.0f} in, "
                f"{ex['output_tokens'] / len(docs):,.0f} out; cost per document: "
                + (f"${cost / len(docs):.5f}" if cost is not None else "unknown")
                + "."
            )
        for kind, tallies in ex["fields"].items():
            lines += [
                "",
                f"### {kind}: fields",
                "",
                "| field | precision | recall | accuracy |",
                "| --- | ---: | ---: | ---: |",
            ]
            for fname, t in tallies.items():
                tally = FieldTally(**t)
                lines.append(
                    f"| {fname} | {pct(tally.precision())} | {pct(tally.recall())} "
                    f"| {pct(tally.accuracy())} |"
                )
        inv = ex["fields"].get("invoice", {})
        if inv:
            lines += ["", "### invoice: the fields with a target (≥ 95 % accuracy)", ""]
            lines += ["| field | accuracy | met |", "| --- | ---: | :---: |"]
            for fname in TARGET_FIELDS:
                acc = FieldTally(**inv[fname]).accuracy()
                lines.append(f"| {fname} | {pct(acc)} | {'yes' if acc >= 0.95 else '**no**'} |")
        lines += calibration(ex)
        lines += hard_cases(ex)
    return lines


def calibration(ex: dict[str, Any]) -> list[str]:
    out = ["", f"### Confidence calibration (threshold {THRESHOLD})", ""]
    out += [
        "| documents | count | confidence ≥ 0.9 | confidence < 0.9 |",
        "| --- | ---: | ---: | ---: |",
    ]
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in ex["docs"]:
        by_kind[doc["kind"]].append(doc)
        by_kind["all"].append(doc)
    for kind, docs in by_kind.items():
        for label, group in (
            ("all fields right", [d for d in docs if not d["wrong"]]),
            ("a field wrong", [d for d in docs if d["wrong"]]),
        ):
            high = sum(d["confidence"] >= THRESHOLD for d in group)
            n = len(group)
            out.append(
                f"| {kind}, {label} | {n} | {high} ({pct(high / n) if n else '-'}) "
                f"| {n - high} ({pct((n - high) / n) if n else '-'}) |"
            )
    fc = ex["field_calibration"]
    high = fc.get("high_right", 0) + fc.get("high_wrong", 0)
    low = fc.get("low_right", 0) + fc.get("low_wrong", 0)
    out += [
        "",
        "| fields | count | accuracy |",
        "| --- | ---: | ---: |",
        f"| confidence ≥ 0.9 | {high} | {pct(fc.get('high_right', 0) / high) if high else '-'} |",
        f"| confidence < 0.9 | {low} | {pct(fc.get('low_right', 0) / low) if low else '-'} |",
    ]
    return out


def hard_cases(ex: dict[str, Any]) -> list[str]:
    kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in ex["docs"]:
        for hard in doc["hard"] or ["(none)"]:
            kinds[f"{doc['kind']}: {hard}"].append(doc)
    out = ["", "### By hard case", ""]
    out += [
        "| case | documents | all fields right | mean confidence | wrong and ≥ 0.9 "
        "| fields most often wrong |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for hard, docs in sorted(kinds.items()):
        right = sum(not d["wrong"] for d in docs)
        mean = statistics.mean(d["confidence"] for d in docs)
        confident_wrong = sum(bool(d["wrong"]) and d["confidence"] >= THRESHOLD for d in docs)
        counts: dict[str, int] = defaultdict(int)
        for d in docs:
            for w in d["wrong"]:
                counts[w] += 1
        worst = ", ".join(
            f"{k} ({v})" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:3]
        )
        out.append(f"| {hard} | {len(docs)} | {right} | {mean:.2f} | {confident_wrong} | {worst} |")
    return out


# --------------------------------------------------------------------------------- main


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    pinned = pin_to_one_core()
    facts = machine()
    facts["process"] = pinned
    samples, generation_s = corpus(args.invoices, args.contracts)
    invoices = [s.pdf for s in samples if s.kind == "invoice"]
    contracts = [s.pdf for s in samples if s.kind == "contract"]
    long_contract = make_contract(9999, pages=LONG_CONTRACT_PAGES).pdf
    invoice_rate = text_speed(invoices)
    invoice_layout_rate = layout_speed(invoices)
    contract_rate = text_speed(contracts)
    long_rate = text_speed([long_contract])
    texts = [extract_text(s.pdf, name=s.name) for s in samples]
    classified = sum(classify(t) == s.kind for s, t in zip(samples, texts, strict=True))

    def chars_per_page(kind: str) -> float:
        pages = [p for s, t in zip(samples, texts, strict=True) if s.kind == kind for p in t.pages]
        return statistics.mean(p.chars for p in pages) if pages else 0.0

    results: dict[str, Any] = {
        "machine": facts,
        "speed": {
            "generation_ms": generation_s * 1000,
            "invoice_pages_per_s": invoice_rate,
            "invoice_layout_pages_per_s": invoice_layout_rate,
            "contract_pages_per_s": contract_rate,
            "long_contract_pages_per_s": long_rate,
            "invoice_chars_per_page": chars_per_page("invoice"),
            "contract_chars_per_page": chars_per_page("contract"),
        },
        "classify_accuracy": classified / len(samples),
        "extractors": {},
    }
    for name in args.extractors.split(",") if args.extractors else []:
        if name not in EXTRACTORS:
            raise SystemExit(f"unknown extractor {name!r}; known: {', '.join(EXTRACTORS)}")
        outcome = await run_extractor(EXTRACTORS[name](args), samples, texts)
        results["extractors"][name] = asdict(outcome)
    if args.realdocs:
        from realdocs import report as realdocs_report
        from realdocs import run as realdocs_run

        results["realdocs"] = {
            path: realdocs_report(realdocs_run(Path(args.realdocs), path), path)
            for path in ("text-only", "as-is")
        }
    results["machine"]["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 invoices and 10 contracts")
    parser.add_argument("--invoices", type=int, default=150)
    parser.add_argument("--contracts", type=int, default=50)
    parser.add_argument(
        "--extractors", default="offline", help="comma-separated; '' for the speed part only"
    )
    parser.add_argument("--json", help="write every number here")
    parser.add_argument("--report", help="print the tables of a --json file, no measuring")
    parser.add_argument(
        "--realdocs", help="also the invoice agent on real invoices (../shared/realdocs)"
    )
    from extract_llm import add_arguments  # --llm-error-rate, --llm-model, ...

    add_arguments(parser)
    args = parser.parse_args()
    if args.report:
        results = json.loads(Path(args.report).read_text())
    else:
        if args.quick:
            args.invoices, args.contracts = 40, 10
        results = asyncio.run(main_async(args))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print("\n".join(report(results)))
    for lines in results.get("realdocs", {}).values():
        print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
