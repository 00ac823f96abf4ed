"""CPU per task of a drain, PostgreSQL's and the workers', for Conveyor and its peers.

    python benchmarks/cpu_per_task.py [--tasks 20000] [--repeats 2] [--config 2x16]
        [--peers graphile_batched,pgqueuer] [--server URL]

The drain of bench_queue.py (pre-enqueued no-op tasks, real worker processes), measured
by what it costs rather than how fast it goes: on a machine shared with other work the
rates follow the scheduler, the CPU seconds spent much less. While the workers drain, the
harness reads every server backend of the library's database (pg_stat_activity, its own
connection left out) and the worker processes from /proc: user + system time, from the
backend's first sight to the drain's end, divided by the tasks drained. The server's
shared processes (WAL writer, checkpointer) are not counted, for any library; the WAL
each library writes per task is, from pg_current_wal_lsn().

--statements: also where the server's time went, from pg_stat_statements (track = all, so
the statements that functions and triggers run are listed too) and pg_stat_user_functions
(track_functions = all). It needs a server started with pg_stat_statements in
shared_preload_libraries, e.g. a private cluster:

    initdb -D /tmp/pg -A trust -U postgres   # then in postgresql.conf: port = 5544,
    # shared_preload_libraries = 'pg_stat_statements', pg_stat_statements.track = all,
    # track_functions = all, and the settings of the server being compared
    python benchmarks/cpu_per_task.py --server postgresql://postgres@127.0.0.1:5544 --statements
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_queue  # noqa: E402
from subjects import ConveyorSubject, Subject  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system time of a process (all its threads), or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


@dataclass
class Cost:
    tasks: int
    server_us: float  # per task
    worker_us: float
    wal_bytes: float
    commits: float  # transactions committed in the database, per task
    rate: float  # tasks/s, for reference only

    def line(self, name: str) -> str:
        return (
            f"{name:18} server {self.server_us:6.1f} µs  worker {self.worker_us:6.1f} µs  "
            f"WAL {self.wal_bytes:6.0f} B  commits {self.commits:5.3f} per task  "
            f"({self.rate:,.0f} tasks/s)"
        )


async def backend_cpu(subject: Subject, seen: dict[int, float]) -> None:
    """Add the backends of the subject's database to `seen` (pid -> latest CPU seconds)."""
    admin = subject.admin  # type: ignore[attr-defined]
    cur = await admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid()"
    )
    for (pid,) in await cur.fetchall():
        now = cpu_seconds(pid)
        if now is not None:
            seen[pid] = now


