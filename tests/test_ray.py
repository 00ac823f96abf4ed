"""Attempts as Ray tasks (conveyor.executors.ray) on a real local Ray cluster.

One cluster for the module (`ray.init(num_cpus=2)`, no dashboard, usage stats off), which
this process drives; real worker processes join it as drivers of their own through
CONVEYOR_RAY_ADDRESS. The agents are in tests/ray_app.py.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from conveyor import App
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import ROOT, WorkerProcess

ray = pytest.importorskip("ray")

from tests.ray_app import SPENDS_RATE  # noqa: E402 (after the skip: it imports ray)
from tests.ray_app import app as ray_app  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The GCS address of a local Ray cluster with 2 CPUs."""
    before = {name: os.environ.get(name) for name in ("RAY_USAGE_STATS_ENABLED", "PYTHONPATH")}
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    # Ray's worker processes import the agents' module (tests.ray_app) as this one does.
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        for name, value in before.items():  # the other modules' environment as it was
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _app(settings: Settings) -> App:
    """An App of this test's database with the Ray agents of tests/ray_app.py."""
    app = App(settings=settings)
    for spec in ray_app.agents.values():
        app.agents[spec.name] = spec
    return app


@pytest.fixture
async def app(settings: Settings, cluster: str) -> AsyncIterator[App]:
    app = _app(settings)
    yield app
    await app.aclose()


class Running:
    """A worker in this process (its Ray tasks go to the module's cluster)."""

    def __init__(self, app: App, concurrency: int = 4) -> None:
        self.worker = Worker(app, concurrency=concurrency)

    async def __aenter__(self) -> Worker:
        self.task = asyncio.create_task(self.worker.run())
        await asyncio.wait_for(self.worker.wait_started(), 30)
        return self.worker

    async def __aexit__(self, *exc: object) -> None:
        self.worker.stop()
        await asyncio.wait_for(self.task, 30)


async def attempts(conn: Any, task_id: int) -> list[dict[str, Any]]:
    cur = await conn.execute(
        "SELECT * FROM task_attempts WHERE task_id = %s ORDER BY attempt", (task_id,)
    )
    return list(await cur.fetchall())


async def status(conn: Any, task_id: int) -> str:
    cur = await conn.execute("SELECT status FROM tasks WHERE id = %s", (task_id,))
    row = await cur.fetchone()
    return str(row["status"])


async def until_status(conn: Any, task_id: int, wanted: str, timeout: float = 30) -> None:
    async def reached() -> bool:
        return await status(conn, task_id) == wanted

    await wait_for(reached, timeout=timeout, what=f"task {task_id} to be {wanted}")


def last_beat(path: Path) -> float:
    return float(path.read_text().split()[0]) if path.exists() else 0.0


async def beat_stops(path: Path, *, quiet: float = 0.5, timeout: float = 10) -> float:
    """The time of the last heartbeat, once the file stayed unchanged for `quiet` s."""

    async def stopped() -> float | None:
        beat = last_beat(path)
        return beat if beat and time.time() - beat > quiet else None

    return float(await wait_for(stopped, timeout=timeout, what="the Ray task to stop"))


def test_a_ray_task_s_price_is_its_resources_at_their_rates() -> None:
    from conveyor.executors.ray import RayTask
    from tests.ray_app import noop

    shape = RayTask(
        noop,
        num_cpus=4,
        num_gpus=1,
        memory=16 * 1024**3,
        resources={"tpu": 2},
        usd_per_hour={"CPU": 0.05, "GPU": 2.5, "memory_gib": 0.01, "tpu": 1.0},
    )
    assert shape.compute_usd_per_hour == pytest.approx(4 * 0.05 + 2.5 + 16 * 0.01 + 2 * 1.0)
    assert RayTask(noop).compute_usd_per_hour is None  # the agent's rate, as for any attempt
    with pytest.raises(ValueError, match=r"does not ask for: \['tpu'\]"):
        RayTask(noop, usd_per_hour={"tpu": 1.0})
    with pytest.raises(ValueError, match="num_cpus must be >= 0"):
        RayTask(noop, num_cpus=-1)
    with pytest.raises(TypeError, match="needs a function"):
        RayTask("noop")  # type: ignore[arg-type]


# ---- one process --------------------------------------------------------------------------


