"""Conveyor's enqueue-to-start latency alone, as bench_queue.py measures it, several times.

    python benchmarks/start_latency.py [--runs 2] [--server URL]

The latency workload of bench_queue.py (one idle worker at concurrency 16, 300 tasks 10-30
ms apart) without the rest of the benchmark, for comparing two trees of the code on a busy
machine: run it from each tree in turn, several times, and compare the spreads.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
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
    finally:
        await subject.close()
        databases.drop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.server, args.runs))


if __name__ == "__main__":
    main()
