"""A 200-page contract against a rate-limited LLM endpoint: one attempt reading its chunks
against page-range child tasks on several workers.

    python benchmarks/bench_long_document.py [--modes sequential,today,fanout] [--workers 4]
        [--pages 200] [--tpm 200000] [--base-latency 4] [--per-token-latency 0.02]
        [--json out.json]

The contract is generated (`conveyor.testing.samples.make_contract(seed, pages)`) and
submitted as a user would (stored in PostgreSQL, a `contract` task with its page count).
The endpoint is the simulator (`conveyor.testing.simulator`) answering from the contract's
truth, with a token limit per real minute (`--tpm`, 60 s rolling window) and a latency per
request of `base + per_token * completion tokens` (the defaults: about 6 s, a hosted model
reading a 6,000-token prompt). The agent declares the endpoint's limit as its budget
(`max_tpm`). Modes, each with a fresh database and simulator, the same worker processes
(`--workers`, `--concurrency` 10 each):

- `sequential`: the chunks one after another in one attempt (`parallel=1`, no children);
- `today`: one attempt, four chunk requests at a time (the LLM extractor's default, no
  children): the code before child tasks;
- `fanout`: the document agent splits the contract into page-range children.

Reported per mode: wall time (the task's first attempt's start to its end, database
clock), requests, 429s, tokens, whether the result is the truth, and the cost on the task
against the sum of its children's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from long_document_app import AGENT, ENV, declare
from psycopg.rows import dict_row
from scratch import fresh_database

from conveyor import App, TaskStatus
from conveyor.documents.submit import submit_files
from conveyor.testing.answers import TruthResponder
from conveyor.testing.samples import make_contract
from conveyor.testing.simulator import Simulator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432"
MODEL = "sim-priced"
PRICES = {MODEL: {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}
MODES = {
    "sequential": {"parallel": 1, "fanout": False},
    "today": {"parallel": 4, "fanout": False},
    "fanout": {"parallel": 4, "fanout": True},
}


@dataclass
class Run:
    mode: str
    wall: float
    status: str
    correct: bool
    requests: int
    refused: int
    prompt_tokens: int
    completion_tokens: int
    children: int
    parent_cost: float | None
    children_cost: float | None
    parent_tokens: int
    children_tokens: int
    phases: dict[str, float]  # seconds from the first attempt's start (see phases())


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def model_env(url: str, args: argparse.Namespace) -> dict[str, str]:
    return {
        "CONVEYOR_LLM_MODEL": MODEL,
        "CONVEYOR_LLM_BASE_URL": f"{url}/v1",
        "CONVEYOR_LLM_API_KEY": "simulated",
        "CONVEYOR_LLM_MODE": "llm",  # the model reads it all (hybrid would trust the rules)
        "CONVEYOR_LLM_CHUNK_TOKENS": str(args.chunk_tokens),
        "CONVEYOR_LLM_PRICES": json.dumps(PRICES),
        "CONVEYOR_LLM_TIMEOUT": "300s",
    }


def start_workers(
    n: int, concurrency: int, database_url: str, env: dict[str, str], folder: Path
) -> list[subprocess.Popen[bytes]]:
    environment = {
        **os.environ,
        **env,
        "CONVEYOR_DATABASE_URL": database_url,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
    }
    procs = []
    for i in range(n):
        out = open(folder / f"worker-{i}.log", "wb")  # noqa: SIM115 (closed with the process)
        command = [sys.executable, "-m", "conveyor.cli", "worker", "--app"]
        command += ["long_document_app:app", "--concurrency", str(concurrency)]
        procs.append(subprocess.Popen(command, env=environment, stdout=out, stderr=out))
    return procs


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(45)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def run_mode(mode: str, args: argparse.Namespace, pdf: Path, truth: Any) -> Run:
    name = f"bench_long_{os.getpid()}_{mode}"
    options = {**MODES[mode], "limits": {"max_tpm": args.tpm}}
    simulator = Simulator(
        responder=TruthResponder({pdf.stem: {"type": "contract", "data": truth}}),
        tpm=args.tpm,
        window_seconds=60.0,
        base_latency=args.base_latency,
        per_token_latency=args.per_token_latency,
    )
    with (
        fresh_database(args.server, name) as database_url,
        simulator.start_in_thread() as served,
        tempfile.TemporaryDirectory(prefix="bench-long-") as tmp,
    ):
        env = {**model_env(served.url, args), ENV: json.dumps(options)}
        os.environ.update(env)  # the harness's App estimates tokens as the workers do
        app = App(database_url=database_url)
        declare(app, options)
        await app.database()  # migrates, registers the agent with its budget
        logs = Path(args.logs) / mode if args.logs else Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        procs = start_workers(args.workers, args.concurrency, database_url, env, logs)
        try:
            (submitted,) = await submit_files(app, [pdf], agent=AGENT)
            deadline = time.monotonic() + args.timeout
            while True:
                task = await app.get_task_async(submitted.task_id)
                if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED):
                    break
                if time.monotonic() > deadline:
                    log(f"{mode}: not done after {args.timeout:.0f} s")
                    break
                await asyncio.sleep(0.5)
        finally:
            stop_workers(procs)
        rows = await cost_rows(database_url, submitted.task_id)
        rows["phases"] = await phases(database_url, submitted.task_id)
        await app.aclose()
    stats = simulator.stats()
    admitted = [e for e in simulator.log() if e.status == 200]
    if admitted:
        t0 = min(e.at for e in admitted)
        spans = [(round(e.at - t0, 1), round((e.finished_at or e.at) - t0, 1)) for e in admitted]
        log(f"{mode}: requests (admitted, answered) s after the first: {sorted(spans)}")
    attempts = task.attempt_history
    wall = (
        (task.finished_at - attempts[0].started_at).total_seconds()
        if task.finished_at and attempts
        else float("nan")
    )
    result = task.result if isinstance(task.result, dict) else {}
    if task.error:
        log(f"{mode}: the task's error: {task.error}")
    family = getattr(task, "children", None)
    if family is not None and family.total:
        # The task's cost as the API gives it: its own attempts' and its children's.
        rows["parent_cost"] = family.llm_cost_usd
    return Run(
        mode=mode,
        wall=wall,
        status=str(task.status),
        correct=result.get("data") == truth,
        requests=stats.admitted + stats.refused,
        refused=stats.refused,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        **rows,
    )


async def cost_rows(database_url: str, task_id: int) -> dict[str, Any]:
    """The task's own cost and tokens, and its children's (none before child tasks)."""
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=dict_row) as conn:
        has_parent = await (
            await conn.execute(
                "SELECT 1 FROM information_schema.columns "
                "WHERE table_name = 'tasks' AND column_name = 'parent_id'"
            )
        ).fetchone()
        own = await (
            await conn.execute(
                "SELECT sum(llm_cost_usd) AS cost, "
                "coalesce(sum(input_tokens + output_tokens), 0) AS tokens "
                "FROM task_attempts WHERE task_id = %s",
                (task_id,),
            )
        ).fetchone()
        kids: dict[str, Any] = {"n": 0, "cost": None, "tokens": 0}
        if has_parent:
            kids = (
                await (
                    await conn.execute(
                        "SELECT count(DISTINCT t.id) AS n, sum(a.llm_cost_usd) AS cost, "
                        "coalesce(sum(a.input_tokens + a.output_tokens), 0) AS tokens "
                        "FROM tasks t LEFT JOIN task_attempts a ON a.task_id = t.id "
                        "WHERE t.parent_id = %s",
                        (task_id,),
                    )
                ).fetchone()
                or kids
            )
    assert own is not None
    return {
        "children": int(kids["n"]),
        "parent_cost": float(own["cost"]) if own["cost"] is not None else None,
        "children_cost": float(kids["cost"]) if kids["cost"] is not None else None,
        "parent_tokens": int(own["tokens"]),
        "children_tokens": int(kids["tokens"]),
    }


async def phases(database_url: str, task_id: int) -> dict[str, float]:
    """Where the time went, in seconds from the task's first attempt's start: the end of
    that attempt (the spawn), its children's first start and last end, the parent's last
    attempt's start and end (the merge)."""
    query = """
        WITH t AS (SELECT min(started_at) AS t0 FROM task_attempts WHERE task_id = %(id)s)
        SELECT
            extract(epoch FROM (SELECT min(finished_at) FROM task_attempts
                                WHERE task_id = %(id)s) - t0) AS first_attempt_end,
            extract(epoch FROM (SELECT min(a.started_at) FROM task_attempts a
                                JOIN tasks c ON c.id = a.task_id
                                WHERE c.parent_id = %(id)s) - t0) AS children_start,
            extract(epoch FROM (SELECT max(a.finished_at) FROM task_attempts a
                                JOIN tasks c ON c.id = a.task_id
                                WHERE c.parent_id = %(id)s) - t0) AS children_end,
            extract(epoch FROM (SELECT max(started_at) FROM task_attempts
                                WHERE task_id = %(id)s) - t0) AS last_attempt_start,
            extract(epoch FROM (SELECT max(finished_at) FROM task_attempts
                                WHERE task_id = %(id)s) - t0) AS last_attempt_end
        FROM t
    """
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=dict_row) as conn:
        try:
            row = await (await conn.execute(query, {"id": task_id})).fetchone()
        except psycopg.errors.UndefinedColumn:  # before child tasks: no parent_id
            return {}
        spans = await (
            await conn.execute(
                "SELECT extract(epoch FROM a.started_at - t0) AS s, "
                "extract(epoch FROM a.finished_at - t0) AS e, a.worker_id AS w "
                "FROM task_attempts a JOIN tasks c ON c.id = a.task_id, "
                "(SELECT min(started_at) AS t0 FROM task_attempts WHERE task_id = %(id)s) t "
                "WHERE c.parent_id = %(id)s ORDER BY a.started_at",
                {"id": task_id},
            )
        ).fetchall()
    if spans:
        shown = [(round(float(r["s"]), 1), round(float(r["e"]), 1)) for r in spans]
        log(f"children's attempts (start, end) s: {shown}")
        log(f"by worker: {sorted(collections.Counter(r['w'] for r in spans).values())}")
    return {k: round(float(v), 1) for k, v in (row or {}).items() if v is not None}


