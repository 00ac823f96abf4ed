"""Outcomes the database refuses, and the worker's loops, under hostile input.

An agent's result or error can hold what PostgreSQL cannot store (a NUL character, in text
pulled out of a PDF; an integer out of range). Such an outcome fails its own attempt with a
clear error; it never takes the exchange, its batch, or the worker down. The lease renewer
and the listener outlive errors too. Faults the database raises are injected with real
triggers, fired once (a sequence is not rolled back with the failing statement).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from conveyor import App, NewTask, Task, TaskStatus
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running

NUL_REFUSED = "result contains a NUL character"


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    app.gate = asyncio.Event()  # type: ignore[attr-defined]

    @app.agent("double")
    async def double(task: Task) -> dict[str, int]:
        return {"value": task.payload["n"] * 2}

    @app.agent("nul_result")
    async def nul_result(task: Task) -> dict[str, str]:
        return {"text": "a\x00b"}

    @app.agent("nul_error", max_attempts=2, backoff_base=0.01)
    async def nul_error(task: Task) -> None:
        raise ValueError("page 3 reads 'x\x00y'")

    @app.agent("lookalike")
    async def lookalike(task: Task) -> dict[str, str]:
        return {"text": "a backslash, then u0000: \\u0000"}  # no NUL at all

    @app.agent("huge_usage")
    async def huge_usage(task: Task) -> str:
        task.report_usage(model="big", input_tokens=2**40)  # past the int column
        return "done"

    @app.agent("gated_nul", lease_seconds=2)
    async def gated_nul(task: Task) -> dict[str, str]:
        await app.gate.wait()  # type: ignore[attr-defined]
        return {"text": "\x00"}

    yield app
    await app.aclose()


async def _status(app: App, task_id: int) -> TaskStatus:
    return (await app.get_task_async(task_id)).status


async def _ended(app: App, ids: list[int]) -> bool:
    ended = {TaskStatus.COMPLETED, TaskStatus.FAILED}
    return all([await _status(app, i) in ended for i in ids])


async def test_a_nul_in_a_result_or_an_error_fails_only_its_own_attempt(app: App) -> None:
    bad_results = [await app.enqueue_async("nul_result", {}) for _ in range(2)]
    bad_error = await app.enqueue_async("nul_error", {})
    lookalike = await app.enqueue_async("lookalike", {})
    good = [await app.enqueue_async("double", {"n": n}) for n in range(6)]
    async with Running(Worker(app, concurrency=4)) as worker:
        await wait_for(
            lambda: _ended(app, [*bad_results, bad_error, lookalike, *good]),
            what="every task ended",
        )
        # The worker is still whole: it claims and completes what comes next.
        later = await app.enqueue_async("double", {"n": 21})
        await wait_for(lambda: _ended(app, [later]), what="a task after the bad ones")
        assert worker.restarts == 0
    for task_id in bad_results:
        task = await app.get_task_async(task_id)
        assert task.status == TaskStatus.FAILED and NUL_REFUSED in (task.error or "")
        assert [a.status for a in task.attempt_history] == ["failed"], "not retried"
    failed = await app.get_task_async(bad_error)
    assert failed.status == TaskStatus.FAILED
    assert [a.status for a in failed.attempt_history] == ["failed", "failed"], "retried"
    assert "page 3 reads 'x\\x00y'" in (failed.error or ""), "the message kept, NUL shown"
    assert (await app.get_task_async(lookalike)).result == {
        "text": "a backslash, then u0000: \\u0000"
    }, "text that only looks like a NUL escape is stored as it is"
    for n, task_id in enumerate(good):
        assert (await app.get_task_async(task_id)).result == {"value": 2 * n}
    assert (await app.get_task_async(later)).result == {"value": 42}


async def test_an_outcome_the_database_refuses_fails_its_attempt_and_the_rest_go_on(
    app: App, conn: Any
) -> None:
    """queue.storable() cannot foresee everything: 2**40 tokens do not fit the column. The
    batch is then written one outcome at a time, and the one refused ends its attempt as
    failed, with the database's reason."""
    refused = await app.enqueue_async("huge_usage", {})
    good = [await app.enqueue_async("double", {"n": n}) for n in range(4)]
    async with Running(Worker(app, concurrency=4)) as worker:
        await wait_for(lambda: _ended(app, [refused, *good]), what="every task ended")
        later = await app.enqueue_async("double", {"n": 1})
        await wait_for(lambda: _ended(app, [later]), what="a task after the refused one")
        assert worker.restarts == 0
    task = await app.get_task_async(refused)
    assert task.status == TaskStatus.FAILED
    assert "could not be stored" in (task.error or "") and "out of range" in (task.error or "")
    assert [a.status for a in task.attempt_history] == ["failed"]
    assert all([await _status(app, i) == TaskStatus.COMPLETED for i in [*good, later]])
    held = await (
        await conn.execute("SELECT count(*) AS n FROM tasks WHERE status = 'processing'")
    ).fetchone()
    assert held["n"] == 0


async def test_a_worker_stopping_writes_an_unstorable_outcome_before_it_exits(app: App) -> None:
    """docs/guarantees.md: the worker writes every outcome before it exits. An outcome
    that killed its lane used to stay held for ever: the drain never ended."""
    task_id = await app.enqueue_async("gated_nul", {})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    await asyncio.wait_for(worker.wait_started(), 10)
    await wait_for(lambda: task_id in worker.slots.running, what="the agent running")
    worker.stop()
    app.gate.set()  # type: ignore[attr-defined]
    await asyncio.wait_for(run, 20)
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.FAILED and NUL_REFUSED in (task.error or "")


