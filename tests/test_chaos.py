"""The chaos run: thousands of tasks drain while worker processes are SIGKILLed at random
and PostgreSQL itself is restarted once. Every task must end completed exactly once."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, NewTask
from conveyor.db.embedded import EmbeddedPostgres
from conveyor.settings import Settings
from tests.processes import WorkerProcess
from tests.servers import own_server

TASKS = 3000


@pytest.fixture
def server() -> Iterator[EmbeddedPostgres]:
    """A server of its own: restarting it must not disturb the other tests' server."""
    with own_server("conveyor-chaos-", settings={}) as server:
        yield server


@pytest.fixture
async def producer(server: EmbeddedPostgres, tmp_path: Path) -> AsyncIterator[App]:
    from tests.worker_app import app as worker_app

    app = App(settings=Settings(database_url=server.url, home=tmp_path))
    spec = worker_app.agents["chaos"]
    assert spec.fn is not None
    app.agent("chaos", lease_seconds=spec.lease_seconds, max_attempts=spec.max_attempts)(spec.fn)
    yield app
    await app.aclose()


async def test_kills_and_a_database_restart_lose_nothing_and_complete_nothing_twice(
    server: EmbeddedPostgres, producer: App, tmp_path: Path
) -> None:
    rng = random.Random(20261129)
    await producer.enqueue_many_async(
        [NewTask("chaos", {"n": n, "seconds": 0.02}) for n in range(TASKS)]
    )
    await producer.aclose()  # its pool would only see the restart too

    workers: list[WorkerProcess] = []

    def start_worker() -> None:
        log = tmp_path / f"worker-{len(workers)}.log"
        workers.append(WorkerProcess(server.url, concurrency=8, log_path=log))

    for _ in range(3):
        start_worker()
    # The chaos is driven by progress, not by the clock: a SIGKILL each time another tenth
    # of the tasks is done, and the database restart at half-way.
    kill_at = [TASKS * k // 10 for k in range(1, 9)]
    restart_at = TASKS // 2
    kills = 0
    restarted = False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 240
    try:
        while (done := await _completed(server.url)) < TASKS:
            assert loop.time() < deadline, f"only {done} of {TASKS} completed"
            if not restarted and done >= restart_at:
                await asyncio.to_thread(server.restart)
                restarted = True
            elif kill_at and done >= kill_at[0]:
                kill_at.pop(0)
                rng.choice([w for w in workers if w.proc.poll() is None]).kill()
                kills += 1
                start_worker()
            await asyncio.sleep(0.05)
        assert restarted and kills == 8, "the chaos really happened"
    finally:
        for w in workers:
            w.close()

    async with await psycopg.AsyncConnection.connect(server.url, row_factory=dict_row) as conn:
        rows = await (
            await conn.execute(
                """SELECT t.status, count(*) AS tasks,
                      sum((SELECT count(*) FROM task_attempts a
                           WHERE a.task_id = t.id AND a.status = 'succeeded')) AS successes,
                      max(t.attempts) AS most_attempts
               FROM tasks t GROUP BY t.status"""
            )
        ).fetchall()
        statuses = await (
            await conn.execute("SELECT status, count(*) AS n FROM task_attempts GROUP BY status")
        ).fetchall()
    summary: dict[str, Any] = {r["status"]: r for r in rows}
    assert set(summary) == {"completed"}, summary
    assert summary["completed"]["tasks"] == TASKS, "no task lost"
    assert summary["completed"]["successes"] == TASKS, "no task completed twice"
    by_status = {r["status"]: r["n"] for r in statuses}
    assert set(by_status) <= {"succeeded", "lost"}, by_status
    assert by_status.get("lost", 0) > 0, "kills cost attempts, which were recovered"


async def _completed(url: str) -> int:
    try:
        async with await psycopg.AsyncConnection.connect(url) as conn:
            cur = await conn.execute("SELECT count(*) FROM tasks WHERE status = 'completed'")
            row = await cur.fetchone()
            return int(row[0]) if row else 0
    except psycopg.OperationalError:
        return 0  # the server is restarting
