"""Conveyor side by side with procrastinate, pgqueuer and graphile-worker, on one server.

    python benchmarks/bench_queue.py [--quick] [--json results.json] [--server URL]
        [--peers pgqueuer,graphile_batched] [--workloads single_enqueue,start_latency]
        [--no-claims]
    python benchmarks/bench_queue.py --report results.json    # the tables again, no measuring

graphile-worker (Node.js) runs twice, with its throughput settings (`graphile_batched`) and
with its defaults (`graphile_default`); it is installed with npm on first use (graphile.py)
and left out, with a message, where Node.js is missing.

Measured in one run, each library in a fresh database of its own (created and dropped
here, names starting bench_), no-op tasks throughout:

1. enqueue rate: bulk (batches of 10,000 through each library's batch call) and single
   (one enqueue call at a time, each its own transaction);
2. drain rate of pre-enqueued tasks by real worker processes: 1 process at concurrency 1,
   1 at 16, 2 at 16. Timed in the agents, from the moment every process has started its
   first task to the last task started, so process start-up does not count;
3. enqueue-to-start latency on an idle worker: one task at a time, 10-30 ms apart, from
   just before the enqueue call to the first line of the agent;
4. the server's ceiling: pgbench, one-row UPDATE per transaction, at 2 and 8 clients;
5. Conveyor's claim cost at 1k, 100k and 1M waiting tasks, the plan at 1M, and the cost
   after many claims without a VACUUM.

The machine is small and noisy, so every figure is the median of several repeats, and the
repeats are interleaved: each workload runs for every library in turn (the order rotating
with each repeat) before the next workload starts. Compare the ratios, not the absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import claim_depth
import graphile
import psycopg
import report
import timing
from ceiling import Pgbench
from peers import PgqueuerSubject, ProcrastinateSubject
from subjects import ConveyorSubject, Subject

HERE = Path(__file__).resolve().parent
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432"
BULK_BATCH = 10_000
LATENCY_GAP = (0.010, 0.030)  # seconds between two enqueues of the latency run
LATENCY_CONCURRENCY = 16
DRAIN_CONFIGS = ((1, 1), (1, 16), (2, 16))  # (processes, concurrency per process)
PEER_NAMES = ("procrastinate", "pgqueuer", "graphile_batched", "graphile_default")
WAIT_TIMEOUT = 180.0  # seconds a drain may take before the run is declared stuck
DEAD_STEPS = (0, 10_000, 100_000, 300_000)  # tasks claimed since VACUUM, at the largest depth


@dataclass(frozen=True)
class Plan:
    repeats: int
    bulk_tasks: int
    single_tasks: int
    # Tasks per drain run, per library and configuration: sized so that each run lasts a
    # few seconds at that library's rate. The rate is what is compared, not the count.
    drain_tasks: dict[str, dict[str, int]]
    latency_tasks: int
    pgbench_seconds: int
    depths: tuple[int, ...]
    claims_per_depth: int


FULL = Plan(
    repeats=4,
    bulk_tasks=100_000,
    single_tasks=2_000,
    drain_tasks={
        # Conveyor's workers size their buffers to the tasks' length (up to 512 no-op
        # tasks): runs of 1.5 s or more, so that the ramp-up of the buffer at the start and
        # the last exchange's commit, which the start-based window leaves out, stay small.
        "conveyor": {"1x1": 20_000, "1x16": 30_000, "2x16": 40_000},
        "procrastinate": {"1x1": 1_000, "1x16": 1_500, "2x16": 1_500},
        "pgqueuer": {"1x1": 800, "1x16": 12_000, "2x16": 15_000},
        "graphile_batched": {"1x1": 20_000, "1x16": 40_000, "2x16": 50_000},
        "graphile_default": {"1x1": 1_500, "1x16": 6_000, "2x16": 8_000},
    },
    latency_tasks=300,
    pgbench_seconds=3,
    depths=(1_000, 100_000, 1_000_000),
    claims_per_depth=200,
)

QUICK = Plan(
    repeats=1,
    bulk_tasks=20_000,
    single_tasks=500,
    drain_tasks={
        "conveyor": {"1x1": 8_000, "1x16": 12_000, "2x16": 12_000},
        "procrastinate": {"1x1": 400, "1x16": 800, "2x16": 1_000},
        "pgqueuer": {"1x1": 400, "1x16": 5_000, "2x16": 6_000},
        "graphile_batched": {"1x1": 8_000, "1x16": 15_000, "2x16": 15_000},
        "graphile_default": {"1x1": 500, "1x16": 2_000, "2x16": 3_000},
    },
    latency_tasks=100,
    pgbench_seconds=2,
    depths=(1_000, 100_000, 1_000_000),
    claims_per_depth=60,
)


def log(message: str) -> None:
    """Progress goes to stderr; stdout is kept for the table."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Databases


