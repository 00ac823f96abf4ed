"""The LLM extractor: simulated for bench_extract.py, or a real model on real invoices.

Simulated (bench_extract.py `--extractors llm`, or `offline,llm`). The model is the LLM
endpoint simulator in answer mode (conveyor.testing.answers), served from a thread of the
benchmark's process: it answers every request from the sample's truth, each field wrong
with probability --llm-error-rate (left out, or misread: a digit, a day, a word), seeded,
so a run is reproducible. What this measures is therefore the extractor's own part, not a
model's reading: the prompts and their chunking (tokens per document), the merging of a
long document's chunks, how much of the injected error the cross-checks catch
(confidence calibration) and what it would cost at the price of --llm-model
(genai-prices). The simulator answers at once (no latency), so documents/s is Conveyor's
overhead per request, not a model's speed.

Real (this file run as a script): any OpenAI-compatible server, as it is, on the invoices
of ../shared/realdocs (their text-only copies: what the page prints, no embedded XML):

    python benchmarks/extract_llm.py --base-url http://127.0.0.1:8081/v1 \
        [--model local] [--modes offline,hybrid,llm] [--every N [--start K]] [--skip N]
        [--limit N] [--no-stream] [--json out.json]
    python benchmarks/extract_llm.py --report a.json b.json ...   # runs reported together
        [--learn-from old.json ...]   # token-estimate corrections taught by earlier runs first

Each document is read as the `invoice` agent reads it, once per mode (offline: rules;
llm: the model reads it all; hybrid: conveyor.agents.hybrid), scored field by field with
benchmarks/realdocs.py's scorer. Reported per mode: accuracy per field, tokens in and out,
seconds, requests, format refusals and failed documents per document; for llm, the
admission estimate (conveyor.agents.llm_budget.estimate_tokens) against the tokens used, before
and after the per-agent correction (conveyor.llm.estimates) learnt from earlier documents,
by the estimator of the payload's `chars` and `pages` alone and by today's, which also
reads its `item_rows` (counted from the documents for run files that predate them).
`--prompts` needs no server: it prints the prompt characters each mode would send for the
documents (llm: every page; hybrid: only the documents the rules do not vouch for, with
only the lines that hold the fields asked for), the input side of the token comparison.

Per source too: fields right per mode. `--no-stream` asks unstreamed, for exact token counts
from a server whose streams carry no usage (llama-cpp-python's: streamed, the client counts
an output token per event and estimates the prompt; the report says how many answers were
so estimated). The recipe that reproduces a run (packages, model, server) is in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from conveyor.agents.llm import extract_llm  # noqa: E402
from conveyor.agents.llm_budget import DEFAULT_CHUNK_TOKENS  # noqa: E402
from conveyor.documents.text import DocumentText  # noqa: E402
from conveyor.llm.client import LLMClient  # noqa: E402
from conveyor.llm.pricing import Pricer  # noqa: E402
from conveyor.task import Task  # noqa: E402
from conveyor.testing.answers import TruthResponder  # noqa: E402
from conveyor.testing.samples import Sample  # noqa: E402
from conveyor.testing.simulator import Simulator  # noqa: E402

DEFAULT_ERROR_RATE = 0.05
REALDOCS = HERE.parent.parent / "shared" / "realdocs"
DEFAULT_MODEL = "gpt-4o-mini"  # priced by genai-prices; the simulator answers any name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-error-rate",
        type=float,
        default=DEFAULT_ERROR_RATE,
        help=f"llm: share of fields the simulated model gets wrong ({DEFAULT_ERROR_RATE})",
    )
    parser.add_argument(
        "--llm-model", default=DEFAULT_MODEL, help=f"llm: the model priced ({DEFAULT_MODEL})"
    )
    parser.add_argument(
        "--llm-chunk-tokens",
        type=int,
        default=DEFAULT_CHUNK_TOKENS,
        help=f"llm: prompt tokens per request ({DEFAULT_CHUNK_TOKENS})",
    )
    parser.add_argument("--llm-seed", type=int, default=1, help="llm: the errors' seed (1)")


def llm_extractor(args: argparse.Namespace, Extractor: Any, Outcome: Any) -> Any:
    """The extractor, made of the benchmark's own Extractor and Outcome types."""
    error_rate = getattr(args, "llm_error_rate", DEFAULT_ERROR_RATE)
    model = getattr(args, "llm_model", DEFAULT_MODEL)
    chunk_tokens = getattr(args, "llm_chunk_tokens", DEFAULT_CHUNK_TOKENS)
    responder = TruthResponder({}, error_rate=error_rate, seed=getattr(args, "llm_seed", 1))
    server = Simulator(responder=responder, base_latency=0, per_token_latency=0)
    served = server.start_in_thread()
    client: LLMClient | None = None
    pricer = Pricer()

    async def run(sample: Sample, text: DocumentText) -> Outcome:
        nonlocal client
        if client is None:  # made in the benchmark's event loop, which then uses it
            client = LLMClient(model=model, base_url=f"{served.url}/v1")
        responder.add(sample.name.removesuffix(".pdf"), sample.truth.model_dump(mode="json"))
        task = Task(
            id=0,
            agent=sample.kind,
            payload={},
            attempt=1,
            max_attempts=1,
            priority=0,
            created_at=datetime.now(UTC),
        )
        extraction = await extract_llm(
            client, task, text, sample.kind, name=sample.name, chunk_tokens=chunk_tokens
        )
        usage = task.usage
        cost = pricer.cost(model, usage.input_tokens, usage.output_tokens)
        return Outcome(
            extraction,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=None if cost is None else float(cost),
        )

    async def close() -> None:
        if client is not None:
            await client.aclose()
        served.stop()

    return Extractor(f"llm (simulated, {error_rate:.0%} field errors)", run, close)


