"""Where a single enqueue's time goes: Conveyor's call against the same statement sent bare.

    python benchmarks/single_enqueue.py [--server URL] [--calls 500] [--rounds 6]
        [--variants conveyor,pgqueuer,psycopg,asyncpg,psycopg_select,asyncpg_select]

Each variant enqueues `--calls` tasks one call at a time, each its own transaction, in its
own database; the variants take turns, round after round (the order rotating), so that
the machine's noise falls on all of them alike. Per call: the wall time and this process's
CPU time (time.process_time), medians over the rounds.

- conveyor: `app.enqueue_async`, as bench_queue.py's single enqueue;
- pgqueuer: `Queries.enqueue` on asyncpg, as bench_queue.py's;
- psycopg / asyncpg: Conveyor's insert (queue.sql tasks_enqueue, its trigger's NOTIFY
  included) on a connection of its own, prepared, with none of Conveyor's Python: the
  floor for this statement with each driver;
- psycopg_select / asyncpg_select: `SELECT 1`, prepared: a round trip without a commit's
  flush, so the driver's cost per call alone.

Conveyor's call minus `psycopg` is what Conveyor's Python and the pool add; `psycopg`
minus `asyncpg` is the driver's share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import psycopg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
from peers import PgqueuerSubject  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402

from conveyor.queue.validation import ENCODER  # noqa: E402
from conveyor.sql import queue as Q  # noqa: E402

Call = Callable[[int], Awaitable[Any]]
VARIANTS = (
    "conveyor",
    "pgqueuer",
    "psycopg",
    "asyncpg",
    "psycopg_select",
    "asyncpg_select",
)


def _row(i: int) -> str:
    """One task as tasks_enqueue takes it: a JSON array of one task object."""
    return ENCODER.encode(
        [
            {
                "agent": "noop",
                "payload": {"i": i},
                "priority": 0,
                "idempotency_key": None,
                "estimated_tokens": None,
                "max_attempts": None,
                "run_after": None,
                "run_in": None,
                "tenant": None,
                "labels": None,
            }
        ]
    )


class Variant:
    """One way of enqueueing, with its own database and connection."""

    def __init__(self, name: str, databases: bench_queue.Databases) -> None:
        self.name = name
        self.databases = databases
        self.closers: list[Callable[[], Awaitable[Any]]] = []

    async def open(self) -> Call:
        if self.name == "pgqueuer":
            pgq = PgqueuerSubject()
            await pgq.open(self.databases.create("single_pgq"))
            self.closers.append(pgq.close)
            self.reset = pgq.reset
            return lambda i: pgq.enqueue_one({"i": i})
        subject = ConveyorSubject()
        await subject.open(self.databases.create(f"single_{self.name}"))
        self.closers.append(subject.close)
        self.reset = subject.reset
        if self.name == "conveyor":
            return lambda i: subject.enqueue_one({"i": i})
        if self.name.startswith("psycopg"):
            conn = await psycopg.AsyncConnection.connect(subject.url, autocommit=True)
            self.closers.append(conn.close)
            if self.name == "psycopg_select":
                return lambda i: conn.execute("SELECT 1", prepare=True)
            return lambda i: _psycopg_enqueue(conn, i)
        aconn = await asyncpg.connect(subject.url)
        self.closers.append(aconn.close)
        if self.name == "asyncpg_select":
            return lambda i: aconn.fetchval("SELECT 1")
        statement = Q.tasks_enqueue.replace("%(tasks)s", "$1")
        return lambda i: aconn.fetch(statement, _row(i))

    async def close(self) -> None:
        for close in reversed(self.closers):
            await close()


async def _psycopg_enqueue(conn: psycopg.AsyncConnection[Any], i: int) -> Any:
    cur = await conn.execute(Q.tasks_enqueue, {"tasks": _row(i)}, prepare=True)
    return await cur.fetchall()


async def timed(call: Call, calls: int) -> tuple[float, float]:
    """(wall ms, CPU ms) per call over `calls` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        await call(i)
    return (
        (time.perf_counter() - wall) * 1000 / calls,
        (time.process_time() - cpu) * 1000 / calls,
    )


async def run(server: str, names: list[str], calls: int, rounds: int) -> dict[str, Any]:
    databases = bench_queue.Databases(server)
    variants = [Variant(name, databases) for name in names]
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    try:
        callers = {v.name: await v.open() for v in variants}
        for v in variants:  # warm up: connections, prepared statements, caches
            await timed(callers[v.name], 50)
        for n in range(rounds):
            for v in variants[n % len(variants) :] + variants[: n % len(variants)]:
                await v.reset()
                wall, cpu = await timed(callers[v.name], calls)
                results[v.name]["wall_ms"].append(wall)
                results[v.name]["cpu_ms"].append(cpu)
            print(
                f"round {n + 1}: "
                + ", ".join(f"{v.name} {results[v.name]['wall_ms'][-1]:.3f}" for v in variants),
                file=sys.stderr,
                flush=True,
            )
    finally:
        for v in variants:
            await v.close()
        databases.drop_all()
    return {name: {k: list(vals) for k, vals in r.items()} for name, r in results.items()}


def table(results: dict[str, Any]) -> str:
    lines = [
        "| variant | wall ms per call (median) | client CPU ms per call | wall spread |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        wall, cpu = r["wall_ms"], r["cpu_ms"]
        lines.append(
            f"| {name} | {statistics.median(wall):.3f} | {statistics.median(cpu):.3f} | "
            f"{min(wall):.3f}-{max(wall):.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=bench_queue.DEFAULT_SERVER)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", help="also write the samples here")
    args = parser.parse_args()
    names = [n for n in args.variants.split(",") if n]
    unknown = set(names) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
    results = asyncio.run(run(args.server, names, args.calls, args.rounds))
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