class Databases:
    """Fresh databases on the server, named bench_<what>_<pid>, all dropped at the end."""

    def __init__(self, server: str) -> None:
        self.server = server.rstrip("/")
        self.created: list[str] = []

    def create(self, what: str) -> str:
        name = f"bench_{what}_{os.getpid()}"
        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return f"{self.server}/{name}"

    def drop_all(self) -> None:
        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as conn:
            for name in self.created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.clear()


# ---------------------------------------------------------------------------------------
# Worker processes


class Workers:
    """Worker processes of one library, each recording its agents' start times to a file."""

    def __init__(self, subject: Subject, processes: int, concurrency: int, folder: Path) -> None:
        argv, env = subject.worker_command(concurrency, processes)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.files: list[tuple[Path, Path]] = []
        for n in range(processes):
            stem = f"{subject.name}-{processes}x{concurrency}-{n}-{time.monotonic_ns()}"
            record, output = folder / f"{stem}.json", folder / f"{stem}.log"
            environment = {
                **os.environ,
                **env,
                timing.ENV_RECORD: str(record),
                # This folder first (the agents' apps), then whatever the harness had: a
                # checkout other than the installed one is measured by naming it there.
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p
                ),
            }
            with output.open("wb") as out:
                self.procs.append(
                    subprocess.Popen(argv, env=environment, cwd=HERE, stdout=out, stderr=out)
                )
            self.files.append((record, output))

    def check_alive(self) -> None:
        for proc, (_, output) in zip(self.procs, self.files, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"a worker exited early ({proc.returncode}):\n{_tail(output)}")

    def stop(self, timeout: float = 60.0) -> list[timing.ProcessRecord]:
        """SIGTERM (every library drains on it), wait, and read what the agents recorded."""
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc, (_, output) in zip(self.procs, self.files, strict=True):
            if proc.wait(timeout) != 0:
                raise RuntimeError(f"a worker exited with {proc.returncode}:\n{_tail(output)}")
        return [timing.ProcessRecord.load(record) for record, _ in self.files]

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def workers(subject: Subject, processes: int, concurrency: int, folder: Path) -> Iterator[Workers]:
    started = Workers(subject, processes, concurrency, folder)
    try:
        yield started
    finally:
        started.kill()  # only those still running: after stop() there are none


async def wait_until_done(subject: Subject, running: Workers, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while await subject.remaining() > 0:
        running.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{subject.name}: tasks still unfinished after {timeout:.0f}s")
        # Seldom enough to cost the server little: the drains are timed in the agents,
        # so how soon the end is noticed changes no figure.
        await asyncio.sleep(0.25)


# ---------------------------------------------------------------------------------------
# Workloads: each takes a subject and returns {metric: value}

Workload = Callable[[Subject, Plan, Path], Awaitable[dict[str, float]]]


async def enqueue_in_batches(subject: Subject, n: int) -> float:
    """Enqueue n tasks in batches of BULK_BATCH; return the seconds it took."""
    batches = [
        [{"i": i} for i in range(start, min(n, start + BULK_BATCH))]
        for start in range(0, n, BULK_BATCH)
    ]
    started = time.perf_counter()
    for batch in batches:
        await subject.enqueue_many(batch)
    return time.perf_counter() - started


async def bulk_enqueue(subject: Subject, plan: Plan, folder: Path) -> dict[str, float]:
    await subject.reset()
    seconds = await enqueue_in_batches(subject, plan.bulk_tasks)
    return {"bulk_enqueue": plan.bulk_tasks / seconds}


async def single_enqueue(subject: Subject, plan: Plan, folder: Path) -> dict[str, float]:
    await subject.reset()
    started = time.perf_counter()
    for i in range(plan.single_tasks):
        await subject.enqueue_one({"i": i})
    return {"single_enqueue": plan.single_tasks / (time.perf_counter() - started)}


def drain(processes: int, concurrency: int) -> Workload:
    config = f"{processes}x{concurrency}"

    async def run(subject: Subject, plan: Plan, folder: Path) -> dict[str, float]:
        n = plan.drain_tasks[subject.name][config]
        await subject.reset()
        await enqueue_in_batches(subject, n)
        # Enqueued before the workers start: procrastinate's insert trigger NOTIFYs once
        # per task, and a worker listening during the enqueue would have to read them all.
        with workers(subject, processes, concurrency, folder) as running:
            await wait_until_done(subject, running, WAIT_TIMEOUT)
            records = running.stop()
        return {f"drain_{config}": timing.drain_rate(records)}

    run.__name__ = f"drain_{config}"
    return run


LAST_LATENCY_RECORDS: list[timing.ProcessRecord] = []


async def start_latency(subject: Subject, plan: Plan, folder: Path) -> dict[str, float]:
    await subject.reset()
    pace = random.Random(17)  # the same gaps for every library
    with workers(subject, 1, LATENCY_CONCURRENCY, folder) as running:
        # A first task proves the worker is up and listening; then it idles a moment.
        await subject.enqueue_one({"warmup": True})
        await wait_until_done(subject, running, WAIT_TIMEOUT)
        await asyncio.sleep(0.5)
        for i in range(plan.latency_tasks):
            await subject.enqueue_one({"i": i, "t": time.time()})
            await asyncio.sleep(pace.uniform(*LATENCY_GAP))
        await wait_until_done(subject, running, WAIT_TIMEOUT)
        records = running.stop()
    LAST_LATENCY_RECORDS[:] = records  # for start_latency.py's breakdown
    latencies = timing.latencies_ms(records)
    if len(latencies) != plan.latency_tasks:
        raise RuntimeError(f"{subject.name}: {len(latencies)} latencies recorded")
    return {
        "latency_p50": timing.percentile(latencies, 50),
        "latency_p99": timing.percentile(latencies, 99),
    }


WORKLOADS: list[Workload] = [
    bulk_enqueue,
    single_enqueue,
    *(drain(processes, concurrency) for processes, concurrency in DRAIN_CONFIGS),
    start_latency,
]


# ---------------------------------------------------------------------------------------
# The run


@dataclass
class Results:
    plan: Plan
    machine: dict[str, str]
    configs: dict[str, dict[str, str]]
    # metric -> library -> one value per repeat
    samples: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    claim_us: dict[int, list[float]] = field(default_factory=dict)
    claim_server: dict[int, list[claim_depth.ServerCost]] = field(default_factory=dict)
    claim_plan: str = ""
    claim_dead: dict[str, claim_depth.ServerCost] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, library: str, values: dict[str, float]) -> None:
        for metric, value in values.items():
            self.samples[metric][library].append(value)