async def test_usage_reported_inside_ray_and_the_resources_cost_reach_the_attempt(
    app: App, conn: Any
) -> None:
    task_id = await app.enqueue_async("ray_spends", {"seconds": 0.3})
    async with Running(app):
        await until_status(conn, task_id, "completed")
    (attempt,) = await attempts(conn, task_id)
    assert attempt["status"] == "succeeded"
    assert (attempt["model"], attempt["input_tokens"], attempt["output_tokens"]) == (
        "gpt-4o-mini",
        2000,
        400,
    )
    # The Ray task id, and the node it ran on.
    run_id = attempt["run_id"]
    assert run_id.startswith("ray:") and "@" in run_id, run_id
    node = run_id.split("@")[1]
    assert node == ray.get_runtime_context().get_node_id()
    wall = (attempt["finished_at"] - attempt["started_at"]).total_seconds()
    assert wall >= 0.3
    # 1 CPU and 0.5 GiB at their declared rates, for the attempt's wall time.
    assert float(attempt["compute_cost_usd"]) == pytest.approx(SPENDS_RATE * wall / 3600, rel=0.1)
    assert float(attempt["llm_cost_usd"]) > 0
    cur = await conn.execute("SELECT result FROM tasks WHERE id = %s", (task_id,))
    assert (await cur.fetchone())["result"] == {"pages": 3}


async def test_a_ray_task_receives_its_task_as_the_worker_claimed_it(app: App, conn: Any) -> None:
    payload = {"document_id": "d-17", "pages": [1, 2], "big": 2**70, "ratio": 0.5, "none": None}
    task_id = await app.enqueue_async(
        "ray_echoes", payload, priority=7, estimated_tokens=1500, tenant="acme",
        labels={"source": "mail"},
    )  # fmt: skip
    async with Running(app):
        await until_status(conn, task_id, "completed")
    cur = await conn.execute("SELECT result, created_at FROM tasks WHERE id = %s", (task_id,))
    row = await cur.fetchone()
    assert row["result"] == {
        "id": task_id, "agent": "ray_echoes", "payload": payload, "attempt": 1,
        "max_attempts": 2, "priority": 7, "created_at": row["created_at"].isoformat(),
        "tenant": "acme", "labels": {"source": "mail"}, "estimated_tokens": 1500,
    }  # fmt: skip


async def test_a_ray_task_that_raises_fails_its_attempt_with_the_remote_traceback(
    app: App, conn: Any
) -> None:
    task_id = await app.enqueue_async("ray_raises", {})
    async with Running(app):
        await until_status(conn, task_id, "failed")
    (attempt,) = await attempts(conn, task_id)
    assert attempt["status"] == "failed"
    assert "raised ValueError: no invoice number on page 3" in attempt["error"]
    assert "tests/ray_app.py" in attempt["error"]  # where, in the remote traceback
    assert attempt["input_tokens"] == 500  # spent before it raised: still counted


