"""The dashboard's queries at scale, and what the rollup triggers cost the queue.

    python benchmarks/gen_dataset.py URL                       # a million tasks, once
    python benchmarks/bench_dashboard.py URL [--runs 15]       # query times + EXPLAIN ANALYZE
    python benchmarks/bench_dashboard.py --drain [--repeats 3] # drain rate, triggers on/off
    python benchmarks/bench_dashboard.py --statement           # claim/finish, triggers on/off

Query times are those of the functions behind GET /api/metrics and GET /api/costs
(conveyor.metrics.summary and .costs) on one warm connection: the SQL and the Python that
shapes the answer, without HTTP. Each case runs --runs times; the p50 and the worst are
reported. Then EXPLAIN (ANALYZE, BUFFERS) of the main statements, trimmed.

--drain measures the queue with and without the rollup triggers in one run: the same
workload as bench_queue.py's drain (no-op tasks, real `conveyor worker` processes, 2
processes at concurrency 16, timed in the agents), in a fresh database per run (created
and dropped here), the triggers disabled for the runs without them; repeats interleaved.
On a busy machine the drain rate varies by more than the triggers cost, so --statement
also times the two statements the triggers add work to, alone on one connection, with and
without them, alternating round by round: the median difference is their cost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from conveyor import metrics
from conveyor.metrics import Filters, Span

ROLLUP_TRIGGERS = (
    ("tasks", "tasks_rollup_inserted"),
    ("tasks", "tasks_rollup_replaced"),
    ("tasks", "tasks_rollup_updated"),
    ("task_attempts", "task_attempts_rollup_inserted"),
    ("task_attempts", "task_attempts_rollup_updated"),
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Query times


async def _now(conn: Any) -> Any:
    cur = await conn.execute("SELECT now() AS now")
    row = await cur.fetchone()
    return row["now"]


def summary_cases(now: Any) -> dict[str, Filters]:
    return {
        "unfiltered": Filters(),
        "agent=invoice": Filters(agent="invoice"),
        "last 24 h": Filters(since=now - timedelta(hours=24)),
        "agent=invoice, last 24 h": Filters(agent="invoice", since=now - timedelta(hours=24)),
        "status=failed": Filters(status="failed"),
        "tenant=acme, last 30 days": Filters(tenant="acme", since=now - timedelta(days=30)),
    }


def cost_cases(now: Any) -> dict[str, tuple[Filters, list[str]]]:
    week, month = now - timedelta(days=7), now - timedelta(days=30)
    return {
        "by agent, all history": (Filters(), ["agent"]),
        "failed tasks, last 7 days": (Filters(status="failed", since=week), []),
        "agent=contract, 30 days (median per task)": (Filters(agent="contract", since=month), []),
        "by day and agent, 30 days": (Filters(since=month), ["day", "agent"]),
        "by tenant and status, agent=invoice": (Filters(agent="invoice"), ["tenant", "status"]),
        "by model, agent=invoice, 7 days (attempt rows)": (
            Filters(agent="invoice", since=week),
            ["model"],
        ),
        "by model, 30 days (attempt rows)": (Filters(since=month), ["model"]),
    }


async def timed(runs: int, call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    await call()  # warm: plans, caches
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), max(samples)


async def query_times(url: str, runs: int) -> None:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    async with conn:
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM tasks) AS tasks,"
            " (SELECT count(*) FROM task_attempts) AS attempts,"
            " (SELECT count(*) FROM task_rollups) AS rollups,"
            " (SELECT count(*) FROM task_histograms) AS histograms"
        )
        sizes = await cur.fetchone()
        assert sizes is not None
        print(
            f"\nDataset: {sizes['tasks']:,} tasks, {sizes['attempts']:,} attempts; "
            f"rollups {sizes['rollups']:,} rows, histograms {sizes['histograms']:,} rows\n"
        )
        now = await _now(conn)
        print(f"| GET /api/metrics | p50 ms | max ms ({runs} runs) |")
        print("|---|---:|---:|")
        for name, filters in summary_cases(now).items():

            async def one(f: Filters = filters) -> Any:
                return await metrics.summary(conn, f)

            p50, worst = await timed(runs, one)
            print(f"| {name} | {p50:.1f} | {worst:.1f} |")
        print(f"\n| GET /api/costs | p50 ms | max ms ({runs} runs) |")
        print("|---|---:|---:|")
        for name, (filters, group_by) in cost_cases(now).items():

            async def one_cost(f: Filters = filters, g: list[str] = group_by) -> Any:
                return await metrics.costs(conn, f, g)

            p50, worst = await timed(runs, one_cost)
            print(f"| {name} | {p50:.1f} | {worst:.1f} |")
        await explain(conn, now)


async def explain(conn: Any, now: Any) -> None:
    """EXPLAIN ANALYZE of the statements, trimmed to the plan's shape and timing."""
    span_all = Span.of(None, None)
    span_day = Span.of(now - timedelta(hours=24), None)
    span_week = Span.of(now - timedelta(days=7), None)
    none = {f"by_{k}": False for k in metrics.GROUP_KEYS}
    cases = [
        (
            "rollups_by_agent_status, unfiltered",
            metrics.Q.rollups_by_agent_status,
            metrics._params(Filters(), span_all),
        ),
        (
            "rollups_by_agent_status, agent=invoice, last 24 h",
            metrics.Q.rollups_by_agent_status,
            metrics._params(Filters(agent="invoice"), span_day),
        ),
        (
            "live_by_agent_status, unfiltered",
            metrics.Q.live_by_agent_status,
            metrics._params(Filters(), span_all),
        ),
        (
            "histogram_by_agent (latency), unfiltered: what /api/metrics reads",
            metrics.Q.histogram_by_agent,
            {**metrics._params(Filters(), span_all), **none, "kind": "latency"},
        ),
        (
            "histogram (latency), unfiltered: the full table, for a tenant or status filter",
            metrics.Q.histogram,
            {**metrics._params(Filters(), span_all), **none, "kind": "latency"},
        ),
        (
            "costs_by_model, agent=invoice, 7 days",
            metrics.Q.costs_by_model,
            {**metrics._params(Filters(agent="invoice"), span_week), **none, "by_model": True},
        ),
    ]
    for name, query, params in cases:
        cur = await conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + query, params)
        lines = [r["QUERY PLAN"] for r in await cur.fetchall()]
        print(f"\n#### {name}\n```")
        for line in lines:
            # Long conditions are cut: the plan's shape and its times are what matter.
            print(line if len(line) <= 110 else line[:107] + "...")
        print("```")


