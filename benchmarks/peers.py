"""The two peers, procrastinate 3.10 and pgqueuer 1.6: the harness's side and their workers.

The harness side (`ProcrastinateSubject`, `PgqueuerSubject`) installs each library's schema,
enqueues through its documented client calls and counts what is left. The worker side is
this module run as a program, one process per worker (from this folder):

    BENCH_DATABASE_URL=... python -c 'import peers; peers.main()' procrastinate --concurrency 16
    BENCH_DATABASE_URL=... python -c 'import peers; peers.main()' pgqueuer --concurrency 16

SIGTERM stops a worker gracefully; its agents' start times then go to $BENCH_RECORD.
Each library runs in its own database, so neither can see the other's tables or NOTIFYs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any

import procrastinate
import psycopg
import uvloop
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.models import Job
from timing import dump, record

try:
    import asyncpg
except ImportError:  # the `bench` extra names plain pgqueuer, without its asyncpg extra
    raise SystemExit(
        "pgqueuer is measured on asyncpg, the driver its documentation uses: "
        "pip install 'pgqueuer[asyncpg]==1.6.0'"
    ) from None

ENV_URL = "BENCH_DATABASE_URL"
# Imported rather than run as __main__, so that procrastinate finds its App in a module
# with a name (it warns about an App in __main__). The harness runs it from this folder.
WORKER_PROGRAM = [sys.executable, "-c", "import peers; peers.main()"]


# ---------------------------------------------------------------------------------------
# procrastinate


def procrastinate_app(url: str, pool_size: int) -> procrastinate.App:
    """An App over psycopg's async pool. The pool holds a connection for every concurrent
    job plus the LISTEN connection and the heartbeat, so no job waits for a connection."""
    connector = procrastinate.PsycopgConnector(conninfo=url, min_size=pool_size, max_size=pool_size)
    app = procrastinate.App(connector=connector)

    @app.task(name="noop")
    async def noop(**payload: Any) -> None:
        record(payload)

    return app


def procrastinate_worker_config(concurrency: int) -> dict[str, Any]:
    # The defaults otherwise: LISTEN/NOTIFY on, jobs kept after they finish (like Conveyor
    # keeps its rows), one fetch query per job, which is how procrastinate works.
    return {"concurrency": concurrency, "install_signal_handlers": True}


class ProcrastinateSubject:
    name = "procrastinate"

    async def open(self, url: str) -> None:
        self.url = url
        self.app = procrastinate_app(url, pool_size=4)
        await self.app.open_async()
        await self.app.schema_manager.apply_schema_async()
        self.admin = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def close(self) -> None:
        await self.app.close_async()
        await self.admin.close()

    async def reset(self) -> None:
        await self.admin.execute(
            "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers,"
            " procrastinate_workers RESTART IDENTITY CASCADE"
        )

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        await self.app.tasks["noop"].batch_defer_async(*payloads)

    async def enqueue_one(self, payload: dict[str, Any]) -> None:
        await self.app.tasks["noop"].defer_async(**payload)

    async def remaining(self) -> int:
        cur = await self.admin.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    def worker_command(self, concurrency: int, processes: int) -> tuple[list[str], dict[str, str]]:
        argv = [*WORKER_PROGRAM, "procrastinate"]
        argv += ["--concurrency", str(concurrency), "--processes", str(processes)]
        return argv, {ENV_URL: self.url}

    def describe(self, concurrency: int, processes: int) -> str:
        pool = concurrency + 2
        return f"run_worker_async(concurrency={concurrency}), PsycopgConnector pool {pool}"


async def run_procrastinate_worker(url: str, concurrency: int) -> None:
    app = procrastinate_app(url, pool_size=concurrency + 2)
    async with app.open_async():
        await app.run_worker_async(**procrastinate_worker_config(concurrency))


# ---------------------------------------------------------------------------------------
# pgqueuer


def pgqueuer_limits(concurrency: int, processes: int) -> dict[str, int | None]:
    """How many jobs one pgqueuer worker runs at once.

    pgqueuer has two caps: `max_concurrent_tasks` per worker, enforced in its dequeue query,
    which must be at least twice `batch_size`; and an entrypoint's `concurrency_limit`,
    which counts picked jobs across all workers. The per-worker cap is the one that means
    "this process runs C jobs at once"; it cannot express C = 1, so there the entrypoint
    limit (one process, so the same thing) with batches of one stands in.
    """
    if concurrency == 1:
        return {"max_concurrent_tasks": None, "batch_size": 1, "entrypoint_limit": processes}
    return {
        "max_concurrent_tasks": concurrency,
        "batch_size": concurrency // 2,
        "entrypoint_limit": 0,
    }


class PgqueuerSubject:
    """pgqueuer over asyncpg, the driver its README and `pgq run` examples use."""

    name = "pgqueuer"

    async def open(self, url: str) -> None:
        self.url = url
        self.conn = await asyncpg.connect(url)
        self.queries = Queries(AsyncpgDriver(self.conn))
        if not await self.queries.schema_is_installed():
            await self.queries.install()
        self.admin = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def close(self) -> None:
        await self.conn.close()
        await self.admin.close()

    async def reset(self) -> None:
        await self.admin.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        # Lists make one INSERT of the whole batch; pgqueuer's payloads are bytes.
        n = len(payloads)
        await self.queries.enqueue(["noop"] * n, [_bytes(p) for p in payloads], [0] * n)

    async def enqueue_one(self, payload: dict[str, Any]) -> None:
        await self.queries.enqueue("noop", _bytes(payload))

    async def remaining(self) -> int:
        # A finished job is moved from `pgqueuer` to `pgqueuer_log`.
        cur = await self.admin.execute("SELECT count(*) FROM pgqueuer")
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    def worker_command(self, concurrency: int, processes: int) -> tuple[list[str], dict[str, str]]:
        argv = [*WORKER_PROGRAM, "pgqueuer"]
        argv += ["--concurrency", str(concurrency), "--processes", str(processes)]
        return argv, {ENV_URL: self.url}

    def describe(self, concurrency: int, processes: int) -> str:
        limits = pgqueuer_limits(concurrency, processes)
        if limits["max_concurrent_tasks"] is None:
            return (
                f"entrypoint concurrency_limit={limits['entrypoint_limit']}, "
                f"batch_size={limits['batch_size']}"
            )
        return (
            f"max_concurrent_tasks={limits['max_concurrent_tasks']}, "
            f"batch_size={limits['batch_size']}"
        )


def _bytes(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


async def run_pgqueuer_worker(url: str, concurrency: int, processes: int) -> None:
    limits = pgqueuer_limits(concurrency, processes)
    # One asyncpg connection per worker, as in pgqueuer's own examples. (Its psycopg
    # driver also shares one connection between LISTEN and the queries, and with the
    # concurrency limit of 1 used below it ran under one job a second here.)
    conn = await asyncpg.connect(url)
    pgq = PgQueuer(AsyncpgDriver(conn))

    @pgq.entrypoint("noop", concurrency_limit=limits["entrypoint_limit"] or 0)
    async def noop(job: Job) -> None:
        record(json.loads(job.payload) if job.payload else None)

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, pgq.shutdown.set)
    try:
        await pgq.run(
            batch_size=limits["batch_size"] or 1,
            max_concurrent_tasks=limits["max_concurrent_tasks"],
        )
    finally:
        await conn.close()


# ---------------------------------------------------------------------------------------
# Worker processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=["procrastinate", "pgqueuer"])
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--processes", type=int, default=1, help="how many run side by side")
    args = parser.parse_args()
    url = os.environ[ENV_URL]
    if args.library == "procrastinate":
        asyncio.run(run_procrastinate_worker(url, args.concurrency))
    else:
        # `pgq run`, pgqueuer's own worker command, runs its workers on uvloop.
        uvloop.run(run_pgqueuer_worker(url, args.concurrency, args.processes))
    dump()


if __name__ == "__main__":
    main()