# ------------------------------------------------------------------------ a real model


MODES = ("offline", "hybrid", "llm")


@dataclass
class Run:
    """One document read in one mode: its score, and what it took."""

    mode: str
    doc: Any  # realdocs.Doc
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    refusals: int = 0
    estimate: int = 0
    chars: int = 0  # the payload the estimate is made from, to replay other estimators
    pages: int = 0
    item_rows: int | None = None  # None: a run file from before rows were counted
    estimated_usage: int = 0  # answers whose prompt tokens the server did not count
    error: str | None = None


async def read_real(args: argparse.Namespace) -> list[Run]:
    import realdocs  # benchmarks/realdocs.py: its corpus walk and its scorer

    from conveyor.agents.hybrid import extract_hybrid
    from conveyor.agents.llm_budget import estimate_tokens
    from conveyor.agents.offline import extract_offline
    from conveyor.documents.amounts import item_rows
    from conveyor.documents.text import extract_text

    folder = args.corpus / "text-only"
    langs = realdocs.languages(args.corpus)
    held_out = realdocs.held_out_sources(args.corpus)
    pdfs = selected(args)
    client = LLMClient(
        model=args.model, base_url=args.base_url, timeout=args.timeout, stream=not args.no_stream
    )
    runs: list[Run] = []
    try:
        for number, pdf in enumerate(pdfs, 1):
            truth = json.loads(pdf.with_suffix(".json").read_text())[0]
            label, source = str(pdf.relative_to(folder)), pdf.parent.name
            text = await asyncio.to_thread(extract_text, pdf, name=pdf.name)
            payload = {
                "chars": len(text.text),
                "pages": text.page_count,
                "item_rows": item_rows(text.text),
            }
            for mode in args.modes:
                task = _task()
                before = (client.requests, client.refusals, client.estimated_usage)
                started = time.perf_counter()
                error = None
                try:
                    if mode == "offline":
                        found = await asyncio.to_thread(extract_offline, text, "invoice")
                    elif mode == "hybrid":
                        found = await extract_hybrid(
                            client,
                            task,
                            text,
                            "invoice",
                            name=pdf.name,
                            chunk_tokens=args.chunk_tokens,
                        )
                    else:
                        found = await extract_llm(
                            client,
                            task,
                            text,
                            "invoice",
                            name=pdf.name,
                            chunk_tokens=args.chunk_tokens,
                        )
                except Exception as exc:  # a failed document is a result, and the run goes on
                    error = f"{type(exc).__name__}: {exc}"
                seconds = time.perf_counter() - started
                kept_out = source in held_out
                language = langs.get(pdf.stem, "?")
                if error is None:
                    doc = realdocs.scored(
                        label, source, language, truth, found, seconds, held_out=kept_out
                    )
                else:
                    doc = realdocs.failed(
                        label, source, language, RuntimeError(error), held_out=kept_out
                    )
                    doc.seconds = seconds
                run = Run(
                    mode,
                    doc,
                    input_tokens=task.usage.input_tokens,
                    output_tokens=task.usage.output_tokens,
                    requests=client.requests - before[0],
                    refusals=client.refusals - before[1],
                    estimated_usage=client.estimated_usage - before[2],
                    estimate=estimate_tokens(
                        payload, doc_type="invoice", chunk_tokens=args.chunk_tokens
                    ),
                    chars=payload["chars"],
                    pages=payload["pages"],
                    item_rows=payload["item_rows"],
                    error=error,
                )
                runs.append(run)
                ok = sum(f["ok"] for f in doc.fields.values())
                print(
                    f"[{number}/{len(pdfs)}] {mode:7} {label}: {ok}/{len(doc.fields)} right, "
                    f"{seconds:.1f} s, {run.input_tokens}+{run.output_tokens} tokens, "
                    f"{run.requests} request(s){' ' + error if error else ''}",
                    flush=True,
                )
                if args.json:
                    args.json.write_text(json.dumps([_row(r) for r in runs], indent=1, default=str))
    finally:
        await client.aclose()
    return runs


