"""Conveyor's admission against a rate-limited LLM endpoint: 429s, use of the token budget,
time in queue by priority, wall time.

    python benchmarks/bench_limits.py [--quick] [--scenarios a,b,c,d,e] [--json out.json]

500 tasks of heavy-tailed sizes (100 to 20,000 tokens) go, all enqueued at once, through
4 worker processes (concurrency 16 each) to the LLM endpoint simulator
(`python -m conveyor.testing.simulator`, one subprocess per scenario), whose minute is scaled
to a 10 s window. Each scenario gets a fresh database (bench_limits_<pid>_<scenario>,
dropped at the end) and a fresh simulator:

(a) no limits declared: Conveyor only hears of the endpoint's limits through 429s;
(b) concurrency cap only (max_concurrent, 8 in all);
(c) token budget (max_tpm = the simulator's TPM, window 10 s);
(d) combined (cap + max_tpm + max_rpm = the simulator's), and the simulator's TPM halved
    at the end of the first window, unknown to Conveyor: its adaptive back-off must cope;
(e) adaptive only: no limits declared, and the simulator's TPM halved as in (d).
(f) (not run by default) a binding request limit: max_rpm = the simulator's RPM, set low.

Every agent raises Throttled(retry_after=Retry-After) on a 429: that is how an agent tells
Conveyor, and it is what the adaptive back-off (AIMD) feeds on, in every scenario.

Reported per scenario: 429s (all, and the share of requests refused after the first
window), tokens admitted per fixed window ÷ the TPM then in force (the fullest window, and
the mean over the windows after the first that ended with at least a whole TPM of work
still waiting), p50/p99 time in queue by priority (task created -> start of its attempt
that succeeded) and wall time (first task created -> last task finished).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import limits_app
import psycopg
from limits_analysis import Result, analyse
from psycopg.rows import dict_row
from scratch import fresh_database

from conveyor import App, NewTask, queue

HERE = Path(__file__).resolve().parent
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432"


@dataclass(frozen=True)
class Plan:
    tasks: int = 500
    seed: int = 20240601
    window: float = 10.0  # the scaled minute, seconds
    tpm: int = 200_000  # tokens per window, at the simulator
    rpm: int = 1_000  # requests per window: generous (about 100 are needed at full TPM)
    binding_rpm: int = 40  # scenario (f) only
    cap: int = 8  # max_concurrent of (b) and (d), across all workers
    workers: int = 4
    concurrency: int = 16  # per worker
    base_latency: float = 0.05  # seconds per request, plus per completion token:
    per_token_latency: float = 0.00002
    min_tokens: int = 100
    max_tokens: int = 20_000
    median_tokens: float = 1_500  # lognormal before clipping
    sigma: float = 1.1
    high_priority_share: float = 0.2
    high_priority: int = 5
    timeout: float = 360.0  # seconds a scenario may take before it is declared stuck
    sample_every: float = 0.25  # seconds between samples of the agent's throttling state


FULL = Plan()
# Same shape in less time: 200 tasks against 80,000 tokens per 5 s window is about as many
# windows of work as the full run, each half as long.
QUICK = Plan(tasks=200, window=5.0, tpm=80_000, rpm=500, binding_rpm=20)


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    limits: dict[str, int]  # declared on the agent (window_seconds added)
    halve_tpm: bool = False  # the simulator's TPM halves at the end of the first window
    sim_rpm: int | None = None  # instead of the plan's RPM


def scenarios(plan: Plan) -> dict[str, Scenario]:
    return {
        s.key: s
        for s in (
            Scenario("a", "no limits", {}),
            Scenario("b", f"cap {plan.cap}", {"max_concurrent": plan.cap}),
            Scenario("c", "token budget", {"max_tpm": plan.tpm}),
            Scenario(
                "d",
                "combined + adaptive (TPM halved)",
                {"max_concurrent": plan.cap, "max_tpm": plan.tpm, "max_rpm": plan.rpm},
                halve_tpm=True,
            ),
            Scenario("e", "adaptive only (TPM halved)", {}, halve_tpm=True),
            Scenario(
                "f",
                f"request budget {plan.binding_rpm} (binding)",
                {"max_tpm": plan.tpm, "max_rpm": plan.binding_rpm},
                sim_rpm=plan.binding_rpm,
            ),
        )
    }


def log(message: str) -> None:
    """Progress goes to stderr; stdout is kept for the tables."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# The workload