def rotated(items: list[Subject], by: int) -> list[Subject]:
    by %= len(items)
    return items[by:] + items[:by]


async def run_queues(
    results: Results,
    subjects: list[Subject],
    pgbench: Pgbench,
    folder: Path,
    workloads: list[Workload],
) -> None:
    plan = results.plan
    for repeat in range(plan.repeats):
        for workload in workloads:
            for subject in rotated(subjects, repeat):
                log(f"repeat {repeat + 1}/{plan.repeats}: {workload.__name__} {subject.name}")
                results.add(subject.name, await workload(subject, plan, folder))
        # The server's ceiling, inside the same repeat as the queues it bounds.
        for clients in (2, 8):
            log(f"repeat {repeat + 1}/{plan.repeats}: pgbench, {clients} clients")
            tps = pgbench.tps(clients, plan.pgbench_seconds)
            results.add("server", {f"pgbench_c{clients}": tps})


async def run_claims(results: Results, databases: Databases) -> None:
    plan = results.plan
    conns = {}
    try:
        for depth in plan.depths:
            log(f"claim cost: filling the queue with {depth:,} tasks")
            url = databases.create(f"claim_{depth}")
            conns[depth] = await claim_depth.prepare(url, depth)
        log("claim cost: timing claims")
        results.claim_us = await claim_depth.measure(conns, plan.claims_per_depth, warmup=10)
        results.claim_server = await claim_depth.server_costs(conns, rounds=20)
        results.claim_plan = await claim_depth.explain(conns[max(plan.depths)])
        log("claim cost: after many claims without a VACUUM")
        results.claim_dead = await claim_depth.after_claims_without_vacuum(
            conns[max(plan.depths)], steps=DEAD_STEPS
        )
    finally:
        for conn in conns.values():
            await conn.close()


def peer_subjects(wanted: set[str] | None) -> list[Subject]:
    """The peers to measure (all by default); graphile-worker only where it can run."""
    peers: list[Subject] = [ProcrastinateSubject(), PgqueuerSubject()]
    if wanted is None or wanted & {"graphile_batched", "graphile_default"}:
        missing = graphile.installed()
        if missing:
            log(missing)
        else:
            peers += [graphile.GraphileSubject(batched=True), graphile.GraphileSubject(False)]
    return [p for p in peers if wanted is None or p.name in wanted]