# ---------------------------------------------------------------------------------------
# Drain rate with and without the triggers


async def drain(server: str, repeats: int, tasks: int) -> None:
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from bench_queue import Databases, enqueue_in_batches, wait_until_done, workers
    from subjects import ConveyorSubject
    from timing import drain_rate

    databases = Databases(server)
    rates: dict[str, list[float]] = {"with triggers": [], "without triggers": []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench_dashboard_") as folder:
            for repeat in range(repeats):
                order = list(rates) if repeat % 2 == 0 else list(reversed(rates))
                for variant in order:
                    url = databases.create("drain")
                    subject = ConveyorSubject()
                    await subject.open(url)
                    try:
                        if variant == "without triggers":
                            for table, trigger in ROLLUP_TRIGGERS:
                                await subject.admin.execute(
                                    f"ALTER TABLE {table} DISABLE TRIGGER {trigger}"  # constants
                                )
                        await enqueue_in_batches(subject, tasks)
                        with workers(subject, 2, 16, Path(folder)) as running:
                            await wait_until_done(subject, running, 300)
                            records = running.stop()
                        rate = drain_rate(records)
                        rates[variant].append(rate)
                        log(f"{variant}: {rate:,.0f} tasks/s")
                        if variant == "with triggers":
                            cur = await subject.admin.execute(
                                "SELECT count(*) AS n, sum(tasks) AS tasks FROM task_rollups"
                                " WHERE grain = 'h'"
                            )
                            row = await cur.fetchone()
                            log(f"  rollup rows (hour grain): {row[0]}, tasks counted {row[1]}")
                    finally:
                        await subject.close()
                        databases.drop_all()
    finally:
        databases.drop_all()
    with_, without = (statistics.median(rates[k]) for k in rates)
    print("\n| drain, 2 workers x 16, no-op tasks | tasks/s (median) | runs |")
    print("|---|---:|---|")
    for name, values in rates.items():
        runs = ", ".join(f"{v:,.0f}" for v in values)
        print(f"| {name} | {statistics.median(values):,.0f} | {runs} |")
    print(f"\nratio with/without: {with_ / without:.3f}")


async def statement_cost(server: str, rounds: int) -> None:
    """The finish statement (1 and 16 outcomes) and the claim, timed alone on one
    connection, with and without the rollup triggers, interleaved round by round."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from bench_queue import Databases

    from conveyor import App, NewTask, queue
    from conveyor.settings import Settings

    databases = Databases(server)
    url = databases.create("statement")
    app = App(settings=Settings(database_url=url))

    async def never(task: Any) -> None:
        raise AssertionError("nothing runs here")

    app.agent("noop", compute_usd_per_hour=0.05)(never)
    times: dict[tuple[str, str], list[float]] = {}
    try:
        await app.database()
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
        async with conn:
            for n in range(rounds):
                variants = ["with", "without"] if n % 2 == 0 else ["without", "with"]
                for variant in variants:
                    action = "ENABLE" if variant == "with" else "DISABLE"
                    for table, trigger in ROLLUP_TRIGGERS:
                        await conn.execute(f"ALTER TABLE {table} {action} TRIGGER {trigger}")
                    # ALTER TABLE invalidates every cached plan on the table: the first
                    # round after a switch re-plans, and is not counted.
                    for repeat in range(6):
                        for size in (1, 16):
                            await app.enqueue_many_async(
                                [NewTask("noop", {"n": i}, tenant="acme") for i in range(size)]
                            )
                            started = time.perf_counter()
                            claimed = await queue.claim(
                                conn, worker_id="w", agents=["noop"], limit=size
                            )
                            claimed_at = time.perf_counter()
                            await queue.finish(conn, [_outcome(t) for t in claimed])
                            done = time.perf_counter()
                            if repeat == 0:
                                continue
                            times.setdefault((f"claim {size}", variant), []).append(
                                (claimed_at - started) * 1000
                            )
                            times.setdefault((f"finish {size}", variant), []).append(
                                (done - claimed_at) * 1000
                            )
    finally:
        await app.aclose()
        databases.drop_all()
    print(f"\n| statement ({rounds} x 5 each) | with triggers, ms | without, ms | ratio |")
    print("|---|---:|---:|---:|")
    for what in ("claim 1", "finish 1", "claim 16", "finish 16"):
        with_ = statistics.median(times[what, "with"])
        without = statistics.median(times[what, "without"])
        print(f"| {what} | {with_:.2f} | {without:.2f} | {with_ / without:.2f} |")


def _outcome(task: Any) -> Any:
    from conveyor.queue import Outcome

    return Outcome(
        task.id,
        task.attempt,
        "succeeded",
        result='{"confidence": 1}',
        model="m",
        input_tokens=100,
        output_tokens=10,
        llm_cost_usd=0.001,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="a database filled by gen_dataset.py")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--drain", action="store_true", help="measure the drain rate instead")
    parser.add_argument(
        "--statement",
        action="store_true",
        help="time the claim and finish statements with and without the triggers",
    )
    parser.add_argument("--rounds", type=int, default=200, help="rounds of --statement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=8000, help="tasks per drain run")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    if args.drain:
        asyncio.run(drain(args.server, args.repeats, args.tasks))
    elif args.statement:
        asyncio.run(statement_cost(args.server, args.rounds))
    elif args.url:
        asyncio.run(query_times(args.url, args.runs))
    else:
        parser.error("give a database URL, or --drain")


if __name__ == "__main__":
    main()