def workload(plan: Plan) -> list[dict[str, Any]]:
    """The tasks, the same in every scenario: lognormal sizes clipped to the range, a share
    of them at high priority, in a shuffled (seeded) order."""
    rng = random.Random(plan.seed)
    mu = math.log(plan.median_tokens)
    tasks = []
    for n in range(plan.tasks):
        size = round(rng.lognormvariate(mu, plan.sigma))
        size = max(plan.min_tokens, min(plan.max_tokens, size))
        priority = plan.high_priority if rng.random() < plan.high_priority_share else 0
        tasks.append({"n": n, "tokens": size, "priority": priority})
    return tasks


def describe_workload(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    sizes = sorted(t["tokens"] for t in tasks)
    return {
        "tasks": len(sizes),
        "total_tokens": sum(sizes),
        "mean": sum(sizes) / len(sizes),
        "median": sizes[len(sizes) // 2],
        "p90": sizes[int(0.9 * (len(sizes) - 1))],
        "max": sizes[-1],
        "min": sizes[0],
        "at_max": sum(s == sizes[-1] for s in sizes),
        "high_priority": sum(t["priority"] > 0 for t in tasks),
    }


# ---------------------------------------------------------------------------------------
# Processes: the simulator and the workers


class SimulatorProcess:
    """`python -m conveyor.testing.simulator` on a free port; its output goes to a file."""

    def __init__(self, plan: Plan, rpm: int, folder: Path) -> None:
        self.out = folder / "simulator.log"
        self._file = self.out.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "conveyor.testing.simulator",
                "--tpm",
                str(plan.tpm),
                "--rpm",
                str(rpm),
                "--window",
                str(plan.window),
                "--port",
                "0",
                "--base-latency",
                str(plan.base_latency),
                "--per-token-latency",
                str(plan.per_token_latency),
            ],
            stdout=self._file,
            stderr=subprocess.STDOUT,
        )
        self.url = ""

    async def started(self, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"LLM simulator on (http://\S+) ", self.out.read_text())
            if found:
                self.url = found.group(1)
                return self.url
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        raise RuntimeError(f"the simulator did not start:\n{self.out.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._file.close()


class WorkerProcess:
    """`conveyor worker --app limits_app:app`, drained by SIGTERM."""

    def __init__(self, n: int, env: dict[str, str], concurrency: int, folder: Path) -> None:
        self.out = folder / f"worker{n}.log"
        self._file = self.out.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "conveyor.cli",
                "worker",
                "--app",
                "limits_app:app",
                "--concurrency",
                str(concurrency),
            ],
            env=env,
            cwd=HERE,
            stdout=self._file,
            stderr=subprocess.STDOUT,
        )

    def started(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"a worker exited early:\n{self.out.read_text()}")
        return "worker started" in self.out.read_text()

    def terminate(self) -> None:
        """Drain: one SIGTERM (a second one would hand running tasks back at once)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 45.0) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._file.close()


# ---------------------------------------------------------------------------------------
# Databases


async def fetch(url: str, query: str) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        cur = await conn.execute(query)
        return list(await cur.fetchall())


TASKS_QUERY = """
SELECT id, priority, status, extract(epoch FROM created_at)::float8 AS created_at,
       extract(epoch FROM finished_at)::float8 AS finished_at
FROM tasks ORDER BY id"""

ATTEMPTS_QUERY = """
SELECT task_id, attempt, status, reserved_tokens, input_tokens, output_tokens,
       extract(epoch FROM started_at)::float8 AS started_at,
       extract(epoch FROM finished_at)::float8 AS finished_at
