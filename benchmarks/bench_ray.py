"""Ray attempts: the time a Ray task adds to an attempt, and exactly-once across workers.

    python benchmarks/bench_ray.py [--server URL] [--tasks 1000] [--phases plain overhead once]
                                   [--concurrency 1 16]

(`--concurrency` lists the concurrencies of the plain and overhead phases, run one after the
other in the same run, with a summary line for each at the end; BENCH_RAY_CONCURRENCY=16
sets the resource shape, 2/16 CPUs a task, and the concurrency of the `once` phase.)
A profile of the Ray attempts alone: `py-spy record -r 250 --format raw -o ray.txt --
python benchmarks/bench_ray.py --phases overhead`.

In a fresh database created and dropped here, on a local Ray cluster this process starts
(`ray.init(num_cpus=2)`, no dashboard, usage stats off):

0. plain: the same no-op from a plain Ray driver, the concurrency at a time.
1. overhead: one worker in this process, as many slots, runs `--tasks` no-op
   attempts in the worker's loop, then as many no-op Ray tasks (each asks for 2/concurrency
   CPUs, so that all the slots run at once on the 2 CPUs), after a warm-up of 8 x
   concurrency Ray tasks that starts Ray's worker processes. An attempt's time is
   `finished_at - started_at` of its task_attempts row (the real moments it began and
   ended); what Ray adds is the difference of the means, and of the throughputs. Then as
   many again through TimedRayTask, which times the steps of each attempt: where its time
   goes (the worker outside the executor, submitting, the Ray task to its result, the run
   id's write). For each drain: its exchanges' round trip, this process's CPU per attempt.
2. once: `--tasks` no-op Ray attempts through 2 `conveyor worker` processes that
   join the cluster through CONVEYOR_RAY_ADDRESS: attempts, distinct tasks, lost and
   repeated attempts are counted.
3. serialize (not run by default): what sending an attempt's end back costs, as the
   `_Ended` dataclass (cloudpickle, as before) against the plain values sent now (msgpack,
   which Ray uses for them), dumped and loaded `--tasks` x 10 times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scratch import fresh_database

from conveyor import App, Task
from conveyor.executors import Attempt, Succeeded
from conveyor.executors.ray import RayTask
from conveyor.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = int(os.environ.get("BENCH_RAY_CONCURRENCY", "16"))


def noop(task: Task) -> None:
    return None


async def inproc(task: Task) -> None:
    return None


#: Seconds spent in each step of the timed Ray attempts, by step.
STEPS: dict[str, list[float]] = {"submit": [], "result": [], "run id": [], "run": []}


@dataclass
class TimedRayTask(RayTask):
    """RayTask with a clock around its steps: submitting the Ray task, awaiting its result,
    writing the run id, and the whole of run() (what is left of it is the executor's own
    code). A few perf_counter() calls per attempt: microseconds."""

    def _submit(self, remote: Any, task: Task) -> Any:
        began = time.perf_counter()
        try:
            return super()._submit(remote, task)
        finally:
            STEPS["submit"].append(time.perf_counter() - began)

    async def _result(self, ref: Any) -> Any:
        began = time.perf_counter()
        try:
            return await super()._result(ref)
        finally:
            STEPS["result"].append(time.perf_counter() - began)

    async def run(self, attempt: Attempt) -> Succeeded:
        began = time.perf_counter()
        started = attempt.started

        async def timed_started(run_id: str) -> None:
            at = time.perf_counter()
            try:
                await started(run_id)
            finally:
                STEPS["run id"].append(time.perf_counter() - at)

        attempt.started = timed_started  # type: ignore[method-assign]
        try:
            return await super().run(attempt)
        finally:
            STEPS["run"].append(time.perf_counter() - began)


app = App()
app.agent("inproc")(inproc)
app.external("ray_noop", RayTask(noop, num_cpus=2 / CONCURRENCY))
app.external("ray_timed", TimedRayTask(noop, num_cpus=2 / CONCURRENCY))


async def _durations(conn: Any, agent: str, since: int) -> tuple[list[float], float]:
    cur = await conn.execute(
        "SELECT extract(epoch FROM a.finished_at - a.started_at)::float8 AS d,"
        " extract(epoch FROM a.started_at)::float8 AS s,"
        " extract(epoch FROM a.finished_at)::float8 AS f"
        " FROM task_attempts a WHERE a.agent = %s AND a.task_id > %s",
        (agent, since),
    )
    rows = await cur.fetchall()
    span = max(r["f"] for r in rows) - min(r["s"] for r in rows)
    return [r["d"] for r in rows], span


async def _drain(bench: App, agent: str, count: int, concurrency: int = CONCURRENCY) -> int:
    """Enqueue `count` tasks of `agent` and wait until all are completed; the last id
    before them."""
    from conveyor.worker import Worker

    async with bench.connection() as conn:
        cur = await conn.execute("SELECT coalesce(max(id), 0) AS m FROM tasks")
        before = int((await cur.fetchone())["m"])  # type: ignore[index]
    await bench.enqueue_many_async([{"agent": agent, "payload": {}} for _ in range(count)])
    worker = Worker(bench, concurrency=concurrency)
    exchanges: list[float] = []  # each exchange's round trip (outcomes out, claims in)
    moving_average = worker.timings.exchanged

    def exchanged(seconds: float) -> None:
        exchanges.append(seconds)
        moving_average(seconds)

    worker.timings.exchanged = exchanged  # type: ignore[method-assign]
    cpu = time.process_time()
    running = asyncio.create_task(worker.run())
    async with bench.connection() as conn:
        while True:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM tasks WHERE status = 'completed' AND id > %s",
                (before,),
            )
            if (await cur.fetchone())["n"] == count:  # type: ignore[index]
                break
            await asyncio.sleep(0.05)
    worker.stop()
    await running
    cpu = time.process_time() - cpu
    print(
        f"{'':>14}{agent}: {len(exchanges)} exchanges, "
        f"{statistics.fmean(exchanges) * 1000:.2f} ms mean round trip; this process's CPU "
        f"{cpu * 1000 / count:.2f} ms per attempt"
    )
    return before


def _stats(label: str, durations: list[float], span: float) -> dict[str, float]:
    ms = sorted(d * 1000 for d in durations)
    out = {
        "mean_ms": statistics.fmean(ms),
        "p50_ms": ms[len(ms) // 2],
        "p95_ms": ms[int(len(ms) * 0.95)],
        "per_s": len(ms) / span,
    }
    print(
        f"{label:>12}: {len(ms)} attempts, mean {out['mean_ms']:.2f} ms, "
        f"p50 {out['p50_ms']:.2f}, p95 {out['p95_ms']:.2f}, {out['per_s']:.0f} attempts/s"
    )
    return out


#: Per concurrency: mean ms of the in-process, Ray and plain Ray runs, for the summary.
SUMMARY: dict[int, dict[str, float]] = {}


async def overhead(url: str, tasks: int, concurrency: int = CONCURRENCY) -> None:
    for steps in STEPS.values():
        steps.clear()
    bench = App(
        settings=Settings(database_url=url, home=Path(tempfile.mkdtemp()), poll_interval=0.2)
    )
    bench.agents.update(app.agents)
    async with bench, bench.connection() as conn:
        since = await _drain(bench, "inproc", tasks, concurrency)
        local = _stats("in-process", *await _durations(conn, "inproc", since))
        await _drain(bench, "ray_noop", 8 * CONCURRENCY, concurrency)  # Ray's processes
        since = await _drain(bench, "ray_noop", tasks, concurrency)
        remote = _stats("Ray task", *await _durations(conn, "ray_noop", since))
        since = await _drain(bench, "ray_timed", tasks, concurrency)
        timed = _stats("timed Ray", *await _durations(conn, "ray_timed", since))
    row = SUMMARY.setdefault(concurrency, {})
    row.update(
        inproc=local["mean_ms"], ray=remote["mean_ms"], inproc_p50=local["p50_ms"],
        ray_p50=remote["p50_ms"], inproc_per_s=local["per_s"], ray_per_s=remote["per_s"],
    )  # fmt: skip
    print(
        f"Ray adds {remote['mean_ms'] - local['mean_ms']:.2f} ms per attempt (mean) at "
        f"concurrency {concurrency}; throughput {local['per_s']:.0f} -> "
        f"{remote['per_s']:.0f} attempts/s, i.e. "
        f"{1000 / remote['per_s'] - 1000 / local['per_s']:.2f} ms more of wall time per attempt"
    )
    _breakdown(timed)


def _breakdown(timed: dict[str, float]) -> None:
    """Where a timed Ray attempt's time went (means over its attempts, ms)."""
    mean = {step: statistics.fmean(s) * 1000 for step, s in STEPS.items() if s}
    p50 = {step: sorted(s)[len(s) // 2] * 1000 for step, s in STEPS.items() if s}
    rest = mean["run"] - mean["submit"] - mean["result"] - mean.get("run id", 0.0)
    print(
        f"   breakdown: attempt {timed['mean_ms']:.2f} ms = worker outside the executor "
        f"{timed['mean_ms'] - mean['run']:.2f} + executor.run {mean['run']:.2f} "
        f"(submit {mean['submit']:.2f}, result {mean['result']:.2f}, "
        f"run id write {mean.get('run id', 0.0):.2f}, the rest {rest:.2f}); p50: "
        + ", ".join(f"{step} {ms:.2f}" for step, ms in p50.items())
    )


async def plain_ray(tasks: int, concurrency: int = CONCURRENCY) -> None:
    """The same no-op as a plain Ray driver runs it, `concurrency` at a time: what Ray
    itself costs on this machine, without Conveyor."""
    import ray

    remote = ray.remote(max_retries=0, num_cpus=2 / CONCURRENCY)(noop)
    slots = asyncio.Semaphore(concurrency)
    durations: list[float] = []

    submits: list[float] = []

    async def one() -> None:
        async with slots:
            began = time.perf_counter()
            ref = remote.remote(None)
            submits.append(time.perf_counter() - began)
            await ref
            durations.append(time.perf_counter() - began)

    await asyncio.gather(*(one() for _ in range(8 * CONCURRENCY)))  # warm-up
    durations.clear()
    submits.clear()
    cpu = time.process_time()
    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(tasks)))
    plain = _stats("plain Ray", durations, time.perf_counter() - began)
    SUMMARY.setdefault(concurrency, {}).update(plain=plain["mean_ms"], plain_p50=plain["p50_ms"])
    print(
        f"   (submit {statistics.fmean(submits) * 1000:.2f} ms mean of that; the driver's "
        f"CPU {(time.process_time() - cpu) * 1000 / tasks:.2f} ms per task)"
    )


