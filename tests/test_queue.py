"""The queue's statements on their own: claim order, competing claims, fencing, sweeping,
cancel, retry, prune. Several connections compete for real; leases are backdated in SQL."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, InvalidTransition, NewTask, TaskNotFound, TaskStatus, queue
from conveyor.queue import Outcome
from conveyor.settings import Settings


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)

    @app.agent("a", max_attempts=2)
    async def a(task: Any) -> None: ...

    @app.agent("other")
    async def other(task: Any) -> None: ...

    await app.database()
    yield app
    await app.aclose()


async def claim(
    conn: Any, limit: int = 10, worker: str = "w1", agents: tuple[str, ...] = ("a",)
) -> list[queue.ClaimedTask]:
    return await queue.claim(conn, worker_id=worker, agents=list(agents), limit=limit)


async def test_claim_takes_priority_first_then_fifo(app: App, conn: Any) -> None:
    low = await app.enqueue_many_async([NewTask("a", {"n": i}, priority=0) for i in range(3)])
    high = await app.enqueue_many_async([NewTask("a", {"n": i}, priority=9) for i in range(3)])
    mid = await app.enqueue_async("a", {}, priority=5)
    await app.enqueue_async("other", {}, priority=100)
    claimed = [t.id for t in await claim(conn, limit=100)]
    assert claimed == [*high, mid, *low]


async def test_claim_marks_processing_with_a_lease_and_an_attempt_row(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {"x": 1})
    (t,) = await claim(conn, worker="worker-7")
    assert (t.id, t.attempt, t.payload) == (task_id, 1, {"x": 1})
    row = await (
        await conn.execute(
            "SELECT status, locked_by, attempts, lease_expires_at - now() AS left,"
            " started_at FROM tasks WHERE id = %s",
            (task_id,),
        )
    ).fetchone()
    assert row["status"] == "processing" and row["locked_by"] == "worker-7"
    assert row["attempts"] == 1
    assert 55 < row["left"].total_seconds() <= 60, "lease from the agent, on the db clock"
    attempt = await (
        await conn.execute(
            "SELECT id, attempt, status, worker_id FROM task_attempts WHERE task_id = %s",
            (task_id,),
        )
    ).fetchone()
    assert attempt == {
        "id": t.attempt_id,
        "attempt": 1,
        "status": "running",
        "worker_id": "worker-7",
    }


async def test_delayed_tasks_wait_for_run_after(app: App, conn: Any) -> None:
    later = await app.enqueue_async("a", {}, run_after=3600, priority=10)
    now = await app.enqueue_async("a", {})
    assert [t.id for t in await claim(conn)] == [now]
    await conn.execute(
        "UPDATE tasks SET run_after = now() - interval '1 s' WHERE id = %s", (later,)
    )
    assert [t.id for t in await claim(conn)] == [later]


async def test_competing_claims_on_separate_connections_never_share_a_task(
    app: App, database_url: str
) -> None:
    await app.enqueue_many_async([NewTask("a", {}) for _ in range(2000)])
    conns = [
        await psycopg.AsyncConnection.connect(database_url, autocommit=True, row_factory=dict_row)
        for _ in range(8)
    ]

    async def drain(c: Any, name: str) -> list[int]:
        got: list[int] = []
        while batch := await claim(c, limit=25, worker=name):
            got += [t.id for t in batch]
        return got

    try:
        results = await asyncio.gather(*(drain(c, f"w{i}") for i, c in enumerate(conns)))
    finally:
        for c in conns:
            await c.close()
    every = [i for r in results for i in r]
    assert len(every) == 2000 and len(set(every)) == 2000
    assert sum(1 for r in results if r) >= 2, "the claims really competed"


async def test_finish_completes_once_and_fences_a_repeat(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    done = Outcome(
        t.id,
        t.attempt,
        "succeeded",
        result='{"ok": true}',
        model="m",
        input_tokens=10,
        output_tokens=5,
    )
    assert await queue.finish(conn, [done]) == [queue.FinishResult(task_id, 1, True)]
    assert await queue.finish(conn, [done]) == [], "a repeated write changes nothing"
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.COMPLETED and task.result == {"ok": True}
    (attempt,) = task.attempt_history
    assert (attempt.status, attempt.input_tokens, attempt.output_tokens) == ("succeeded", 10, 5)
    assert attempt.finished_at is not None and attempt.finished_at >= attempt.started_at


async def test_failure_retries_with_delay_then_fails_when_exhausted(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})  # agent a: max_attempts=2
    (t,) = await claim(conn)
    await queue.finish(conn, [Outcome(t.id, 1, "failed", error="boom 1", retry_delay=30)])
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED and task.error == "boom 1"
    finished_at = task.attempt_history[0].finished_at
    assert finished_at is not None
    assert 25 < (task.run_after - finished_at).total_seconds() < 35
    assert await claim(conn) == [], "not before its backoff"
    await conn.execute("UPDATE tasks SET run_after = now() WHERE id = %s", (task_id,))
    (t,) = await claim(conn)
    assert t.attempt == 2
    await queue.finish(conn, [Outcome(t.id, 2, "failed", error="boom 2", retry_delay=30)])
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.FAILED and task.finished_at is not None
    assert [a.status for a in task.attempt_history] == ["failed", "failed"]


async def test_throttled_and_released_attempts_do_not_spend_a_retry(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})  # max_attempts=2
    for outcome in ("throttled", "released", "throttled"):
        (t,) = await claim(conn)
        await queue.finish(conn, [Outcome(t.id, t.attempt, outcome, retry_delay=0)])
    (t,) = await claim(conn)
    await queue.finish(conn, [Outcome(t.id, t.attempt, "failed", error="x", retry_delay=0)])
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED, "one real failure of two allowed"
    assert [a.status for a in task.attempt_history] == ["throttled", "lost", "throttled", "failed"]


async def test_expired_lease_is_swept_and_the_late_result_is_rejected(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})
    (stale,) = await claim(conn, worker="stale")
    await conn.execute(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 s' WHERE id = %s", (task_id,)
    )
    assert await queue.sweep_expired(conn) == [(task_id, TaskStatus.ENQUEUED)]
    (fresh,) = await claim(conn, worker="fresh")
    assert fresh.attempt == 2
    # The stale worker comes back with a result: fenced off, recorded on its own attempt.
    late = Outcome(stale.id, stale.attempt, "succeeded", result='"late"', input_tokens=7)
    assert await queue.finish(conn, [late]) == [queue.FinishResult(task_id, 1, False)]
    assert await queue.renew_leases(conn, {task_id: stale.claim}) == set()
    await queue.finish(conn, [Outcome(fresh.id, 2, "succeeded", result='"fresh"')])
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.COMPLETED and task.result == "fresh"
    first, second = task.attempt_history
    assert (first.status, first.late_outcome, first.input_tokens) == ("lost", "succeeded", 7)
    assert first.worker_id == "stale" and "stopped renewing" in (first.error or "")
    assert second.status == "succeeded"


async def test_sweep_fails_a_task_with_no_retries_left(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {}, max_attempts=1)
    await claim(conn)
    await conn.execute("UPDATE tasks SET lease_expires_at = now() - interval '1 s'")
    assert await queue.sweep_expired(conn) == [(task_id, TaskStatus.FAILED)]


async def test_only_one_sweeper_runs_at_a_time(app: App, database_url: str, conn: Any) -> None:
    other = await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    )
    async with other, other.transaction():
        await other.execute("SELECT pg_advisory_xact_lock(hashtext('conveyor.sweeper'))")
        assert await queue.sweep_expired(conn) is None


async def test_renewal_extends_the_lease_on_the_database_clock(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    await conn.execute(
        "UPDATE tasks SET lease_expires_at = now() + interval '1 s' WHERE id = %s", (task_id,)
    )
    assert await queue.renew_leases(conn, {task_id: t.claim}) == {task_id}
    row = await (
        await conn.execute(
            "SELECT lease_expires_at - now() AS left FROM tasks WHERE id = %s", (task_id,)
        )
    ).fetchone()
    assert row["left"].total_seconds() > 55


async def test_cancel_enqueued_and_running_tasks_fences_the_worker(app: App, conn: Any) -> None:
    waiting = await app.enqueue_async("a", {}, priority=-1)
    running = await app.enqueue_async("a", {})
    (t,) = await claim(conn, limit=1)
    assert (await app.cancel_async(waiting)).status == TaskStatus.CANCELLED
    cancelled = await app.cancel_async(running)
    assert cancelled.status == TaskStatus.CANCELLED
    assert cancelled.attempt_history[0].status == "cancelled"
    assert await queue.finish(conn, [Outcome(t.id, 1, "succeeded", result="1")]) == [
        queue.FinishResult(running, 1, False)
    ]
    assert (await app.get_task_async(running)).status == TaskStatus.CANCELLED
    assert (await app.cancel_async(running)).status == TaskStatus.CANCELLED, "idempotent"


async def test_cancel_or_retry_in_the_wrong_state_says_why(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {})
    with pytest.raises(InvalidTransition, match="only failed or cancelled"):
        await app.retry_async(task_id)
    (t,) = await claim(conn)
    await queue.finish(conn, [Outcome(t.id, 1, "succeeded", result="1")])
    with pytest.raises(InvalidTransition, match="only enqueued or processing"):
        await app.cancel_async(task_id)
    with pytest.raises(TaskNotFound):
        await app.get_task_async(10**12)
    with pytest.raises(TaskNotFound):
        await app.cancel_async("nope")  # type: ignore[arg-type]


async def test_retry_gives_a_failed_task_a_fresh_allowance(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("a", {}, max_attempts=1)
    (t,) = await claim(conn)
    await queue.finish(conn, [Outcome(t.id, 1, "failed", error="bad", retry_delay=0)])
    assert (await app.get_task_async(task_id)).status == TaskStatus.FAILED
    retried = await app.retry_async(task_id)
    assert retried.status == TaskStatus.ENQUEUED and retried.error is None
    (t,) = await claim(conn)
    assert t.attempt == 2 and t.charged_attempts == 1


async def test_prune_deletes_old_finished_tasks_and_their_attempts(app: App, conn: Any) -> None:
    ids = await app.enqueue_many_async([NewTask("a", {}) for _ in range(30)])
    claimed = await claim(conn, limit=25)
    await queue.finish(conn, [Outcome(t.id, 1, "succeeded", result="1") for t in claimed])
    old = [t.id for t in claimed[:20]]
    await conn.execute(
        "UPDATE tasks SET finished_at = now() - interval '31 days' WHERE id = ANY(%s)", (old,)
    )
    assert await queue.prune(conn, older_than=30 * 86400, batch=7) == 20
    cur = await conn.execute("SELECT id FROM tasks ORDER BY id")
    assert [r["id"] for r in await cur.fetchall()] == [i for i in ids if i not in old]
    cur = await conn.execute(
        "SELECT count(*) AS n FROM task_attempts WHERE task_id = ANY(%s)", (old,)
    )
    assert (await cur.fetchone())["n"] == 0


async def _attempt_times(conn: Any, task_id: int, attempt: int) -> Any:
    cur = await conn.execute(
        "SELECT started_at, finished_at, status, late_outcome FROM task_attempts"
        " WHERE task_id = %s AND attempt = %s",
        (task_id, attempt),
    )
    return await cur.fetchone()


async def test_a_repeated_late_outcome_moves_nothing(app: App, conn: Any) -> None:
    """The start of an attempt moves by the time its task waited in the worker's buffer,
    once, by the outcome that ends it. A late outcome repeated three times used to move it
    100 s each time, past its end."""
    task_id = await app.enqueue_async("a", {})
    (stale,) = await claim(conn, worker="stale")
    await conn.execute(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 s' WHERE id = %s", (task_id,)
    )
    assert await queue.sweep_expired(conn) == [(task_id, TaskStatus.ENQUEUED)]
    swept = await _attempt_times(conn, task_id, 1)
    late = Outcome(stale.id, stale.attempt, "succeeded", result='"late"', started_after=100.0)
    for _ in range(3):
        assert await queue.finish(conn, [late]) == [queue.FinishResult(task_id, 1, False)]
    after = await _attempt_times(conn, task_id, 1)
    assert (after["started_at"], after["finished_at"]) == (
        swept["started_at"],
        swept["finished_at"],
    )
    assert (after["status"], after["late_outcome"]) == ("lost", "succeeded")
    # The outcome that does end its attempt still moves the start, by exactly its wait.
    (fresh,) = await claim(conn, worker="fresh")
    claimed = await _attempt_times(conn, task_id, 2)
    done = Outcome(fresh.id, fresh.attempt, "succeeded", result="1", started_after=0.5)
    assert await queue.finish(conn, [done]) == [queue.FinishResult(task_id, 2, True)]
    ended = await _attempt_times(conn, task_id, 2)
    assert (ended["started_at"] - claimed["started_at"]).total_seconds() == 0.5


async def test_a_repeated_release_is_a_repeat_not_a_late_outcome(app: App, conn: Any) -> None:
    """A worker that did not hear the commit of its release writes it again: that is the
    same outcome, not one that came after someone else ended the attempt."""
    from conveyor.worker import RELEASED

    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    released = Outcome(t.id, t.attempt, "released", error=RELEASED)
    assert await queue.finish(conn, [released]) == [queue.FinishResult(task_id, 1, True)]
    assert await queue.finish(conn, [released]) == [], "a repeat: nothing to say"
    row = await _attempt_times(conn, task_id, 1)
    assert (row["status"], row["late_outcome"]) == ("lost", None)
    # A release that arrives after a sweep ended the attempt is late, and says so.
    (t,) = await claim(conn)
    await conn.execute(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 s' WHERE id = %s", (task_id,)
    )
    await queue.sweep_expired(conn)
    late = Outcome(t.id, t.attempt, "released", error=RELEASED)
    assert await queue.finish(conn, [late]) == [queue.FinishResult(task_id, 2, False)]
    assert (await _attempt_times(conn, task_id, 2))["late_outcome"] == "released"


async def _limited_agents(conn: Any, names: list[str]) -> None:
    """Limited agents whose rows lie in the table against name order (an update moves a
    row to the end of its page), so that a statement that locks them in the order it
    meets them does not lock them in name order."""
    await queue.register_agents(
        conn, [queue.AgentRegistration(n, max_concurrent=100) for n in names]
    )
    for name in sorted(names):
        await conn.execute("UPDATE agents SET last_seen_at = now() WHERE name = %s", (name,))
    await conn.execute("ANALYZE agents")


async def _connect(database_url: str) -> Any:
    return await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    )


async def test_throttle_reports_and_claims_on_many_connections_never_deadlock(
    app: App, database_url: str, conn: Any
) -> None:
    """Claims of several limited agents and reports that they were throttled, at once, on
    separate connections: both lock agent rows, and must do it in the same order."""
    names = ["t_a", "t_b", "t_c", "t_d"]
    await _limited_agents(conn, names)

    async def claims(c: Any) -> None:
        for _ in range(40):
            await queue.claim(c, worker_id="w", agents=names, limit=4)

    async def reports(c: Any) -> None:
        for _ in range(40):
            # Retry-After 0: paused until now, so the claims keep locking the rows too.
            await queue.report_throttled(c, dict.fromkeys(names, 0.0))

    connections = [await _connect(database_url) for _ in range(6)]
    try:
        await asyncio.gather(
            *((claims if n % 2 else reports)(c) for n, c in enumerate(connections))
        )
    finally:
        for c in connections:
            await c.close()


# One way to end an attempt: every outcome, whoever reports it, through one SQL function.

ENDINGS = [
    # outcome, retry_delay, the attempt's status, the task's status, retries spent
    ("succeeded", None, "succeeded", "completed", 1),
    ("failed", 0.0, "failed", "enqueued", 1),
    ("failed", None, "failed", "failed", 1),
    ("throttled", None, "throttled", "enqueued", 0),
    ("released", None, "lost", "enqueued", 0),
    ("cancelled", None, "cancelled", "cancelled", 1),
    ("lost", 0.0, "lost", "enqueued", 1),
    # No children to wait for (docs/children.md; tests/test_children.py spawns some).
    ("spawned", None, "spawned", "enqueued", 1),
]


def test_the_table_of_endings_covers_every_outcome() -> None:
    assert {e[0] for e in ENDINGS} == set(queue.AttemptOutcome) == queue.OUTCOMES


@pytest.mark.parametrize(("outcome", "delay", "attempt_status", "task_status", "spent"), ENDINGS)
async def test_each_outcome_ends_its_attempt_as_documented(
    app: App,
    conn: Any,
    outcome: str,
    delay: float | None,
    attempt_status: str,
    task_status: str,
    spent: int,
) -> None:
    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    ended = Outcome(t.id, t.attempt, outcome, result="1", error=f"{outcome}!", retry_delay=delay)
    assert await queue.finish(conn, [ended]) == [queue.FinishResult(task_id, 1, True)]
    row = await (
        await conn.execute(
            "SELECT t.status, t.attempts - t.free_attempts AS spent, t.locked_by, t.result,"
            " a.status AS attempt_status, a.finished_at IS NOT NULL AS ended"
            " FROM tasks t JOIN task_attempts a ON a.task_id = t.id WHERE t.id = %s",
            (task_id,),
        )
    ).fetchone()
    assert (row["status"], row["attempt_status"], row["spent"]) == (
        task_status,
        attempt_status,
        spent,
    )
    assert row["ended"] and row["locked_by"] is None
    assert row["result"] == (1 if outcome == "succeeded" else None)


async def test_an_outcome_nobody_knows_is_refused_before_anything_is_written(
    app: App, conn: Any
) -> None:
    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    good = Outcome(t.id, t.attempt, "succeeded", result="1")
    with pytest.raises(ValueError, match=r"unknown outcome \['done'\]"):
        await queue.finish(conn, [good, Outcome(t.id, t.attempt, "done")])
    assert (await queue.get_task(conn, task_id)).status == TaskStatus.PROCESSING


async def test_the_sweep_spends_a_retry_and_the_retry_rule_counts_free_attempts(
    app: App, conn: Any
) -> None:
    """Agent "a" has max_attempts=2. A throttled attempt is free, a swept one is not: after
    a throttled first attempt, the sweep retries the second and fails the third (the second
    that counts)."""
    task_id = await app.enqueue_async("a", {})
    (t,) = await claim(conn)
    await queue.finish(conn, [Outcome(t.id, t.attempt, "throttled")])
    for expected in (TaskStatus.ENQUEUED, TaskStatus.FAILED):
        (t,) = await claim(conn)
        await conn.execute(
            "UPDATE tasks SET lease_expires_at = now() - interval '1 s' WHERE id = %s",
            (task_id,),
        )
        assert await queue.sweep_expired(conn) == [(task_id, expected)]
    task = await queue.get_task(conn, task_id)
    assert [a.status for a in task.attempt_history] == ["throttled", "lost", "lost"]
    assert task.error == "attempt 3 lost: worker w1 stopped renewing its lease"


def test_no_statement_but_the_one_function_ends_an_attempt() -> None:
    """The retry rule and the end of an attempt are written once, in attempts.sql; the
    queue's statements call it instead of restating them."""
    from conveyor.sql import _load, function_files

    statements = _load("queue")
    for name, text in statements.items():
        assert "free_attempts <" not in text, name
        assert "UPDATE task_attempts" not in text or name == "attempts_set_run_id", name
    for name in ("attempts_finish", "tasks_sweep", "tasks_cancel"):
        assert "conveyor_end_attempts(" in statements[name], name
    others = {n: t for n, t in function_files().items() if n != "attempts"}
    assert not any("free_attempts <" in t for t in others.values())
    assert function_files()["attempts"].count("attempts - free_attempts < max_attempts") == 1


async def test_an_outcome_carries_a_run_id_written_once(app: App, conn: Any) -> None:
    """An executor that learns where the attempt ran only at its end (a Ray task's node)
    sends the run id with the outcome; one recorded while it ran is kept."""
    ended_with, recorded = await app.enqueue_many_async([NewTask("a", {}), NewTask("a", {})])
    first, second = sorted(await claim(conn), key=lambda t: t.id)
    await queue.set_run_id(conn, second.attempt_id, "pid:17")
    await queue.finish(
        conn,
        [
            Outcome(first.id, 1, "succeeded", result="1", run_id="ray:ab@n1"),
            Outcome(second.id, 1, "succeeded", result="2", run_id="ray:cd@n2"),
        ],
    )
    tasks = [await app.get_task_async(t) for t in (ended_with, recorded)]
    assert [t.attempt_history[0].run_id for t in tasks] == ["ray:ab@n1", "pid:17"]
    assert (first.id, second.id) == (ended_with, recorded)