FROM task_attempts ORDER BY started_at"""


# ---------------------------------------------------------------------------------------
# One scenario


@dataclass
class Run:
    scenario: Scenario
    result: Result
    samples: list[dict[str, Any]]  # the agent's throttling state, every sample_every s
    stats: dict[str, Any]  # the simulator's /sim/stats at the end
    log: list[dict[str, Any]]  # and its /sim/log


async def run_scenario(
    plan: Plan, scenario: Scenario, tasks: list[dict[str, Any]], server: str, folder: Path
) -> Run:
    limits = {**scenario.limits, "window_seconds": plan.window}
    name = f"bench_limits_{os.getpid()}_{scenario.key}"
    log(f"({scenario.key}) {scenario.title}: database {name}, agent limits {limits}")
    sim_rpm = scenario.sim_rpm or plan.rpm
    with fresh_database(server, name) as url:
        simulator = SimulatorProcess(plan, sim_rpm, folder)
        workers: list[WorkerProcess] = []
        app = App(url)
        limits_app.declare(app, limits)
        try:
            sim_url = await simulator.started()
            await app.database()  # migrates, registers the agent with these limits
            env = {
                **os.environ,
                "CONVEYOR_DATABASE_URL": url,
                limits_app.ENV_SIMULATOR: sim_url,
                limits_app.ENV_AGENT: json.dumps(limits),
                "PYTHONPATH": os.pathsep.join(
                    [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
                ),
            }
            workers = [WorkerProcess(n, env, plan.concurrency, folder) for n in range(plan.workers)]
            await _until(lambda: all(w.started() for w in workers), 60, "workers to start")
            async with httpx.AsyncClient(base_url=sim_url, timeout=30) as http:
                samples, stats, sim_log = await _drive(plan, scenario, tasks, app, url, http)
        finally:
            await app.aclose()
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait()
            simulator.stop()
        db_tasks = await fetch(url, TASKS_QUERY)
        db_attempts = await fetch(url, ATTEMPTS_QUERY)
    result = analyse(
        scenario.key,
        window=plan.window,
        tasks=tasks,
        stats=stats,
        log=sim_log,
        db_tasks=db_tasks,
        db_attempts=db_attempts,
        samples=samples,
    )
    _check(scenario, result)
    return Run(scenario=scenario, result=result, samples=samples, stats=stats, log=sim_log)


async def _drive(
    plan: Plan,
    scenario: Scenario,
    tasks: list[dict[str, Any]],
    app: App,
    url: str,
    http: httpx.AsyncClient,
) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Reset the simulator, enqueue everything at once, halve the TPM when the scenario
    says so, sample the agent's throttling state, and wait until every task ended.
    Returns the samples, the simulator's stats and its log."""
    batch = [
        NewTask(
            limits_app.AGENT,
            {"n": t["n"], "tokens": t["tokens"]},
            priority=t["priority"],
            estimated_tokens=t["tokens"],
        )
        for t in tasks
    ]
    (await http.post("/sim/reset")).raise_for_status()
    reset_at = time.monotonic()
    await app.enqueue_many_async(batch)
    log(f"({scenario.key}) enqueued {len(batch)} tasks")
    samples: list[dict[str, Any]] = []
    background = [asyncio.create_task(_sample(url, samples, reset_at, plan.sample_every))]
    if scenario.halve_tpm:
        background.append(asyncio.create_task(_halve(http, plan, reset_at)))
    try:
        await _until_done(url, len(batch), plan.timeout, scenario.key)
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
    stats = (await http.get("/sim/stats")).json()
    sim_log = (await http.get("/sim/log")).json()
    return samples, stats, sim_log


async def _halve(http: httpx.AsyncClient, plan: Plan, reset_at: float) -> None:
    # Sent a little before the first window ends, so the new limit is in force when the
    # second one begins.
    await asyncio.sleep(max(0.0, reset_at + plan.window - 0.05 - time.monotonic()))
    (await http.post("/sim/limits", json={"tpm": plan.tpm // 2})).raise_for_status()
    log(f"simulator TPM halved to {plan.tpm // 2}")


async def _sample(url: str, samples: list[dict[str, Any]], origin: float, every: float) -> None:
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, row_factory=dict_row
    ) as conn:
        while True:
            for row in await queue.agent_limits(conn):
                if row["name"] == limits_app.AGENT:
                    samples.append(
                        {
                            "t": time.monotonic() - origin,
                            "throttle_factor": row["throttle_factor"],
                            "learned_concurrency": row["learned_concurrency"],
                            "learned_tpm": row["learned_tpm"],
                            "running": row["running"],
                            "tokens": row["tokens"],
                            "requests": row["requests"],
                        }
                    )
            await asyncio.sleep(every)


async def _until_done(url: str, total: int, timeout: float, key: str) -> None:
    started = time.monotonic()
    last_report = started
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE status IN ('completed', 'failed', 'cancelled'))"
                " FROM tasks"
            )
            row = await cur.fetchone()
            done = int(row[0]) if row else 0
            now = time.monotonic()
            if done >= total:
                log(f"({key}) all {total} tasks ended after {now - started:.1f} s")
                return
            if now - last_report >= 15:
                log(f"({key}) {done}/{total} ended after {now - started:.0f} s")
                last_report = now
            if now - started > timeout:
                raise RuntimeError(f"scenario {key}: {done}/{total} tasks after {timeout} s")
            await asyncio.sleep(0.2)


async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def _check(scenario: Scenario, result: Result) -> None:
    """Consistency of the record, and the limits Conveyor was given: warn, do not stop."""
    problems = []
    if result.completed != result.tasks:
        problems.append(f"{result.tasks - result.completed} tasks did not complete")
    if result.tokens_admitted != result.tokens_expected:
        problems.append(
            f"the simulator admitted {result.tokens_admitted} tokens, "
            f"the tasks cost {result.tokens_expected}"
        )
    if result.throttled_attempts != result.refused:
        problems.append(
            f"{result.refused} 429s at the simulator, {result.throttled_attempts} "
            "throttled attempts in the database"
        )
    cap = scenario.limits.get("max_concurrent")
    if cap is not None and result.db_peak_running > cap:
        problems.append(f"{result.db_peak_running} attempts ran at once, cap {cap}")
    if "max_tpm" in scenario.limits and not scenario.halve_tpm and result.refused:
        problems.append(f"{result.refused} 429s with a correct token budget declared")
    for problem in problems:
        log(f"({scenario.key}) CHECK: {problem}")


