"""What the fan-in trigger costs tasks that have no parent: a worker's exchange (finish a
batch of outcomes and claim the next batch, one transaction) with the trigger
`tasks_children_settle` enabled and disabled, interleaved round by round in one run.

    python benchmarks/children_trigger_cost.py [--server URL] [--rounds 20] [--batch 16]
                                               [--cancel-children 2000]

Each round enqueues `--batch` x 50 no-op tasks and drains them with finish_and_claim() on
one connection, as a worker at concurrency `--batch` would, and times the drain per task.
Medians of the rounds and their 10th-90th percentile spread, for each setting.

On a loaded machine the wall times of the two settings overlap by far more than the
trigger can cost, so the run measures the server's side too:
- CPU time of the connection's backend per task (from /proc/<pid>/schedstat, when the
  server runs on this machine): what the server spent, not how long it waited for a core;
- the trigger's function inside the server: with track_functions = 'pl' (the connection
  is a superuser's), pg_stat_user_functions counts its calls and the time spent in them
  (the settle's included) during the rounds in which it is enabled.

The other side of the cost: a statement that ends many children at once. With
--cancel-children N (0: skip), a parent spawns N children (one statement) and its tree is
cancelled (one statement cancels the N queued children), twice, timed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.rows import dict_row, tuple_row  # noqa: E402
from scratch import fresh_database  # noqa: E402

from conveyor import queue  # noqa: E402
from conveyor.db.migrate import migrate  # noqa: E402
from conveyor.queue import AgentRegistration, AttemptOutcome, NewTask, Outcome  # noqa: E402

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


def server_cpu_ns(pid: int) -> int | None:
    """Nanoseconds the backend `pid` has run on a CPU, if it runs on this machine."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


async def drain(
    conn: psycopg.AsyncConnection[dict[str, object]], batch: int, backend: int
) -> tuple[float, float | None]:
    """Microseconds per task: wall time, and the backend's CPU time (None: not local)."""
    await queue.enqueue_many(
        conn, [NewTask("noop") for _ in range(batch * 50)], known_agents={"noop"}
    )
    cpu_before = server_cpu_ns(backend)
    started = time.perf_counter()
    done = 0
    claimed = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=batch)
    while claimed:
        outcomes = [Outcome(t.id, t.attempt, AttemptOutcome.SUCCEEDED, result="1") for t in claimed]
        done += len(outcomes)
        _, claimed = await queue.finish_and_claim(
            conn,
            outcomes,
            worker_id="bench",
            agents=["noop"],
            limit=batch,
        )
    wall = (time.perf_counter() - started) / done * 1e6
    cpu_after = server_cpu_ns(backend)
    if cpu_before is None or cpu_after is None:
        return wall, None
    return wall, (cpu_after - cpu_before) / done / 1e3


async def spawn_and_cancel(conn: psycopg.AsyncConnection[dict[str, object]], n: int) -> str:
    await queue.enqueue_many(conn, [NewTask("noop")], known_agents={"noop"})
    (parent,) = await queue.claim(conn, worker_id="bench", agents=["noop"], limit=1)
    spawn = queue.spawn_json(queue.Spawn([queue.Child("noop", key=f"k{i}") for i in range(n)]))
    started = time.perf_counter()
    await queue.finish(
        conn, [Outcome(parent.id, parent.attempt, AttemptOutcome.SPAWNED, result=spawn)]
    )
    spawned = time.perf_counter()
    cancelled = await queue.cancel_tree(conn, parent.id)
    ended = time.perf_counter()
    return (
        f"spawn of {n} children {spawned - started:.3f} s, "
        f"cancel of the tree ({len(cancelled)} tasks) {ended - spawned:.3f} s"
    )


def spread(values: list[float]) -> str:
    deciles = statistics.quantiles(values, n=10)
    return (
        f"{statistics.median(values):.1f} us per task (p10-p90 {deciles[0]:.1f}-{deciles[-1]:.1f})"
    )


