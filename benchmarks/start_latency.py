"""Conveyor's enqueue-to-start latency alone, as bench_queue.py measures it, several times.

    python benchmarks/start_latency.py [--runs 2] [--server URL] [--claims 300]

The latency workload of bench_queue.py (one idle worker at concurrency 16, 300 tasks 10-30
ms apart) without the rest of the benchmark, for comparing two trees of the code on a busy
machine: run it from each tree in turn, several times, and compare the spreads.

`--claims N` then times the claim's round trip alone, as a worker's connection makes it
(queue.finish_and_claim, so psycopg prepares it after its threshold): N claims of one task
from a queue of N waiting, N claims of 32 (what an idle worker at concurrency 16 asks for)
from the same queue, and N claims that find nothing; medians and 90th percentiles.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
import timing  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402

from conveyor.queue import claim  # noqa: E402


async def run(server: str, runs: int, claims: int) -> None:
    databases = bench_queue.Databases(server)
    subject = ConveyorSubject()
    await subject.open(databases.create("latency"))
    try:
        with tempfile.TemporaryDirectory(prefix="bench_latency_") as folder:
            for _ in range(runs):
                result = await bench_queue.start_latency(subject, bench_queue.QUICK, Path(folder))
                print(f"p50 {result['latency_p50']:.1f} ms, p99 {result['latency_p99']:.1f} ms")
                for line in await breakdown(subject, bench_queue.LAST_LATENCY_RECORDS):
                    print("  " + line)
        if claims:
            for line in await claim_round_trips(subject, claims):
                print(line)
    finally:
        await subject.close()
        databases.drop_all()


async def breakdown(subject: ConveyorSubject, records: list[timing.ProcessRecord]) -> list[str]:
    """Where the latency goes, task by task, on one clock (the machine's, which PostgreSQL
    and the processes share): the harness's send time, the enqueue transaction's start
    (tasks.created_at, its now()), the moment the claim wrote the row (tasks.started_at,
    clock_timestamp() in the claim) and the agent's first line. Medians of each step."""
    started = {
        sent: start
        for r in records
        for start, sent in zip(r.starts, r.sent, strict=True)
        if sent is not None
    }
    cur = await subject.admin.execute(
        "SELECT (payload->>'t')::float8 AS sent, extract(epoch FROM created_at) AS created,"
        " extract(epoch FROM started_at) AS claimed FROM tasks WHERE payload ? 't'"
    )
    steps: dict[str, list[float]] = {
        "send -> enqueue transaction begins": [],
        "-> claim writes the row (enqueue's insert, commit, NOTIFY, wake-up, claim)": [],
        "-> agent starts (claim's commit, answer, task start)": [],
    }
    for sent, created, claimed in await cur.fetchall():
        if sent not in started:
            continue
        points = (sent, float(created), float(claimed), started[sent])
        for values, (a, b) in zip(steps.values(), itertools.pairwise(points), strict=True):
            values.append((b - a) * 1000)
    return [f"{statistics.median(v):6.2f} ms  {name}" for name, v in steps.items() if v]


async def claim_round_trips(subject: ConveyorSubject, n: int) -> list[str]:
    await subject.reset()
    await subject.enqueue_many([{"i": i} for i in range(33 * n)])
    await subject.admin.execute("ANALYZE tasks")
    lines = []
    connect = psycopg.AsyncConnection.connect(subject.url, autocommit=True, row_factory=dict_row)
    async with await connect as conn:
        # 33 n tasks: the first two kinds take them all, so the third finds none.
        for what, expect, limit in (
            ("claim 1 of a waiting queue", True, 1),
            ("claim 32 of a waiting queue", True, 32),
            ("claim that finds nothing (the queue claimed)", False, 32),
        ):
            times = []
            for _ in range(n):
                began = time.perf_counter()
                got = await claim(conn, worker_id="bench", agents=["noop"], limit=limit)
                times.append((time.perf_counter() - began) * 1000)
                if len(got) != (limit if expect else 0):
                    raise RuntimeError(f"{what}: {len(got)} claimed")
            times.sort()
            lines.append(
                f"{statistics.median(times):6.2f} ms p50, {times[len(times) * 9 // 10]:6.2f} ms"
                f" p90  {what} (x{n})"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--claims", type=int, default=0, help="time this many claims of each kind")
    args = parser.parse_args()
    asyncio.run(run(args.server, args.runs, args.claims))


if __name__ == "__main__":
    main()
