"""The vacuumer: the queue's hot tables are vacuumed once their dead rows pass the
threshold, by one worker at a time, and the dead entries leave the dequeue index."""

from __future__ import annotations

from typing import Any

import psycopg

from conveyor import App, NewTask, Task, queue
from conveyor.worker.vacuum import Vacuumer


async def _noop(task: Task) -> None:
    return None


async def _churn(app: App, n: int) -> None:
    """n tasks enqueued, claimed and completed: dead rows in tasks and task_attempts."""
    app.agent("noop")(_noop)
    db = await app.database()
    async with db.connection() as c:
        await queue.enqueue_many(c, [NewTask("noop") for _ in range(n)], known_agents=set())
        claimed = await queue.claim(c, worker_id="w", agents=["noop"], limit=n)
        outcomes = [queue.Outcome(t.id, t.attempt, "succeeded", result="1") for t in claimed]
        await queue.finish(c, outcomes)
        # The statistics reach the server a second or so after a transaction; now, here.
        await c.execute("SELECT pg_stat_force_next_flush()")


async def _vacuum_count(conn: Any, table: str) -> int:
    await conn.execute("SELECT pg_stat_clear_snapshot()")
    cur = await conn.execute(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = %s", (table,)
    )
    row = await cur.fetchone()
    return int(row["vacuum_count"])


async def test_vacuums_the_hot_tables_past_the_threshold(app: App, conn: Any) -> None:
    await _churn(app, 300)
    db = await app.database()
    before = {t: await _vacuum_count(conn, t) for t in ("tasks", "task_attempts")}

    assert await Vacuumer(db, dead_rows=100_000).run_once() == []  # below it: nothing
    assert {t: await _vacuum_count(conn, t) for t in before} == before

    vacuumer = Vacuumer(db, dead_rows=200)
    assert await vacuumer.run_once() == ["task_attempts", "tasks"]
    after = {t: await _vacuum_count(conn, t) for t in before}
    assert after == {t: n + 1 for t, n in before.items()}
    assert vacuumer.vacuums == 2
    # The dead rows are gone: the next look finds nothing to do.
    assert await vacuumer.run_once() == []


async def test_one_worker_vacuums_at_a_time(app: App, database_url: str, conn: Any) -> None:
    await _churn(app, 300)
    db = await app.database()
    before = await _vacuum_count(conn, "tasks")
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as other:
        await other.execute("SELECT pg_advisory_lock(hashtext('conveyor.vacuumer'))")
        assert await Vacuumer(db, dead_rows=200).run_once() == []
        assert await _vacuum_count(conn, "tasks") == before
    # The lock went with the other session: now it vacuums.
    assert await Vacuumer(db, dead_rows=200).run_once() == ["task_attempts", "tasks"]
    assert await _vacuum_count(conn, "tasks") == before + 1
