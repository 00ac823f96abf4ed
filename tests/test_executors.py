"""The executor protocol (conveyor.executors.base), through an executor of the test's own
declared with app.external(): what a Ray or other remote executor relies on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conveyor import App, TaskStatus
from conveyor.errors import PermanentFailure
from conveyor.executors import Attempt, Ended, JobFailed, Succeeded, as_executor
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for


class Remote:
    """Runs each attempt "elsewhere": a run id, usage, its own compute rate; then waits
    for the test's go before it ends the way the payload says."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.waiting: list[int] = []  # task ids whose run waits for the go
        self.stopped: list[int] = []  # ... and whose run was cancelled
        self.closed = False

    async def run(self, attempt: Attempt) -> Ended:
        task = attempt.task
        await attempt.started(f"remote-{task.id}-{task.attempt}")
        task.report_usage(model="remote-model", input_tokens=40, output_tokens=2)
        attempt.compute_usd_per_hour = 3600.0  # one dollar a second: its resources' rate
        self.waiting.append(task.id)
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            self.stopped.append(task.id)
            raise
        ending = task.payload.get("end", "ok")
        if ending == "job_failed" and task.attempt == 1:
            raise JobFailed("the remote task died: out of memory")
        if ending == "permanent":
            raise PermanentFailure("not a document")
        return Succeeded({"ran": task.attempt})

    async def close(self) -> None:
        self.closed = True


async def _attempt_row(conn: Any, task_id: int) -> Any:
    cur = await conn.execute(
        "SELECT run_id, lease_expires_at FROM task_attempts a JOIN tasks t ON t.id = a.task_id"
        " WHERE task_id = %s ORDER BY attempt DESC LIMIT 1",
        (task_id,),
    )
    return await cur.fetchone()


async def _finished(app: App, task_id: int) -> Any:
    task = await app.get_task_async(task_id)
    return task if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) else None


async def test_an_executor_of_its_own_runs_with_the_lease_renewed_and_its_outcome_written(
    settings: Settings, conn: Any
) -> None:
    app = App(settings=settings)
    remote = Remote()
    app.external("remote", remote, lease_seconds=2, compute_usd_per_hour=0.0)
    task_id = await app.enqueue_async("remote", {})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:

        async def run_id_recorded() -> Any:
            row = await _attempt_row(conn, task_id)
            return row if row and row["run_id"] else None

        first = await wait_for(run_id_recorded, what="the run id recorded while it runs")
        assert first["run_id"] == f"remote-{task_id}-1"

        async def renewed() -> bool:
            row = await _attempt_row(conn, task_id)
            return bool(row["lease_expires_at"] > first["lease_expires_at"])

        await wait_for(renewed, what="the lease renewed while the executor runs")
        remote.go.set()
        task = await wait_for(lambda: _finished(app, task_id), what="the outcome written")
    finally:
        worker.stop()
        await asyncio.wait_for(run, 20)
    assert task.status == TaskStatus.COMPLETED and task.result == {"ran": 1}
    (attempt,) = task.attempt_history
    assert (attempt.status, attempt.run_id) == ("succeeded", f"remote-{task_id}-1")
    assert (attempt.model, attempt.input_tokens, attempt.output_tokens) == ("remote-model", 40, 2)
    # The agent's declared rate is 0: a cost above it is the executor's rate at work.
    assert attempt.compute_cost_usd is not None and attempt.compute_cost_usd > 0
    assert remote.closed, "close() when the worker stops"
    assert not worker.held


async def test_a_cancel_stops_the_executors_run(settings: Settings) -> None:
    app = App(settings=settings)
    remote = Remote()
    app.external("remote", remote)
    task_id = await app.enqueue_async("remote", {})
    worker = Worker(app, concurrency=1)
    run = asyncio.create_task(worker.run())
    try:
        await wait_for(lambda: remote.waiting == [task_id], what="the attempt running")
        await app.cancel_async(task_id)
        await wait_for(lambda: remote.stopped == [task_id], what="the run cancelled")
        await wait_for(lambda: not worker.held, what="its end written")
    finally:
        worker.stop()
        await asyncio.wait_for(run, 20)
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.CANCELLED
    (attempt,) = task.attempt_history
    assert attempt.status == "cancelled"
    await app.aclose()


async def test_how_the_executor_ended_is_how_the_attempt_ended(settings: Settings) -> None:
    """JobFailed: failed with its reason (no traceback) and retried; PermanentFailure:
    failed for good with attempts left."""
    app = App(settings=settings)
    remote = Remote()
    remote.go.set()
    app.external("remote", remote, max_attempts=3, backoff_base=0.01)
    retried = await app.enqueue_async("remote", {"end": "job_failed"})
    permanent = await app.enqueue_async("remote", {"end": "permanent"})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:
        first = await wait_for(lambda: _finished(app, retried), what="the retry")
        second = await wait_for(lambda: _finished(app, permanent), what="the permanent failure")
    finally:
        worker.stop()
        await asyncio.wait_for(run, 20)
    assert first.status == TaskStatus.COMPLETED and first.result == {"ran": 2}
    failed, succeeded = first.attempt_history
    assert (failed.status, failed.error) == ("failed", "the remote task died: out of memory")
    assert succeeded.status == "succeeded"
    assert second.status == TaskStatus.FAILED and len(second.attempt_history) == 1
    assert (second.error or "").startswith("PermanentFailure: not a document")
    await app.aclose()


def test_what_is_neither_an_executor_nor_a_dispatcher_is_refused(settings: Settings) -> None:
    with pytest.raises(TypeError, match="neither an executor"):
        as_executor(object())  # type: ignore[arg-type]
    app = App(settings=settings)
    app.external("odd", object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="object is neither an executor"):
        Worker(app)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["succeeded"], "CONVEYOR_CALLBACK_URL and CONVEYOR_CALLBACK_SECRET not set"),
        (["succeeded", "{not json"], "the second argument is not JSON"),
        (["failed", "[1]"], "must be a JSON object"),
        (["failed", '{"bogus": 1}'], "unknown keys ['bogus']"),
    ],
)
def test_python_m_conveyor_external_says_what_is_wrong(args: list[str], says: str) -> None:
    """A shell-script job's bad call gets a line saying why, not a traceback."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVEYOR_CALLBACK_")}
    out = subprocess.run(
        [sys.executable, "-m", "conveyor.external", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 1
    assert says in out.stderr and "Traceback" not in out.stderr