async def test_a_ray_task_killed_underneath_is_retried(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("ray_dies", {})
    async with Running(app):
        await until_status(conn, task_id, "completed", timeout=60)
    first, second = await attempts(conn, task_id)
    assert first["status"] == "failed"
    assert "died" in first["error"] and "Ray task" in first["error"], first["error"]
    # Its run id, written with the failure: the Ray task's id (no node: it never answered).
    assert first["run_id"].startswith("ray:") and "@" not in first["run_id"], first["run_id"]
    assert first["run_id"][len("ray:") :] in first["error"]
    assert second["status"] == "succeeded"
    assert second["run_id"].startswith("ray:") and "@" in second["run_id"], second["run_id"]


async def test_a_ray_task_running_past_its_lease_keeps_it(
    app: App, conn: Any, tmp_path: Path
) -> None:
    beat = tmp_path / "beat"
    task_id = await app.enqueue_async("ray_beats", {"heartbeat": str(beat), "seconds": 5})
    async with Running(app):
        await until_status(conn, task_id, "completed", timeout=60)
    (attempt,) = await attempts(conn, task_id)  # the lease is 2 s: renewed, never lost
    assert attempt["status"] == "succeeded"
    assert (attempt["finished_at"] - attempt["started_at"]).total_seconds() >= 5


async def test_cancel_stops_the_running_ray_task_within_two_seconds(
    app: App, conn: Any, tmp_path: Path
) -> None:
    beat = tmp_path / "beat"
    task_id = await app.enqueue_async("ray_beats", {"heartbeat": str(beat), "seconds": 120})
    async with Running(app):
        await wait_for(lambda: last_beat(beat), timeout=30, what="the Ray task to beat")
        cancelled_at = time.time()
        await app.cancel_async(task_id)
        stopped_at = await beat_stops(beat)
    assert stopped_at - cancelled_at < 2.0
    assert await status(conn, task_id) == "cancelled"
    (attempt,) = await attempts(conn, task_id)
    assert attempt["status"] == "cancelled"


async def test_a_ray_task_reads_a_stored_document_by_its_content_address(
    app: App, conn: Any, tmp_path: Path
) -> None:
    import hashlib

    from conveyor.documents.stores import open_store

    data = b"%PDF-1.4 an invoice " * 1000
    sha256 = hashlib.sha256(data).hexdigest()
    upload = tmp_path / "upload.pdf"
    upload.write_bytes(data)
    store = open_store(f"file://{tmp_path / 'shared'}")  # storage every node mounts
    await store.publish(upload, sha256)
    task_id = await app.enqueue_async("ray_reads", {"store": store.url, "sha256": sha256})
    async with Running(app):
        await until_status(conn, task_id, "completed")
    cur = await conn.execute("SELECT result FROM tasks WHERE id = %s", (task_id,))
    result = (await cur.fetchone())["result"]
    assert (result["bytes"], result["sha256"]) == (len(data), sha256)
    assert result["pid"] != os.getpid()  # read in a Ray worker process, not here


# ---- worker processes ---------------------------------------------------------------------


@pytest.fixture
def workers(database_url: str, tmp_path: Path, cluster: str) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(concurrency: int = 8) -> WorkerProcess:
        worker = WorkerProcess(
            database_url,
            concurrency=concurrency,
            app="tests.ray_app:app",
            env={"CONVEYOR_RAY_ADDRESS": cluster, "RAY_USAGE_STATS_ENABLED": "0"},
            log_path=tmp_path / f"worker-{len(started)}.log",
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


async def test_two_worker_processes_run_hundreds_of_ray_attempts_exactly_once(
    app: App, conn: Any, workers: Any
) -> None:
    ids = await app.enqueue_many_async([{"agent": "ray_noop", "payload": {}} for _ in range(300)])
    pool = [workers(8), workers(8)]

    async def all_done() -> bool:
        cur = await conn.execute("SELECT count(*) AS n FROM tasks WHERE status = 'completed'")
        return int((await cur.fetchone())["n"]) == len(ids)

    await wait_for(all_done, timeout=180, interval=0.25, what="300 Ray attempts")
    cur = await conn.execute(
        "SELECT count(*) AS n, count(DISTINCT task_id) AS tasks,"
        " count(DISTINCT run_id) AS runs,"
        " count(*) FILTER (WHERE status = 'succeeded' AND run_id LIKE 'ray:%%@%%') AS ok,"
        " count(DISTINCT worker_id) AS workers"
        " FROM task_attempts"
    )
    row = await cur.fetchone()
    assert row == {"n": 300, "tasks": 300, "runs": 300, "ok": 300, "workers": 2}
    for worker in pool:
        assert worker.proc.poll() is None, worker.output()[-2000:]


async def test_a_sigkilled_worker_s_ray_task_dies_with_it_and_runs_again(
    app: App, conn: Any, workers: Any, tmp_path: Path
) -> None:
    beat = tmp_path / "beat"
    task_id = await app.enqueue_async(
        "ray_beats", {"heartbeat": str(beat), "seconds": 3600, "first_only": True}
    )
    doomed = workers(2)
    await wait_for(lambda: last_beat(beat), timeout=60, what="the first attempt to beat")
    await asyncio.to_thread(doomed.kill)
    killed_at = time.time()
    # Ray ends the work of an owner that died: the orphan stops beating.
    await beat_stops(beat, timeout=15)
    workers(2)
    await until_status(conn, task_id, "completed", timeout=60)
    first, second = await attempts(conn, task_id)
    assert first["status"] == "lost"
    assert second["status"] == "succeeded"
    # Lease 2 s + 5 s, and the new worker's start (a Python process joining the cluster).
    started = second["started_at"].timestamp()
    assert started - killed_at < 2 + 5 + 10, started - killed_at