def selected(args: argparse.Namespace) -> list[Path]:
    """The documents of the corpus's text-only copies that the options select."""
    pdfs = sorted((args.corpus / "text-only").glob("*/*.pdf"))
    pdfs = [p for p in pdfs if p.with_suffix(".json").exists()][args.start :: args.every]
    return pdfs[args.skip :][: args.limit or None]


def _task() -> Task:
    return Task(
        id=0,
        agent="invoice",
        payload={},
        attempt=1,
        max_attempts=1,
        priority=0,
        created_at=datetime.now(UTC),
    )


def _row(run: Run) -> dict[str, Any]:
    return {**{k: v for k, v in run.__dict__.items() if k != "doc"}, "doc": run.doc.__dict__}


def real_report(runs: list[Run], modes: Sequence[str], learnt: Sequence[Run] = ()) -> list[str]:
    import realdocs

    by_mode = {m: [r for r in runs if r.mode == m] for m in modes}
    docs = {m: [r.doc for r in rs] for m, rs in by_mode.items()}
    n = len(next(iter(docs.values()), []))
    out = [f"## A real model on realdocs, text-only: {n} documents", ""]
    out += ["| field | " + " | ".join(modes) + " |", "| --- |" + " ---: |" * len(modes)]
    for name in (*realdocs.FIELDS, None):
        cells = []
        for m in modes:
            ok, total = realdocs._tally(docs[m], name)
            cells.append(f"{realdocs.pct(ok, total)} ({ok}/{total})")
        out.append(f"| {name or '**all fields**'} | " + " | ".join(cells) + " |")
    rows = {
        "documents entirely right": lambda rs: str(
            sum(all(f["ok"] for f in r.doc.fields.values()) and r.doc.fields != {} for r in rs)
        ),
        "failed documents (no answer)": lambda rs: str(sum(r.error is not None for r in rs)),
        "tokens in / document": lambda rs: f"{_mean([r.input_tokens for r in rs]):.0f}",
        "tokens out / document": lambda rs: f"{_mean([r.output_tokens for r in rs]):.0f}",
        "tokens, all documents": lambda rs: str(sum(r.input_tokens + r.output_tokens for r in rs)),
        "seconds / document": lambda rs: f"{_mean([r.doc.seconds for r in rs]):.1f}",
        "requests / document": lambda rs: f"{_mean([r.requests for r in rs]):.2f}",
        "documents the model was asked about": lambda rs: str(sum(r.requests > 0 for r in rs)),
        "format refusals": lambda rs: str(sum(r.refusals for r in rs)),
        "answers with estimated usage": lambda rs: str(sum(r.estimated_usage for r in rs)),
    }
    for title, cell in rows.items():
        out.append(f"| {title} | " + " | ".join(cell(by_mode[m]) for m in modes) + " |")
    out += ["", *source_report(docs, modes)]
    errors = [r for r in runs if r.error]
    if errors:
        out += ["", "Failed documents:"]
        out += [f"- {r.mode} {r.doc.path}: {r.error}" for r in errors]
    measured = [r for r in by_mode.get("llm", []) if r.error is None and r.input_tokens]
    if measured:
        out += ["", *estimate_report(measured, learnt=_measured(learnt))]
    return out