async def main_async(args: argparse.Namespace) -> int:
    with fresh_database(args.server, f"children_trigger_{os.getpid()}") as url:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row
        ) as conn:
            await migrate(conn)
            await queue.register_agents(conn, [AgentRegistration("noop")])
            await conn.execute("SET track_functions = 'pl'")
            cur = await conn.execute("SELECT pg_backend_pid() AS pid")
            backend = int((await cur.fetchone() or {"pid": 0})["pid"])
            await drain(conn, args.batch, backend)  # warm up
            await conn.execute("SELECT pg_stat_reset()")
            wall: dict[str, list[float]] = {"enabled": [], "disabled": []}
            cpu: dict[str, list[float]] = {"enabled": [], "disabled": []}
            for n in range(args.rounds):
                for setting in ("enabled", "disabled") if n % 2 else ("disabled", "enabled"):
                    verb = "ENABLE" if setting == "enabled" else "DISABLE"
                    await conn.execute(
                        sql.SQL("ALTER TABLE tasks {} TRIGGER tasks_children_settle").format(
                            sql.SQL(verb)
                        )
                    )
                    wall_us, cpu_us = await drain(conn, args.batch, backend)
                    wall[setting].append(wall_us)
                    if cpu_us is not None:
                        cpu[setting].append(cpu_us)
                await conn.execute("DELETE FROM task_attempts")
                await conn.execute("DELETE FROM tasks")
            in_server = await trigger_time(conn)
            await conn.execute("ALTER TABLE tasks ENABLE TRIGGER tasks_children_settle")
            for _ in range(2 if args.cancel_children else 0):
                print(await spawn_and_cancel(conn, args.cancel_children))
        print(f"{args.rounds} rounds of {args.batch * 50} tasks, batches of {args.batch}")
        for setting in ("enabled", "disabled"):
            line = f"trigger {setting}: wall {spread(wall[setting])}"
            if len(cpu[setting]) > 1:
                line += f"; server CPU {spread(cpu[setting])}"
            print(line)
        ratio = statistics.median(wall["enabled"]) / statistics.median(wall["disabled"])
        line = f"enabled / disabled: wall {ratio:.3f}"
        if len(cpu["enabled"]) > 1:
            ratio = statistics.median(cpu["enabled"]) / statistics.median(cpu["disabled"])
            line += f", server CPU {ratio:.3f}"
        print(f"{line}; load average {os.getloadavg()}")
        tasks = args.rounds * args.batch * 50
        exchange_us = statistics.mean(wall["enabled"])
        for function, calls, total_ms in in_server:
            print(
                f"in the server, {function}: {calls} calls ({calls / tasks:.3f} per task), "
                f"{total_ms * 1e3 / max(calls, 1):.1f} us per call, "
                f"{total_ms * 1e3 / tasks:.2f} us per task = "
                f"{total_ms * 1e3 / tasks / exchange_us:.2%} of the exchange's "
                f"{exchange_us:.0f} us per task (mean wall, trigger enabled)"
            )
    return 0


async def trigger_time(
    conn: psycopg.AsyncConnection[dict[str, object]],
) -> list[tuple[str, int, float]]:
    """Calls of the trigger's function and of the settle, and the milliseconds spent in
    them (total_time: the settle's is inside the trigger's); 0 calls for one never called."""
    # This connection's counts reach the shared statistics when it is next idle.
    await conn.execute("SELECT pg_stat_force_next_flush()")
    await conn.execute("SELECT pg_stat_clear_snapshot()")
    cur = conn.cursor(row_factory=tuple_row)
    await cur.execute(
        "SELECT f.name, coalesce(s.calls, 0), coalesce(s.total_time, 0)"
        " FROM unnest(ARRAY['conveyor_children_on_update', 'conveyor_children_settle'])"
        "      WITH ORDINALITY AS f(name, n)"
        " LEFT JOIN pg_stat_user_functions s ON s.funcname = f.name ORDER BY f.n"
    )
    return [(str(n), int(c), float(t)) for n, c, t in await cur.fetchall()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=DEFAULT_SERVER)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--cancel-children", type=int, default=2000)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