async def test_a_hostile_notify_does_not_deafen_the_worker(settings: Settings, conn: Any) -> None:
    """Any database user may NOTIFY the channel. A payload the handler choked on ended the
    listener, silently: the worker then only polled. With a 30 s poll, a task enqueued
    after it must still start at once, woken by its NOTIFY."""
    app = App(settings=dataclasses.replace(settings, poll_interval=30.0))

    @app.agent("double")
    async def double(task: Task) -> int:
        return int(2 * task.payload["n"])

    try:
        async with Running(Worker(app, concurrency=2)) as worker:
            await wait_for(lambda: not worker.exchange.work_maybe, what="the first claim, empty")
            for hostile in ('{"status": "completed", "ids": 5}', '{"status": "x", "ids": {}}'):
                await conn.execute("SELECT pg_notify('conveyor', %s)", (hostile,))
            task_id = await app.enqueue_async("double", {"n": 2})
            await wait_for(lambda: _ended(app, [task_id]), timeout=5, what="woken by NOTIFY")
            assert worker.restarts == 0
        assert (await app.get_task_async(task_id)).result == 4
    finally:
        await app.aclose()


async def test_lease_renewal_outlives_an_error_it_did_not_expect(app: App, conn: Any) -> None:
    """A renewal that failed with anything but a connection error ended the renewer for
    good: the leases of every running agent then ran out under it."""
    await conn.execute("""
        CREATE SEQUENCE renew_faults;
        CREATE FUNCTION fail_first_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF nextval('renew_faults') = 1 THEN
                RAISE EXCEPTION 'injected: the first renewal fails';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER fail_first_renewal BEFORE UPDATE OF lease_expires_at ON tasks
        FOR EACH ROW WHEN (OLD.status = 'processing' AND NEW.status = 'processing')
        EXECUTE FUNCTION fail_first_renewal();
    """)
    task_id = await app.enqueue_async("gated_nul", {})  # lease 2 s: renewed every 0.5 s
    async with Running(Worker(app, concurrency=1)):
        await wait_for(lambda: _faults(conn, 1), what="the first renewal failing")
        first = await _lease(conn, task_id)
        await wait_for(lambda: _lease_after(conn, task_id, first), timeout=5, what="renewals again")
        app.gate.set()  # type: ignore[attr-defined]
        await wait_for(lambda: _ended(app, [task_id]), what="the attempt ending")
    assert len((await app.get_task_async(task_id)).attempt_history) == 1, "never lost"


async def _faults(conn: Any, n: int) -> bool:
    row = await (await conn.execute("SELECT last_value, is_called FROM renew_faults")).fetchone()
    return bool(row["is_called"] and row["last_value"] >= n)


async def _lease(conn: Any, task_id: int) -> Any:
    cur = await conn.execute("SELECT lease_expires_at FROM tasks WHERE id = %s", (task_id,))
    return (await cur.fetchone())["lease_expires_at"]


async def _lease_after(conn: Any, task_id: int, before: Any) -> bool:
    """Renewed: the same attempt (not one claimed again after a sweep) with a later lease."""
    cur = await conn.execute(
        "SELECT lease_expires_at, attempts FROM tasks WHERE id = %s", (task_id,)
    )
    row = await cur.fetchone()
    return (
        row["attempts"] == 1
        and row["lease_expires_at"] is not None
        and (row["lease_expires_at"] > before)
    )


async def test_a_real_worker_process_survives_nul_outcomes_and_exits_cleanly(
    settings: Settings, database_url: str, tmp_path: Any, conn: Any
) -> None:
    """The reported case, end to end: `conveyor worker` gets NUL results and errors among
    good tasks, in the same batches, keeps claiming, and on SIGTERM exits 0 with every
    task ended."""
    from tests.hostile_app import app as hostile
    from tests.processes import WorkerProcess

    producer = App(settings=settings)
    for spec in hostile.agents.values():
        assert spec.fn is not None
        producer.agent(spec.name, max_attempts=spec.max_attempts)(spec.fn)
    try:
        ids = await producer.enqueue_many_async(
            [NewTask(("nul_result", "nul_error", "fine", "fine")[n % 4], {}) for n in range(40)]
        )
        worker = WorkerProcess(
            database_url, app="tests.hostile_app:app", log_path=tmp_path / "worker.log"
        )
        try:
            await wait_for(lambda: _ended(producer, ids), timeout=30, what="every task ended")
            more = await producer.enqueue_many_async([NewTask("fine", {}) for _ in range(5)])
            await wait_for(lambda: _ended(producer, more), timeout=30, what="still claiming")
            assert worker.terminate(timeout=30) == 0, worker.output()
        finally:
            worker.close()
        cur = await conn.execute("SELECT agent, status, count(*) AS n FROM tasks GROUP BY 1, 2")
        counts = {(r["agent"], r["status"]): r["n"] for r in await cur.fetchall()}
        assert counts == {
            ("nul_result", "failed"): 10,
            ("nul_error", "failed"): 10,
            ("fine", "completed"): 25,
        }
        error = (await producer.get_task_async(ids[1])).error or ""
        assert "cannot parse 'x\\x00y'" in error
        assert "restarting" not in worker.output(), "no loop died on the way"
    finally:
        await producer.aclose()
