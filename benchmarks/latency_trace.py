"""Where an idle worker's enqueue-to-start latency goes, step by step, on one clock.

    python benchmarks/latency_trace.py [--runs 2] [--server URL] [--tasks 300] [--uvloop]

bench_queue.py's latency workload (one worker at concurrency 16, tasks enqueued one at a
time 10-30 ms apart), with the worker of latency_trace_app.py, which notes when each NOTIFY
is handed to the worker, when each claim is sent and answered, and when each agent starts.
The harness notes when each enqueue call returns. Every time is time.time(), which all the
processes of this machine share, and PostgreSQL's clock too: tasks.created_at (the enqueue
transaction's start) and tasks.started_at (clock_timestamp() in the claim's UPDATE).

Per task, medians and 90th and 99th percentiles over the run, of:

    send -> enqueue's statement begins (created_at)
    -> enqueue call returns (its insert, commit and answer)
    send -> NOTIFY handed to the worker (the listener's callback)
    NOTIFY -> an idle lane of the exchange wakes (the events it waits on), or the claim is
        sent, when the worker claims on the LISTEN connection (Exchange.claim_idle)
    -> claim sent (the lane's loop: claim sizes, pool checkout)
    claim sent -> the claim's UPDATE writes the row (started_at)
    -> claim answered (the rest of the claim, its commit, the answer, the rows read)
    claim answered -> agent's first line (slot start, task object, coroutine)
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
from subjects import ConveyorSubject  # noqa: E402

#: The worker's command line with its event loop uvloop's (--uvloop): the CLI's main()
#: under uvloop's policy, so that its asyncio.run() makes a uvloop loop.
UVLOOP_MAIN = (
    "import asyncio, sys, uvloop; asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); "
    "from conveyor.cli.parser import main; sys.exit(main(sys.argv[1:]))"
)


class TracedSubject(ConveyorSubject):
    worker_app = "latency_trace_app:app"

    def __init__(self, uvloop: bool = False) -> None:
        super().__init__()
        self.uvloop = uvloop
        self.returned: dict[int, tuple[float, float]] = {}  # id -> (sent, call returned)

    def worker_command(self, concurrency: int, processes: int) -> tuple[list[str], dict[str, str]]:
        argv, env = super().worker_command(concurrency, processes)
        if self.uvloop:
            argv = [sys.executable, "-c", UVLOOP_MAIN, *argv[3:]]  # argv[1:3]: -m conveyor.cli
        return argv, env

    async def enqueue_one(self, payload: dict[str, Any]) -> None:
        task_id = await self.app.enqueue_async(self.agent, payload)
        if "t" in payload:
            self.returned[task_id] = (payload["t"], time.time())


STEPS = (
    "send -> enqueue's statement begins",
    "  -> enqueue call returns",
    "send -> NOTIFY handed to the worker",
    "NOTIFY -> an idle lane wakes (or the claim is sent)",
    "  -> claim sent",
    "claim sent -> claim writes the row",
    "  -> claim answered",
    "claim answered -> agent starts",
    "send -> agent starts",
)


async def steps(subject: TracedSubject, folder: Path) -> dict[str, list[float]]:
    heard: dict[int, float] = {}
    claimed: dict[int, tuple[float, float]] = {}
    woken: list[float] = []
    started: dict[int, float] = {}
    for path in folder.glob("*.trace.json"):
        trace = json.loads(path.read_text())
        for at, ids in trace["heard"]:
            for i in ids:
                heard.setdefault(i, at)
        woken += trace["woken"]
        for sent, answered, ids in trace["claims"]:
            for i in ids:
                claimed[i] = (sent, answered)
        started |= {int(k): v for k, v in trace["started"].items()}
        path.unlink()
    cur = await subject.admin.execute(
        "SELECT id, extract(epoch FROM created_at), extract(epoch FROM started_at) FROM tasks"
    )
    db = {row[0]: (float(row[1]), float(row[2])) for row in await cur.fetchall()}
    woken.sort()
    out: dict[str, list[float]] = {name: [] for name in STEPS}
    for task_id, (sent, returned) in subject.returned.items():
        if not {task_id} <= heard.keys() & claimed.keys() & started.keys() & db.keys():
            continue
        created, written = db[task_id]
        claim_sent, claim_back = claimed[task_id]
        # The first wake-up of a lane after the NOTIFY, if one came before the claim (an
        # idle claim on the LISTEN connection wakes none).
        n = bisect.bisect_left(woken, heard[task_id])
        awake = woken[n] if n < len(woken) and woken[n] <= claim_sent else claim_sent
        values = (
            created - sent,
            returned - created,
            heard[task_id] - sent,
            awake - heard[task_id],
            claim_sent - awake,
            written - claim_sent,
            claim_back - written,
            started[task_id] - claim_back,
            started[task_id] - sent,
        )
        for name, value in zip(STEPS, values, strict=True):
            out[name].append(value * 1000)
    subject.returned.clear()
    return out


def show(result: dict[str, float], breakdown: dict[str, list[float]]) -> None:
    print(f"p50 {result['latency_p50']:.2f} ms, p99 {result['latency_p99']:.2f} ms")
    for name, values in breakdown.items():
        if values:
            values.sort()
            p90, p99 = values[len(values) * 9 // 10], values[len(values) * 99 // 100]
            print(
                f"  {statistics.median(values):6.2f} ms p50 {p90:6.2f} ms p90"
                f" {p99:6.2f} ms p99  {name}"
            )


async def run(server: str, runs: int, tasks: int, uvloop: bool) -> None:
    databases = bench_queue.Databases(server)
    subject = TracedSubject(uvloop)
    await subject.open(databases.create("latency_trace"))
    plan = bench_queue.replace(bench_queue.QUICK, latency_tasks=tasks)
    try:
        with tempfile.TemporaryDirectory(prefix="bench_latency_trace_") as folder:
            for _ in range(runs):
                result = await bench_queue.start_latency(subject, plan, Path(folder))
                show(result, await steps(subject, Path(folder)))
    finally:
        await subject.close()
        databases.drop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=bench_queue.DEFAULT_SERVER)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--uvloop", action="store_true", help="the worker on uvloop's loop")
    args = parser.parse_args()
    asyncio.run(run(args.server, args.runs, args.tasks, args.uvloop))


if __name__ == "__main__":
    main()