async def exactly_once(url: str, tasks: int, address: str) -> None:
    bench = App(settings=Settings(database_url=url, home=Path(tempfile.mkdtemp())))
    bench.agents.update(app.agents)
    env = {
        **os.environ,
        "CONVEYOR_DATABASE_URL": url,
        "CONVEYOR_RAY_ADDRESS": address,
        "CONVEYOR_POLL_INTERVAL": "0.2",
        "CONVEYOR_SWEEP_INTERVAL": "0.5",
    }
    async with bench:
        async with bench.connection() as conn:
            await conn.execute("TRUNCATE tasks, task_attempts, attempt_usage CASCADE")
        ids = await bench.enqueue_many_async(
            [{"agent": "ray_noop", "payload": {}} for _ in range(tasks)]
        )
        command = [sys.executable, "-m", "conveyor.cli", "worker", "--app"]
        command += ["benchmarks.bench_ray:app", "--concurrency", str(CONCURRENCY)]
        began = time.monotonic()
        workers = [
            subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
            for _ in range(2)
        ]
        try:
            async with bench.connection() as conn:
                while True:
                    cur = await conn.execute(
                        "SELECT count(*) AS n FROM tasks WHERE status = 'completed'"
                    )
                    if (await cur.fetchone())["n"] == len(ids):  # type: ignore[index]
                        break
                    await asyncio.sleep(0.1)
                seconds = time.monotonic() - began
                cur = await conn.execute(
                    "SELECT count(*) AS attempts, count(DISTINCT task_id) AS tasks,"
                    " count(*) FILTER (WHERE status = 'lost') AS lost,"
                    " count(*) - count(DISTINCT task_id) AS repeated,"
                    " count(DISTINCT worker_id) AS workers FROM task_attempts"
                )
                row = await cur.fetchone()
        finally:
            for worker in workers:
                worker.terminate()
                worker.wait(30)
    print(
        f"2 worker processes: {len(ids)} Ray attempts in {seconds:.1f} s (with the workers' "
        f"start): {row}"
    )


