"""Conveyor's enqueue-to-start latency alone, as bench_queue.py measures it, several times.

    python benchmarks/start_latency.py [--runs 2] [--server URL]

The latency workload of bench_queue.py (one idle worker at concurrency 16, 300 tasks 10-30
ms apart) without the rest of the benchmark, for comparing two trees of the code on a busy
machine: run it from each tree in turn, several times, and compare the spreads.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
import timing  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402


async def run(server: str, runs: int) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.server, args.runs))


if __name__ == "__main__":
    main()