async def wal_and_commits(subject: Subject) -> tuple[int, int]:
    """The server's WAL position and this database's committed transactions so far."""
    admin = subject.admin  # type: ignore[attr-defined]
    await admin.execute("SELECT pg_stat_clear_snapshot()")
    cur = await admin.execute(
        "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, xact_commit FROM pg_stat_database"
        " WHERE datname = current_database()"
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


STATEMENTS = """
SELECT round(s.total_exec_time::numeric / %(n)s * 1000, 1) AS us_per_task,
       s.calls, round(s.rows::numeric / %(n)s, 2) AS rows_per_task,
       s.shared_blks_hit + s.shared_blks_read AS blocks, s.wal_bytes,
       left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110) AS query
FROM pg_stat_statements s
JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()
ORDER BY s.total_exec_time DESC
LIMIT 14
"""

FUNCTIONS = """
SELECT funcname, calls, round((total_time / %(n)s * 1000)::numeric, 1) AS total_us_per_task,
       round((self_time / %(n)s * 1000)::numeric, 1) AS self_us_per_task
FROM pg_stat_user_functions ORDER BY total_time DESC LIMIT 10
"""


async def reset_statements(subject: Subject) -> None:
    admin = subject.admin  # type: ignore[attr-defined]
    await admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    await admin.execute("SELECT pg_stat_statements_reset(), pg_stat_reset()")


async def print_statements(subject: Subject, n: int) -> None:
    admin = subject.admin  # type: ignore[attr-defined]
    for title, query in (("statements", STATEMENTS), ("functions", FUNCTIONS)):
        cur = await admin.execute(query, {"n": n})
        rows = await cur.fetchall()
        names = [c.name for c in cur.description or ()]
        print(f"  {subject.name}: {title} ({' | '.join(names)})", file=sys.stderr)
        for row in rows:
            print("    " + " | ".join(str(v) for v in row), file=sys.stderr)


async def drain_cost(
    subject: Subject,
    processes: int,
    concurrency: int,
    n: int,
    folder: Path,
    statements: bool = False,
    setup_sql: str = "",
) -> Cost:
    await subject.reset()
    if setup_sql and subject.name == "conveyor":
        await subject.admin.execute(setup_sql)  # type: ignore[attr-defined]
    await bench_queue.enqueue_in_batches(subject, n)
    seen: dict[int, float] = {}  # backend pid -> CPU seconds at the latest look
    base: dict[int, float] = {}  # ... at the last look before the first claim
    if statements:
        await reset_statements(subject)
    wal_before, commits_before = await wal_and_commits(subject)
    with bench_queue.workers(subject, processes, concurrency, folder) as running:
        deadline = time.monotonic() + bench_queue.WAIT_TIMEOUT
        # Start-up is left out: the workers' imports and connections, until the first
        # claim (the last look at which nothing was taken yet).
        worker_base = 0.0
        while (left := await subject.remaining()) > 0:
            running.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{subject.name}: drain unfinished")
            await backend_cpu(subject, seen)
            if left == n:
                base = dict(seen)
                worker_base = sum(cpu_seconds(p.pid) or 0.0 for p in running.procs)
            await asyncio.sleep(0.1)
        await backend_cpu(subject, seen)
        worker_cpu = sum(cpu_seconds(p.pid) or 0.0 for p in running.procs) - worker_base
        records = running.stop()
    # After the workers stopped: the statistics of a backend reach the server when it is
    # idle or gone. (The stop writes the last outcomes: those commits count too.)
    await asyncio.sleep(1.0)
    wal_after, commits_after = await wal_and_commits(subject)
    if statements:
        await print_statements(subject, n)
    server = sum(cpu - base.get(pid, 0.0) for pid, cpu in seen.items())
    return Cost(
        tasks=n,
        server_us=server / n * 1e6,
        worker_us=worker_cpu / n * 1e6,
        wal_bytes=(wal_after - wal_before) / n,
        commits=(commits_after - commits_before) / n,
        rate=bench_queue.timing.drain_rate(records),
    )


async def run(
    server: str,
    config: str,
    n: int,
    repeats: int,
    peers: set[str],
    statements: bool,
    setup_sql: str = "",
) -> None:
    processes, concurrency = (int(x) for x in config.split("x"))
    databases = bench_queue.Databases(server)
    subjects: list[Subject] = [ConveyorSubject(), *bench_queue.peer_subjects(peers)]
    costs: dict[str, list[Cost]] = {s.name: [] for s in subjects}
    try:
        for s in subjects:
            await s.open(databases.create(f"cpu_{s.name}"))
        with tempfile.TemporaryDirectory(prefix="bench_cpu_") as folder:
            for repeat in range(repeats):
                for s in bench_queue.rotated(subjects, repeat):
                    cost = await drain_cost(
                        s, processes, concurrency, n, Path(folder), statements, setup_sql
                    )
                    costs[s.name].append(cost)
                    print(cost.line(s.name), file=sys.stderr, flush=True)
    finally:
        for s in subjects:
            await s.close()
        databases.drop_all()
    print(f"\nmedians of {repeats} repeat(s), {n:,} tasks, {config}:")
    for name, runs in costs.items():
        print(
            Cost(
                tasks=n,
                server_us=statistics.median(c.server_us for c in runs),
                worker_us=statistics.median(c.worker_us for c in runs),
                wal_bytes=statistics.median(c.wal_bytes for c in runs),
                commits=statistics.median(c.commits for c in runs),
                rate=statistics.median(c.rate for c in runs),
            ).line(name)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=bench_queue.DEFAULT_SERVER)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--config", default="2x16", help="processes x concurrency")
    parser.add_argument("--peers", default="graphile_batched,pgqueuer")
    parser.add_argument("--statements", action="store_true", help="pg_stat_statements too")
    parser.add_argument(
        "--conveyor-sql",
        default="",
        help="SQL run on Conveyor's database before each drain, to measure one change by "
        "itself (e.g. 'ALTER TABLE tasks DISABLE TRIGGER tasks_rollup_updated')",
    )
    args = parser.parse_args()
    peers = set(args.peers.split(","))
    asyncio.run(
        run(
            args.server,
            args.config,
            args.tasks,
            args.repeats,
            peers,
            args.statements,
            args.conveyor_sql,
        )
    )


if __name__ == "__main__":
    main()