def serialize(count: int) -> None:
    import msgpack
    from ray import cloudpickle

    from conveyor.executors import ray as executor
    from conveyor.task import Usage

    usage = Usage(model="gpt-4o-mini", input_tokens=1200, output_tokens=300, calls=1)
    usage.by_model["gpt-4o-mini"] = [1200, 300]
    node = "f" * 56
    ended = executor._Ended(usage=usage, node=node, value={"pages": 3})
    values = executor._returned(usage, node, {"pages": 3})
    for label, dump, load, what in (
        ("dataclass, cloudpickle", cloudpickle.dumps, cloudpickle.loads, ended),
        ("plain values, msgpack", msgpack.packb, msgpack.unpackb, values),
    ):
        began = time.process_time()
        for _ in range(count):
            load(dump(what))
        spent = (time.process_time() - began) / count * 1e6
        print(f"{label:>24}: {spent:.1f} us of CPU to dump and load, {len(dump(what))} bytes")


def _summary() -> None:
    """One line per concurrency: what a Ray attempt adds to an in-process one, and how
    much of that a plain Ray driver's own task takes at the same concurrency."""
    for concurrency, row in SUMMARY.items():
        if "ray" not in row:
            continue
        added = row["ray"] - row["inproc"]
        line = (
            f"concurrency {concurrency}: in-process {row['inproc']:.2f} ms, Ray attempt "
            f"{row['ray']:.2f} ms (p50 {row['inproc_p50']:.2f} -> {row['ray_p50']:.2f}): "
            f"adds {added:.2f} ms of latency, "
            f"{1000 / row['ray_per_s'] - 1000 / row['inproc_per_s']:.2f} ms of wall time"
        )
        if "plain" in row:
            line += (
                f"; plain Ray {row['plain']:.2f} ms (p50 {row['plain_p50']:.2f}), "
                f"so beyond Ray's own task {added - row['plain']:.2f} ms"
            )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("CONVEYOR_TEST_DATABASE_URL"))
    parser.add_argument("--tasks", type=int, default=1000)
    phases = ["plain", "overhead", "once"]
    parser.add_argument("--phases", nargs="+", choices=[*phases, "serialize"], default=phases)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[CONCURRENCY])
    args = parser.parse_args()
    if args.phases == ["serialize"]:
        serialize(args.tasks * 10)  # no cluster, no database
        return
    if not args.server:
        sys.exit("--server URL (or CONVEYOR_TEST_DATABASE_URL): a PostgreSQL to create a db in")
    import ray

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    name = f"conveyor_bench_ray_{secrets.token_hex(4)}"
    with fresh_database(args.server, name) as url:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        try:
            for concurrency in args.concurrency:
                print(f"-- concurrency {concurrency} (load {os.getloadavg()[0]:.1f})")
                if "plain" in args.phases:
                    asyncio.run(plain_ray(args.tasks, concurrency))
                if "overhead" in args.phases:
                    asyncio.run(overhead(url, args.tasks, concurrency))
            _summary()
            if "once" in args.phases:
                gcs = ray.get_runtime_context().gcs_address
                asyncio.run(exactly_once(url, args.tasks, gcs))
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
