"""Attempts as Ray jobs (conveyor.executors.ray_jobs) on a real local Ray cluster with its
dashboard, which serves the Jobs REST API; a real web app on loopback takes the jobs'
signed callbacks. The job is tests/jobs/ray_job.py.

Each test has a database of its own, so each one's first attempt is attempt 1 of its
database, on the one cluster: that the jobs of the later tests are their own (and not the
first test's, found by the same name) is what the digest in the submission id is for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from conveyor import App, TaskStatus
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import ROOT
from tests.web import serving

ray = pytest.importorskip("ray")
pytest.importorskip("aiohttp_cors", reason="the Jobs API needs ray[default]")

from conveyor.executors.ray_jobs import RayJob  # noqa: E402

JOB = f"{sys.executable} {ROOT / 'tests' / 'jobs' / 'ray_job.py'}"
START = 120  # seconds a Ray job may take to start on 2 busy cores (a driver process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _started_cluster() -> Any:
    """ray.init with the dashboard. Ray gives its raylet a fixed 30 s to register, which a
    machine loaded far past its cores (this one, shared by the whole team) sometimes
    misses: the cluster's start is tried three times; what is tested starts after it.

    A job's driver is pointed at its cluster by the job supervisor, which takes the address
    that `ray start` writes into the cluster's temporary folder; ray.init writes none, and
    then the supervisor takes any Ray cluster it finds running on the machine. With a second
    test run beside this one, jobs submitted here ran on the other run's cluster (seen, and
    reproduced: 2 of 3 jobs). So the cluster gets a folder of its own and the address is
    written there, as `ray start` would."""
    folder = tempfile.mkdtemp(prefix="ray-")  # short: the cluster's sockets live in it
    for attempt in range(3):
        try:
            context = ray.init(
                num_cpus=2,
                include_dashboard=True,
                dashboard_host="127.0.0.1",
                dashboard_port=_free_port(),
                log_to_driver=False,
                _temp_dir=folder,
            )
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise
            ray.shutdown()
            continue
        ray._private.utils.write_ray_address(context.address_info["gcs_address"], folder)
        return context
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def dashboard() -> Iterator[str]:
    """The Jobs API's URL of a local Ray cluster with 2 CPUs and its dashboard."""
    before = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    context = _started_cluster()
    try:
        yield f"http://{context.dashboard_url}"
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
        else:
            os.environ["RAY_USAGE_STATS_ENABLED"] = before


@pytest.fixture
async def served(settings: Settings, dashboard: str) -> AsyncIterator[tuple[App, RayJob]]:
    app = App(settings=settings)
    job = RayJob(
        JOB,
        address=dashboard,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        entrypoint_num_cpus=0.1,
        callback_grace=1.0,
        poll_interval=0.2,
    )
    app.external("render", job, max_attempts=1)
    async with serving(app) as url:
        app.settings = dataclasses.replace(app.settings, public_url=url)
        yield app, job


async def _job(job: RayJob, name: str) -> dict[str, Any]:
    async with job._client() as client:
        response = await client.get(f"/api/jobs/{name}")
    return dict(response.json()) if response.status_code == 200 else {}


async def _finished(app: App, task_id: int) -> Any:
    task = await app.get_task_async(task_id)
    return task if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) else None


async def test_an_attempt_is_a_ray_job_named_after_it_that_calls_back(served: Any) -> None:
    app, job = served
    task_id = await app.enqueue_async("render", {"doc": "plan.pdf"})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:
        task = await wait_for(lambda: _finished(app, task_id), timeout=START, what="the job")
    finally:
        worker.stop()
        await run
    assert task.status == TaskStatus.COMPLETED, task.error
    (attempt,) = task.attempt_history
    assert attempt.run_id and attempt.run_id.startswith(f"ray-job:conveyor-{attempt.id}-")
    name = attempt.run_id.removeprefix("ray-job:")
    assert task.result["echo"] == {"doc": "plan.pdf"} and task.result["attempt"] == 1
    assert task.result["node"] == ray.get_runtime_context().get_node_id()  # ran on the cluster
    assert (attempt.model, attempt.input_tokens, attempt.output_tokens) == ("sim", 12, 3)
    info = await wait_for(
        lambda: _ended(job, name), timeout=30, what="the job's end in the Jobs API"
    )
    assert info["status"] == "SUCCEEDED"
    assert info["metadata"]["conveyor_task_id"] == str(task_id)


async def _ended(job: RayJob, name: str) -> dict[str, Any] | None:
    info = await _job(job, name)
    return info if info.get("status") in ("SUCCEEDED", "FAILED", "STOPPED") else None


async def test_a_cancel_stops_the_ray_job(served: Any, tmp_path: Path) -> None:
    app, job = served
    beat = tmp_path / "beat"
    task_id = await app.enqueue_async("render", {"beat": str(beat)})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:
        task = await wait_for(
            lambda: _running(app, task_id), timeout=30, what="the attempt's start"
        )
        (attempt,) = task.attempt_history
        try:
            await wait_for(beat.exists, timeout=START, interval=0.2, what="the job's first beat")
        except AssertionError:
            raise AssertionError(await _job(job, _name(attempt))) from None
        await app.cancel_async(task_id)
        cancelled = time.monotonic()
        info = await wait_for(
            lambda: _ended(job, _name(attempt)), timeout=30, what="the job's stop"
        )
        stopped = time.monotonic() - cancelled
    finally:
        worker.stop()
        await run
    assert info["status"] == "STOPPED"
    last = float(beat.read_text().split()[0])
    await asyncio.sleep(0.5)  # a job still running would have beaten 5 times meanwhile
    assert float(beat.read_text().split()[0]) == last, "the job still runs"
    assert (await app.get_task_async(task_id)).status == TaskStatus.CANCELLED
    print(f"\nthe Ray job was stopped {stopped:.1f} s after the cancel")


def _name(attempt: Any) -> str:
    return str(attempt.run_id).removeprefix("ray-job:")


async def _running(app: App, task_id: int) -> Any:
    task = await app.get_task_async(task_id)
    return task if task.attempt_history and task.attempt_history[0].run_id else None


async def test_a_job_that_ends_without_calling_back_fails_its_attempt(served: Any) -> None:
    app = served[0]
    task_id = await app.enqueue_async("render", {"exit": 3})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:
        task = await wait_for(lambda: _finished(app, task_id), timeout=START, what="failure")
    finally:
        worker.stop()
        await run
    assert task.status == TaskStatus.FAILED
    assert "exited with status 3 without calling back" in (task.error or "")


async def test_a_jobs_api_that_refuses_fails_the_attempt_clearly(
    settings: Settings, dashboard: str
) -> None:
    app = App(settings=settings)
    app.external("render", RayJob(JOB, address=dashboard, token="not-the-token"), max_attempts=1)
    async with serving(app) as url:
        app.settings = dataclasses.replace(app.settings, public_url=url)
        task_id = await app.enqueue_async("render", {})
        worker = Worker(app, concurrency=1)
        run = asyncio.create_task(worker.run())
        try:
            task = await wait_for(lambda: _finished(app, task_id), timeout=30, what="failure")
        finally:
            worker.stop()
            await run
    assert task.status == TaskStatus.FAILED
    assert "the job could not be started" in (task.error or "")
    assert "answered 403" in (task.error or ""), task.error
