"""Several real worker processes competing for real, and real SIGKILLs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conveyor import App, NewTask, TaskStatus
from conveyor.settings import Settings
from tests.conftest import wait_for
from tests.processes import WorkerProcess


@pytest.fixture
def workers(database_url: str, tmp_path: Path) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(concurrency: int = 8, **kw: Any) -> WorkerProcess:
        w = WorkerProcess(
            database_url,
            concurrency=concurrency,
            log_path=tmp_path / f"worker-{len(started)}.log",
            **kw,
        )
        started.append(w)
        return w

    yield start
    for w in started:
        w.close()


@pytest.fixture
async def producer(settings: Settings) -> Any:
    # Registers the agents the way a worker would, so enqueues are accepted at once.
    from tests.worker_app import app as worker_app

    app = App(settings=settings)
    for spec in worker_app.agents.values():
        assert spec.fn is not None
        app.agent(spec.name, lease_seconds=spec.lease_seconds)(spec.fn)
    yield app
    await app.aclose()


async def count(conn: Any, sql: str, *params: Any) -> int:
    cur = await conn.execute(sql, params)
    return int((await cur.fetchone())["n"])


async def completed(conn: Any) -> int:
    return await count(conn, "SELECT count(*) AS n FROM tasks WHERE status = 'completed'")


async def test_several_processes_complete_thousands_of_tasks_exactly_once(
    workers: Any, producer: App, conn: Any
) -> None:
    await producer.enqueue_many_async([NewTask("noop", {"i": i}) for i in range(3000)])
    procs = [workers(concurrency=8) for _ in range(3)]
    await wait_for(lambda: _equals(completed(conn), 3000), timeout=90, what="3000 completions")
    # Exactly once: one attempt per task, and it succeeded; no task ran twice.
    assert await count(conn, "SELECT count(*) AS n FROM task_attempts") == 3000
    assert (
        await count(conn, "SELECT count(*) AS n FROM task_attempts WHERE status = 'succeeded'")
        == 3000
    )
    cur = await conn.execute("SELECT DISTINCT result->>'pid' AS pid FROM tasks")
    pids = {int(r["pid"]) for r in await cur.fetchall()}
    assert pids <= {p.pid for p in procs}
    assert len(pids) >= 2, "the processes really competed for the tasks"
    for p in procs:
        assert p.terminate() == 0


async def _equals(value: Any, expected: int) -> bool:
    return bool(await value == expected)


async def test_priority_order_holds_across_processes(
    workers: Any, producer: App, conn: Any
) -> None:
    low = await producer.enqueue_many_async([NewTask("noop", {}, priority=0) for _ in range(200)])
    high = await producer.enqueue_many_async([NewTask("noop", {}, priority=5) for _ in range(200)])
    for _ in range(2):
        workers(concurrency=4)
    await wait_for(lambda: _equals(completed(conn), 400), timeout=60, what="completions")
    cur = await conn.execute(
        "SELECT max(started_at) FILTER (WHERE id = ANY(%s)) AS last_high,"
        "       min(started_at) FILTER (WHERE id = ANY(%s)) AS first_low FROM tasks",
        (high, low),
    )
    row = await cur.fetchone()
    # Claims of several workers overlap, so a few low tasks may start while the last high
    # ones run; but no low task may start before most of the high ones have.
    cur = await conn.execute(
        "SELECT count(*) AS n FROM tasks WHERE id = ANY(%s) AND started_at > %s",
        (high, row["first_low"]),
    )
    assert (await cur.fetchone())["n"] <= 8 * 2, "priority order broke"


async def test_a_sigkilled_worker_s_task_is_recovered_by_another(
    workers: Any, producer: App, conn: Any
) -> None:
    task_id = await producer.enqueue_async("slow_first", {})  # lease 2 s
    doomed = workers(concurrency=1)
    await wait_for(
        lambda: _locked_by(conn, task_id, doomed.pid),
        timeout=30,
        what="the first worker to claim the task",
    )
    doomed.kill()
    rescuer = workers(concurrency=1)
    task = await wait_for(
        lambda: _finished(producer, task_id), timeout=30, what="the task recovered"
    )
    assert task.status == TaskStatus.COMPLETED
    assert task.result == {"pid": rescuer.pid, "attempt": 2}
    first, second = task.attempt_history
    assert first.status == "lost" and str(doomed.pid) in (first.worker_id or "")
    assert second.status == "succeeded" and str(rescuer.pid) in (second.worker_id or "")
    # Back at work within lease (2 s) + 5 s of the kill.
    assert first.finished_at is not None
    assert (second.started_at - first.started_at).total_seconds() < 2 + 5 + 1


async def _locked_by(conn: Any, task_id: int, pid: int) -> bool:
    cur = await conn.execute("SELECT locked_by FROM tasks WHERE id = %s", (task_id,))
    row = await cur.fetchone()
    return bool(row["locked_by"] and f":{pid}:" in row["locked_by"])


async def _finished(app: App, task_id: int) -> Any:
    task = await app.get_task_async(task_id)
    return task if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) else None


async def test_sigterm_drains_a_worker_gracefully(workers: Any, producer: App, conn: Any) -> None:
    task_id = await producer.enqueue_async("sleepy", {"seconds": 1.0})
    w = workers(concurrency=2)
    await wait_for(lambda: _locked_by(conn, task_id, w.pid), timeout=30, what="a claim")
    assert await asyncio.to_thread(w.terminate) == 0
    task = await producer.get_task_async(task_id)
    assert task.status == TaskStatus.COMPLETED, "the running task was allowed to finish"
    assert "worker stopped" in w.output()


async def test_sigterm_past_the_deadline_hands_the_task_back(
    workers: Any, producer: App, conn: Any
) -> None:
    task_id = await producer.enqueue_async("slow_first", {})
    w = workers(concurrency=1, env={"CONVEYOR_SHUTDOWN_TIMEOUT": "0.2"})
    await wait_for(lambda: _locked_by(conn, task_id, w.pid), timeout=30, what="a claim")
    assert await asyncio.to_thread(w.terminate) == 0
    task = await producer.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED and task.lease_expires_at is None
    assert task.attempt_history[0].status == "lost"