def source_report(docs: dict[str, list[Any]], modes: Sequence[str]) -> list[str]:
    """Fields right per source and mode."""
    import realdocs

    sources = sorted({d.source for ds in docs.values() for d in ds})
    out = ["| source (documents) | " + " | ".join(modes) + " |", "| --- |" + " ---: |" * len(modes)]
    for source in sources:
        cells = []
        for m in modes:
            ok, total = realdocs._tally([d for d in docs[m] if d.source == source])
            cells.append(f"{realdocs.pct(ok, total)} ({ok}/{total})")
        count = sum(d.source == source for d in docs[modes[0]])
        out.append(f"| {source} ({count}) | " + " | ".join(cells) + " |")
    return out


def estimate_report(
    runs: list[Run], chunk_tokens: int = DEFAULT_CHUNK_TOKENS, learnt: Sequence[Run] = ()
) -> list[str]:
    """The admission estimate against the tokens used, by the estimator before item rows
    were counted (the payload's `chars` and `pages`) and by today's (with `item_rows`),
    side by side: raw, and corrected from the documents before each (as the per-agent
    correction learns from task_attempts) by the median ratio (the correction before
    2026-12-02) and by the Theil-Sen line (now). `learnt`: runs the corrections learn
    from first, not reported (earlier runs of the same agent and server)."""
    from conveyor.agents.llm_budget import estimate_tokens
    from conveyor.llm.estimates import MIN_SAMPLES, Correction

    def payload(r: Run, rows: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"chars": r.chars, "pages": r.pages}
        if rows:
            out["item_rows"] = r.item_rows
        return out

    def estimate(r: Run, rows: bool) -> int:
        if not r.chars:  # a run file without its payload: the estimate it made
            return r.estimate
        return estimate_tokens(payload(r, rows), doc_type="invoice", chunk_tokens=chunk_tokens)

    def actual(r: Run) -> int:
        return r.input_tokens + r.output_tokens

    seen = {rows: [(estimate(r, rows), actual(r)) for r in learnt] for rows in (False, True)}
    pairs = {rows: [(estimate(r, rows), actual(r)) for r in runs] for rows in (False, True)}
    names = {False: "chars and pages", True: "with item rows"}
    corrections = {rows: Correction() for rows in (False, True)}
    title = f"token estimate / actual (llm, {len(runs)} documents)"
    if learnt:
        title += f", corrections first taught by {len(learnt)} earlier"
    out = [f"| {title} | median | range | within ±30 % |", "| --- | ---: | ---: | ---: |"]
    ratios = {}
    for rows in (False, True):
        ratios[rows] = replayed(pairs[rows], corrections[rows], seen[rows])
        out += [f"| {names[rows]}: {line}" for line in ratio_rows(ratios[rows], len(learnt))]
    fresh = max(0, MIN_SAMPLES - len(learnt))
    if fresh:
        out += [
            "",
            f"(The first {fresh} are corrected from nothing: a correction needs "
            f"{MIN_SAMPLES} attempts; '... the corrected' leaves them out.)",
        ]
    for rows in (False, True):
        fit = corrections[rows].fit
        if fit is not None:
            out += [
                "",
                f"{names[rows]}: the line learnt from all {len(learnt) + len(runs)}: actual = "
                f"{fit.intercept:.0f} + {fit.slope:.2f} x estimate (estimates "
                f"{fit.low}-{fit.high}; median ratio {fit.ratio:.2f}).",
            ]
    out += [
        "",
        "| document | chars | item rows | actual (in + out) | estimate, chars and pages "
        "(corrected / actual) | estimate, with item rows (corrected / actual) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, r in enumerate(runs):
        cells = [f"{pairs[k][i][0]} ({ratios[k]['Theil-Sen line'][i]:.2f})" for k in (False, True)]
        out.append(
            f"| {r.doc.path} | {r.chars or '?'} | "
            f"{'?' if r.item_rows is None else r.item_rows} | {actual(r)} "
            f"({r.input_tokens} + {r.output_tokens}) | " + " | ".join(cells) + " |"
        )
    return out


def prompt_sizes(args: argparse.Namespace) -> list[str]:
    """The prompt characters llm and hybrid would send (no model asked)."""
    from conveyor.agents.hybrid import excerpt_of, hints_for, plan_for, schema_for_fields
    from conveyor.agents.llm import _messages
    from conveyor.agents.llm_budget import overhead_tokens
    from conveyor.agents.llm_pages import chunk_text_pages
    from conveyor.agents.offline import extract_offline
    from conveyor.documents.text import extract_text
    from conveyor.documents.types import json_schema
    from conveyor.llm import formats

    def chars(doc: DocumentText, schema: dict[str, Any], hints: str | None) -> int:
        room = args.chunk_tokens - overhead_tokens("invoice")
        rules = formats.instructions(1, formats.portable(schema)) or {"content": ""}
        return sum(
            len(rules["content"])
            + sum(len(m["content"]) for m in _messages("x", "invoice", doc.page_count, c, hints))
            for c in chunk_text_pages(doc.pages, room)
        )

    pdfs = selected(args)
    llm = hybrid = asked = 0
    for pdf in pdfs:
        text = extract_text(pdf, name=pdf.name)
        whole = json_schema("invoice")
        llm += chars(text, whole, None)
        offline = extract_offline(text, "invoice")
        plan = plan_for("invoice", offline, text)
        if not plan.ask:
            continue
        asked += 1
        hints = hints_for(offline, plan)
        if plan.whole or plan.regions is None:
            hybrid += chars(text, whole, hints)
        else:
            excerpt = excerpt_of(text, [plan.regions[f] for f in plan.ask])
            hybrid += chars(excerpt, schema_for_fields(whole, plan.ask), hints)
    return [
        f"{len(pdfs)} documents, the model asked about {asked} in hybrid",
        f"prompt characters: llm {llm:,}, hybrid {hybrid:,} "
        f"({100 * hybrid / max(1, llm):.0f} % of llm)",
    ]


def replayed(
    pairs: list[tuple[int, int]],
    correction: Any,
    learnt: Sequence[tuple[int, int]] = (),
) -> dict[str, list[float]]:
    """estimate / actual of (estimate, actual) pairs, as estimated and each corrected from
    the pairs before it (after the `learnt` ones, not reported) by the median ratio and
    by `correction` (a fresh Correction, left having learnt them all)."""
    from conveyor.llm.estimates import MIN_SAMPLES, theil_sen

    before = list(learnt)
    for e, a in learnt:
        correction.learn(e, a)
    out: dict[str, list[float]] = {"as estimated": [], "median ratio": [], "Theil-Sen line": []}
    for e, a in pairs:
        ratio = theil_sen(before).ratio if len(before) >= MIN_SAMPLES else 1.0
        out["as estimated"].append(e / a)
        out["median ratio"].append(math.ceil(e * ratio) / a)
        out["Theil-Sen line"].append(correction.apply(e) / a)
        correction.learn(e, a)
        before.append((e, a))
    return out


def ratio_rows(ratios: dict[str, list[float]], learnt: int = 0) -> list[str]:
    """Table rows (median, range, within ±30 %) of `replayed`'s ratios; with fewer than
    MIN_SAMPLES `learnt` before them, also of the documents that were corrected."""
    from conveyor.llm.estimates import MIN_SAMPLES

    def line(title: str, values: list[float]) -> str:
        within = sum(0.7 <= x <= 1.3 for x in values)
        ordered = sorted(values)
        return (
            f"{title} | {statistics.median(values):.2f} | {ordered[0]:.2f} - {ordered[-1]:.2f} "
            f"| {within}/{len(values)} ({100 * within / len(values):.0f} %) |"
        )

    rows = [
        line("as estimated before the call", ratios["as estimated"]),
        line("corrected from the documents before it: median ratio", ratios["median ratio"]),
        line("corrected from the documents before it: Theil-Sen line", ratios["Theil-Sen line"]),
    ]
    fresh = max(0, MIN_SAMPLES - learnt)
    n = len(ratios["as estimated"])
    if fresh and n > fresh:  # the first ones have nothing to be corrected from
        for kind in ("median ratio", "Theil-Sen line"):
            rows.append(line(f"... the {n - fresh} corrected: {kind}", ratios[kind][fresh:]))
    return rows


def prompt_tokens(args: argparse.Namespace) -> list[str]:
    """The prompt tokens of each llm-mode request as the server counts them, against the
    estimate's prompt part (the text at four characters a token, plus `overhead_tokens`),
    without generating anything: llama-server's POST /apply-template (the chat template,
    as a request would be prompted) and POST /tokenize (its tokenizer). json_schema
    strict, the form llama-server takes, sends no schema in the prompt (the grammar
    enforces it), so none is added here."""
    import httpx

    from conveyor.agents.llm import _messages
    from conveyor.agents.llm_budget import overhead_tokens, text_tokens
    from conveyor.agents.llm_pages import chunk_text_pages
    from conveyor.documents.text import extract_text

    root = args.base_url.rstrip("/").removesuffix("/v1")
    overhead = overhead_tokens("invoice")
    out = [
        "| document | chars | prompt estimate | prompt tokens (server) | estimate / actual |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    pairs = []
    with httpx.Client(timeout=60) as http:
        for pdf in selected(args):
            text = extract_text(pdf, name=pdf.name)
            room = args.chunk_tokens - overhead
            actual = estimate = 0
            for chunk in chunk_text_pages(text.pages, room):
                messages = _messages(pdf.name, "invoice", text.page_count, chunk)
                prompt = http.post(f"{root}/apply-template", json={"messages": messages})
                tokens = http.post(
                    f"{root}/tokenize", json={"content": prompt.raise_for_status().json()["prompt"]}
                )
                actual += len(tokens.raise_for_status().json()["tokens"])
                estimate += text_tokens(chunk.text) + overhead
            pairs.append((estimate, actual))
            out.append(
                f"| {pdf.relative_to(args.corpus / 'text-only')} | {len(text.text)} | "
                f"{estimate} | {actual} | {estimate / actual:.2f} |"
            )
    from conveyor.llm.estimates import Correction

    correction = Correction()
    out += ["", "| prompt estimate / actual | median | range | within ±30 % |"]
    out += ["| --- | ---: | ---: | ---: |"]
    out += [f"| {line}" for line in ratio_rows(replayed(pairs, correction))]
    fit = correction.fit
    if fit is not None:
        out += [
            "",
            f"The line from all {len(pairs)}: {fit.intercept:.0f} + {fit.slope:.2f} x estimate",
        ]
    return out


def _load(path: Path) -> list[Run]:
    import realdocs

    runs = []
    for row in json.loads(path.read_text()):
        doc = realdocs.Doc(**row.pop("doc"))
        runs.append(Run(doc=doc, **row))
    return runs


def _measured(runs: Sequence[Run]) -> list[Run]:
    """The llm-mode runs that used tokens: what an agent's correction learns from."""
    return [r for r in runs if r.mode == "llm" and r.error is None and r.input_tokens]


def _count_rows(runs: Sequence[Run], corpora: Sequence[Path]) -> int:
    """Item rows counted from the documents, for runs whose files predate the count (a
    run file names its document, found in the first of `corpora` that has it); the
    number of runs so filled in."""
    from conveyor.documents.amounts import item_rows
    from conveyor.documents.text import extract_text

    filled = 0
    for run in runs:
        found = [c / "text-only" / run.doc.path for c in corpora]
        pdf = next((p for p in found if p.exists()), None)
        if run.item_rows is None and pdf is not None:
            run.item_rows = item_rows(extract_text(pdf, name=pdf.name).text)
            filled += 1
    return filled


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description="a real model on realdocs (see the docstring)")
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL")
    parser.add_argument(
        "--prompts", action="store_true", help="no model: the prompt sizes of llm and hybrid"
    )
    parser.add_argument(
        "--prompt-tokens",
        action="store_true",
        help="with --base-url of a llama-server: each llm prompt's tokens, nothing generated",
    )
    parser.add_argument("--model", default="local", help="the model name sent (local)")
    parser.add_argument("--corpus", type=Path, default=REALDOCS)
    parser.add_argument("--modes", default=",".join(MODES), help="offline,hybrid,llm")
    parser.add_argument("--limit", type=int, default=0, help="the first N documents only")
    parser.add_argument(
        "--every", type=int, default=1, help="every Nth document (a sample across sources)"
    )
    parser.add_argument("--start", type=int, default=0, help="with --every: the first one (0)")
    parser.add_argument(
        "--skip", type=int, default=0, help="skip the first N of the selection (finish a run)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="per request (600 s)")
    parser.add_argument("--chunk-tokens", type=int, default=DEFAULT_CHUNK_TOKENS)
    parser.add_argument("--json", type=Path, help="every run, written as it goes")
    parser.add_argument(
        "--no-stream", action="store_true", help="ask unstreamed (exact usage from any server)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="report the runs of earlier --json files, together (partial runs too)",
    )
    parser.add_argument(
        "--learn-from",
        type=Path,
        nargs="+",
        default=[],
        help="with --report: earlier --json files the token-estimate corrections learn "
        "from first (not reported), as an agent's correction learns from its attempts",
    )
    args = parser.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")
    if args.prompt_tokens:
        print("\n".join(prompt_tokens(args)))
        return 0
    if args.prompts:
        print("\n".join(prompt_sizes(args)))
        return 0
    if not args.report and not args.base_url:
        parser.error("--base-url is needed to ask a model (or --prompts, or --report)")
    runs = (
        [r for f in args.report for r in _load(f)] if args.report else asyncio.run(read_real(args))
    )
    learnt = [r for f in args.learn_from for r in _load(f)]
    if args.report:
        args.modes = [m for m in args.modes if any(r.mode == m for r in runs)]
        complete = {r.doc.path for r in runs if r.mode == args.modes[-1]}
        runs = [r for r in runs if r.doc.path in complete]  # documents read in every mode
        # The kept runs of 2026-12-02 read realdocs, whatever --corpus the others read.
        filled = _count_rows([*learnt, *runs], [args.corpus, REALDOCS])
        if filled:
            print(f"(item rows counted from the documents for {filled} runs that predate them)\n")
    print("\n".join(real_report(runs, args.modes, learnt)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
