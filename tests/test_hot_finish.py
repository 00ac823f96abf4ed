"""The finish of an attempt is a HOT update, and the token window is as exact as before
(migration 0017: the window reads attempt_usage and the running tasks, not an index of
task_attempts on finished_at)."""

from __future__ import annotations

from typing import Any

import pytest
from psycopg import sql

from conveyor import App, NewTask, queue
from conveyor.queue import Outcome
from conveyor.settings import Settings
from conveyor.sql import Queries
from tests.conftest import wait_for


async def _noop(task: Any) -> None:
    return None


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)
    app.agent("free")(_noop)
    app.agent("budget", max_tpm=10_000)(_noop)
    app.agent("capped", max_concurrent=50)(_noop)
    await app.database()
    yield app
    await app.aclose()


async def _attempt_updates(conn: Any) -> tuple[int, int]:
    """(updates, HOT updates) of task_attempts so far, as the server's statistics say once
    this connection's counts are flushed to them and its cached snapshot is cleared."""
    await conn.execute("SELECT pg_stat_force_next_flush()")
    await conn.execute("SELECT 1")  # the flush happens as the connection goes idle
    await conn.execute("SELECT pg_stat_clear_snapshot()")
    cur = await conn.execute(
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'task_attempts'"
    )
    row = await cur.fetchone()
    return int(row["n_tup_upd"]), int(row["n_tup_hot_upd"])


async def _usage_rows(conn: Any, agent: str) -> int:
    cur = await conn.execute("SELECT count(*) AS n FROM attempt_usage WHERE agent = %s", (agent,))
    return int((await cur.fetchone())["n"])


async def _tokens(conn: Any, agent: str) -> int:
    return int({r["name"]: r for r in await queue.agent_limits(conn)}[agent]["tokens"])


async def _retime(conn: Any, assignments: str) -> None:
    """Move the attempts in time, in task_attempts and in the window's copy alike."""
    for table in ("task_attempts", "attempt_usage"):
        await conn.execute(
            sql.SQL("UPDATE {} SET ").format(sql.Identifier(table)) + sql.SQL(assignments)
        )


@pytest.mark.parametrize(("agent", "usage_rows"), [("free", 0), ("capped", 20)])
async def test_the_finish_of_an_attempt_is_hot(
    app: App, conn: Any, agent: str, usage_rows: int
) -> None:
    """No index of task_attempts holds a column the finish writes: every attempt's end is a
    HOT update. An agent without limits whose attempts reserve nothing and report nothing
    (a plain queue's task) writes nothing else; a limited agent's attempts each leave their
    row for the window."""
    await app.enqueue_many_async([NewTask(agent, {}) for _ in range(20)])
    claimed = await queue.claim(conn, worker_id="w", agents=[agent], limit=20)
    assert len(claimed) == 20
    before = await _attempt_updates(conn)
    await queue.finish(
        conn, [Outcome(t.id, t.attempt, "succeeded", result="null") for t in claimed]
    )

    async def counted() -> tuple[int, int] | None:
        updates, hot = await _attempt_updates(conn)
        return (updates - before[0], hot - before[1]) if updates - before[0] >= 20 else None

    assert await wait_for(counted, what="the finish's statistics") == (20, 20)
    assert await _usage_rows(conn, agent) == usage_rows


@pytest.mark.parametrize("agent", ["free", "budget"])
async def test_an_ended_attempts_tokens_count_until_a_window_after_its_last_call(
    app: App, conn: Any, agent: str
) -> None:
    """Its tokens count, all of them, while its last call is less than a window ago (the
    agent's window: 60 s), whether the agent has limits or not (a 429 teaches an unlimited
    one a budget from them); then no more. Its start is long ago: that does not matter."""
    await app.enqueue_async(agent, {})
    (task,) = await queue.claim(conn, worker_id="w", agents=[agent], limit=1)
    await conn.execute("UPDATE task_attempts SET started_at = now() - interval '100 s'")
    await queue.finish(
        conn,
        [
            Outcome(
                task.id,
                task.attempt,
                "succeeded",
                result="null",
                input_tokens=700,
                output_tokens=50,
                since_last_call=58.0,
            )
        ],
    )
    assert await _tokens(conn, agent) == 750, "the last call was 58 s ago"
    await _retime(conn, "last_call_at = last_call_at - interval '1 s'")
    assert await _tokens(conn, agent) == 750, "59 s ago"
    await _retime(conn, "last_call_at = last_call_at - interval '2 s'")
    assert await _tokens(conn, agent) == 0, "61 s ago: out of the window"


@pytest.mark.parametrize(("agent", "estimate", "held"), [("free", None, 0), ("budget", 4000, 4000)])
async def test_a_late_outcome_brings_the_window_up_to_date(
    app: App, conn: Any, agent: str, estimate: int | None, held: int
) -> None:
    """An attempt the sweeper ended 'lost' holds its reservation (what it spent is unknown:
    none for an unlimited agent's task without an estimate, which leaves no row); its
    outcome, arriving late with the usage it spent, replaces it with that usage."""
    await app.enqueue_async(agent, {}, estimated_tokens=estimate)
    (task,) = await queue.claim(conn, worker_id="w", agents=[agent], limit=1)
    await conn.execute("UPDATE tasks SET lease_expires_at = now() - interval '1 s'")
    swept = await queue.sweep_expired(conn)
    assert swept is not None and len(swept) == 1
    assert await _tokens(conn, agent) == held
    assert await _usage_rows(conn, agent) == (1 if held else 0)
    (late,) = await queue.finish(
        conn,
        [
            Outcome(
                task.id,
                task.attempt,
                "succeeded",
                result="null",
                input_tokens=300,
                output_tokens=20,
            )
        ],
    )
    assert not late.applied
    assert await _tokens(conn, agent) == 320
    assert await _usage_rows(conn, agent) == 1


async def test_estimates_and_prune_read_and_delete_the_windows_rows(app: App, conn: Any) -> None:
    """The estimates' recent usage comes from the window's rows; prune deletes them with
    their attempts."""
    await app.enqueue_async("free", {"chars": 900})
    (task,) = await queue.claim(conn, worker_id="w", agents=["free"], limit=1)
    await queue.finish(
        conn,
        [
            Outcome(
                task.id, task.attempt, "succeeded", result="null", input_tokens=80, output_tokens=5
            )
        ],
    )
    rows = await (
        await conn.execute(
            Queries("estimates").attempts_tokens_recent, {"agent": "free", "limit": 50}
        )
    ).fetchall()
    assert [(r["chars"], r["actual"]) for r in rows] == [(900, 85)]
    await conn.execute("UPDATE tasks SET finished_at = now() - interval '2 days'")
    assert await queue.prune(conn, older_than=86_400) == 1
    assert await _usage_rows(conn, "free") == 0