def table(runs: list[Run]) -> str:
    base = next((r.wall for r in runs if r.mode == "sequential"), None)
    lines = [
        "| mode | wall s | x sequential | requests | 429s | prompt + completion tokens "
        "| children | task cost USD | children's USD | right |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        ratio = f"{r.wall / base:.2f}" if base else "-"
        lines.append(
            f"| {r.mode} | {r.wall:.1f} | {ratio} | {r.requests} | {r.refused} | "
            f"{r.prompt_tokens:,} + {r.completion_tokens:,} | {r.children} | "
            f"{_usd(r.parent_cost)} | {_usd(r.children_cost)} | {'yes' if r.correct else 'NO'} |"
        )
    return "\n".join(lines)


def _usd(value: float | None) -> str:
    return "-" if value is None else f"{value:.6f}"


async def main_async(args: argparse.Namespace) -> int:
    sample = make_contract(args.seed, pages=args.pages)
    truth = sample.truth.model_dump(mode="json")
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-long-doc-") as tmp:
        pdf = Path(tmp) / sample.name
        pdf.write_bytes(sample.pdf)
        for mode in args.modes.split(","):
            if mode not in MODES:
                raise SystemExit(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")
            log(f"{mode}: {args.pages} pages, {args.workers} workers, tpm {args.tpm:,}")
            run = await run_mode(mode, args, pdf, truth)
            log(f"{mode}: {run}")
            runs.append(run)
    facts = {
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
        "loadavg_at_end": os.getloadavg(),
        "command": " ".join(sys.argv),
        "latency_s": args.base_latency,
        "per_token_latency_s": args.per_token_latency,
    }
    print(json.dumps(facts))
    print(table(runs))
    if args.json:
        Path(args.json).write_text(
            json.dumps({**facts, "runs": [r.__dict__ for r in runs]}, indent=2)
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="sequential,today,fanout")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=10, help="per worker (10)")
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tpm", type=int, default=200_000)
    parser.add_argument("--chunk-tokens", type=int, default=6000)
    parser.add_argument("--base-latency", type=float, default=4.0)
    parser.add_argument("--per-token-latency", type=float, default=0.02)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--server", default=os.environ.get("BENCH_SERVER", DEFAULT_SERVER))
    parser.add_argument("--json")
    parser.add_argument("--logs", help="keep the workers' logs in this folder")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