# ---------------------------------------------------------------------------------------
# Report


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _qt(result: Result, priority: int) -> str:
    q = result.queue_times.get(priority)
    return "-" if q is None else f"{_seconds(q.p50)} / {_seconds(q.p99)}"


def tables(plan: Plan, runs: list[Run]) -> str:
    hi = plan.high_priority
    lines = [
        "| scenario | 429s | 429s after 1st window | tokens/window ÷ TPM: peak "
        "| mean, backlog large (windows) "
        f"| queue p50 / p99 s, priority {hi} | queue p50 / p99 s, priority 0 | wall time s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        r = run.result
        share = f"{r.refused_after_first_window} ({100 * r.refused_share_after_first_window:.1f}%)"
        lines.append(
            f"| ({run.scenario.key}) {run.scenario.title} | {r.refused} | {share} "
            f"| {_pct(r.peak_ratio)} | {_pct(r.backlogged_mean_ratio)} ({r.backlogged_slices}) "
            f"| {_qt(r, hi)} | {_qt(r, 0)} | {_seconds(r.wall_time)} |"
        )
    lines += [
        "",
        "| scenario | requests | attempts at once: peak (DB) / in flight at simulator "
        "| request factor: min | learned cap: min / last | tokens/window ÷ TPM, window by window |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for run in runs:
        r = run.result
        learned = (
            "-"
            if r.min_learned_concurrency is None
            else f"{r.min_learned_concurrency} / {r.final_learned_concurrency}"
        )
        factor = "-" if r.min_throttle_factor is None else f"{r.min_throttle_factor:.2f}"
        per_window = " ".join(
            f"{s.ratio:.2f}{'' if s.backlogged else '*'}" for s in r.slices if s.ratio is not None
        )
        lines.append(
            f"| ({run.scenario.key}) | {r.requests} | {r.db_peak_running} / {r.sim_peak_in_flight} "
            f"| {factor} | {learned} | {per_window} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    facts: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "loadavg_at_start": os.getloadavg(),
    }
    return facts


# ---------------------------------------------------------------------------------------


async def main_async(args: argparse.Namespace) -> int:
    plan = QUICK if args.quick else FULL
    if args.tasks:
        plan = replace(plan, tasks=args.tasks)
    chosen = [scenarios(plan)[k] for k in args.scenarios.split(",")]
    tasks = workload(plan)
    facts = machine()
    with psycopg.connect(args.server) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        facts["postgresql"] = row[0] if row else "?"
    shape = describe_workload(tasks)
    log(f"plan {plan}")
    log(f"workload {shape}; machine {facts}")
    runs = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench_limits_") as tmp:
        for scenario in chosen:
            folder = Path(tmp) / scenario.key
            folder.mkdir()
            run = await run_scenario(plan, scenario, tasks, args.server, folder)
            runs.append(run)
            log(f"({scenario.key}) {run.result.refused} 429s, wall {run.result.wall_time:.1f} s")
    total = time.monotonic() - started
    print(tables(plan, runs))
    print()
    print(
        f"Workload: {shape['tasks']} tasks, {shape['total_tokens']:,} tokens; sizes mean "
        f"{shape['mean']:.0f}, median {shape['median']}, p90 {shape['p90']}, max {shape['max']} "
        f"({shape['at_max']} at the cap); {shape['high_priority']} at priority "
        f"{plan.high_priority}. Whole run {total:.0f} s. Machine: {facts}."
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "plan": plan.__dict__,
                    "workload": shape,
                    "machine": facts,
                    "seconds": total,
                    "runs": [
                        {
                            "scenario": run.scenario.__dict__,
                            "result": run.result.as_dict(),
                            "samples": run.samples,
                            "simulator": run.stats,
                            "simulator_log": run.log,
                        }
                        for run in runs
                    ],
                },
                indent=1,
                default=str,
            )
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 tasks, 5 s window")
    parser.add_argument("--scenarios", default="a,b,c,d,e", help="a,b,c,d,e (and f)")
    parser.add_argument("--tasks", type=int, help="override the number of tasks")
    parser.add_argument("--server", default=DEFAULT_SERVER, help="PostgreSQL server URL")
    parser.add_argument("--json", help="write every number (and the samples) here")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