async def run(
    plan: Plan,
    server: str,
    conveyor_prefetch: int | None = None,
    peers: set[str] | None = None,
    workloads: list[Workload] | None = None,
    claims: bool = True,
) -> Results:
    started = time.monotonic()
    subjects: list[Subject] = [ConveyorSubject(prefetch=conveyor_prefetch), *peer_subjects(peers)]
    results = Results(plan=plan, machine=report.machine(server), configs=configs(subjects))
    databases = Databases(server)
    opened: list[Subject] = []
    try:
        for subject in subjects:
            await subject.open(databases.create(subject.name))
            opened.append(subject)
        pgbench = Pgbench(databases.create("pgbench"))
        try:
            pgbench.prepare()
            with tempfile.TemporaryDirectory(prefix="bench_workers_") as folder:
                await run_queues(results, subjects, pgbench, Path(folder), workloads or WORKLOADS)
        finally:
            pgbench.close()
        if claims:
            await run_claims(results, databases)
    finally:
        for subject in opened:
            await subject.close()
        databases.drop_all()
    results.seconds = time.monotonic() - started
    return results


def configs(subjects: list[Subject]) -> dict[str, dict[str, str]]:
    return {s.name: {f"{p}x{c}": s.describe(c, p) for p, c in DRAIN_CONFIGS} for s in subjects}


def to_json(results: Results) -> dict[str, Any]:
    return {
        "plan": asdict(results.plan),
        "machine": results.machine,
        "configs": results.configs,
        "samples": {m: dict(v) for m, v in results.samples.items()},
        "claim_us": {str(k): v for k, v in results.claim_us.items()},
        "claim_server": {str(k): [asdict(c) for c in v] for k, v in results.claim_server.items()},
        "claim_plan": results.claim_plan,
        "claim_dead": {k: asdict(v) for k, v in results.claim_dead.items()},
        "seconds": results.seconds,
    }


def from_json(data: dict[str, Any]) -> Results:
    """The Results that to_json() wrote, to render a report again without measuring."""
    plan = Plan(**{**data["plan"], "depths": tuple(data["plan"]["depths"])})
    results = Results(plan=plan, machine=data["machine"], configs=data["configs"])
    for metric, by_library in data["samples"].items():
        for library, values in by_library.items():
            results.samples[metric][library] = values
    results.claim_us = {int(depth): v for depth, v in data["claim_us"].items()}
    results.claim_server = {
        int(depth): [claim_depth.ServerCost(**c) for c in costs]
        for depth, costs in data["claim_server"].items()
    }
    results.claim_plan = data["claim_plan"]
    results.claim_dead = {k: claim_depth.ServerCost(**v) for k, v in data["claim_dead"].items()}
    results.seconds = data["seconds"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat of smaller runs")
    parser.add_argument("--json", type=Path, help="also write every sample to this file")
    parser.add_argument(
        "--report", type=Path, metavar="JSON", help="measure nothing: print the report of a --json"
    )
    parser.add_argument(
        "--conveyor-prefetch",
        type=int,
        help="Conveyor workers' --prefetch (default: the worker's own, = concurrency)",
    )
    parser.add_argument(
        "--peers",
        help=f"comma-separated peers to measure (default all: {','.join(PEER_NAMES)})",
    )
    parser.add_argument(
        "--workloads",
        help="comma-separated workloads (default all: "
        + ",".join(w.__name__ for w in WORKLOADS)
        + ")",
    )
    parser.add_argument("--repeats", type=int, help="repeats (default: the plan's, 4 or 1)")
    parser.add_argument(
        "--no-claims", action="store_true", help="leave out the claim cost against depth"
    )
    parser.add_argument(
        "--server",
        default=os.environ.get("BENCH_SERVER_URL", DEFAULT_SERVER),
        help=f"PostgreSQL server, without a database name (default {DEFAULT_SERVER})",
    )
    args = parser.parse_args()
    if args.report:
        print(report.markdown(from_json(json.loads(args.report.read_text()))))
        return
    plan = QUICK if args.quick else FULL
    if args.repeats:
        plan = replace(plan, repeats=args.repeats)
    peers = set(args.peers.split(",")) if args.peers else None
    if peers and peers - set(PEER_NAMES):
        parser.error(f"unknown peers: {', '.join(sorted(peers - set(PEER_NAMES)))}")
    workloads = WORKLOADS
    if args.workloads:
        by_name = {w.__name__: w for w in WORKLOADS}
        unknown = sorted(set(args.workloads.split(",")) - by_name.keys())
        if unknown:
            parser.error(f"unknown workloads: {', '.join(unknown)} (known: {', '.join(by_name)})")
        workloads = [by_name[name] for name in args.workloads.split(",")]
    results = asyncio.run(
        run(plan, args.server, args.conveyor_prefetch, peers, workloads, not args.no_claims)
    )
    print(report.markdown(results))
    if args.json:
        args.json.write_text(json.dumps(to_json(results), indent=2))
        log(f"samples written to {args.json}")


if __name__ == "__main__":
    main()
