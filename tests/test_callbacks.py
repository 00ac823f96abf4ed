"""External jobs and their signed, idempotent callbacks, over real HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request

from conveyor import App, TaskStatus, queue
from conveyor.external import SubprocessJob, attempt_secret, sign
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import ROOT
from tests.web import serving

JOB = [sys.executable, str(ROOT / "tests" / "jobs" / "echo_job.py")]


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[tuple[App, httpx.AsyncClient]]:
    app = App(settings=settings)
    job = SubprocessJob(JOB, env={"PYTHONPATH": str(ROOT)}, callback_grace=0.3)
    app.external("ocr", job, max_attempts=2, backoff_base=0.01)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        app.settings = dataclasses.replace(app.settings, public_url=url)
        yield app, client


async def _claimed(app: App, conn: Any, payload: Any = None) -> tuple[int, queue.ClaimedTask]:
    task_id = await app.enqueue_async("ocr", payload or {})
    (claimed,) = await queue.claim(conn, worker_id="w", agents=["ocr"], limit=1)
    return task_id, claimed


async def _post(
    client: httpx.AsyncClient,
    conn: Any,
    claimed: queue.ClaimedTask,
    body: Any,
    *,
    secret: str | None = None,
    stamp: float | None = None,
) -> httpx.Response:
    raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
    key = await queue.callback_key(conn)
    secret = secret or attempt_secret(key, claimed.attempt_id, claimed.claim_token)
    return await client.post(
        f"/api/callbacks/{claimed.attempt_id}",
        content=raw,
        headers={"content-type": "application/json", **sign(secret, raw, stamp)},
    )


async def test_a_subprocess_job_runs_and_calls_back(served: Any, conn: Any) -> None:
    app, _ = served
    task_id = await app.enqueue_async("ocr", {"doc": "scan.pdf"})
    worker = Worker(app, concurrency=4)
    run = asyncio.create_task(worker.run())
    try:
        task = await wait_for(lambda: _finished(app, task_id), timeout=30, what="the callback")
    finally:
        worker.stop()
        await run
    assert task.status == TaskStatus.COMPLETED
    assert task.result == {"echo": {"doc": "scan.pdf"}, "attempt": 1}
    (attempt,) = task.attempt_history
    assert attempt.run_id and attempt.run_id.startswith("pid:")
    assert (attempt.model, attempt.input_tokens, attempt.output_tokens) == ("sim", 120, 30)
    assert (attempt.llm_cost_usd, attempt.trace_id) == (0.0042, "trace-abc")
    assert not worker.held, "the worker let go of the attempt the callback ended"


async def _finished(app: App, task_id: int) -> Any:
    task = await app.get_task_async(task_id)
    return task if task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) else None


async def test_a_job_that_exits_without_calling_back_fails_the_attempt(served: Any) -> None:
    app, _ = served
    task_id = await app.enqueue_async("ocr", {"exit": 3})
    worker = Worker(app, concurrency=2)
    run = asyncio.create_task(worker.run())
    try:
        task = await wait_for(lambda: _finished(app, task_id), timeout=60, what="failure")
    finally:
        worker.stop()
        await run
    assert task.status == TaskStatus.FAILED
    assert [a.status for a in task.attempt_history] == ["failed", "failed"], "retried once"
    assert "exited with status 3 without calling back" in (task.error or "")


async def test_fifty_concurrent_redeliveries_complete_once(served: Any, conn: Any) -> None:
    app, client = served
    task_id, claimed = await _claimed(app, conn)
    body = {
        "status": "succeeded",
        "result": {"n": 1},
        "usage": {"model": "m", "input_tokens": 100, "output_tokens": 20},
        "cost_usd": 0.5,
    }
    answers = await asyncio.gather(*(_post(client, conn, claimed, body) for _ in range(50)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.text for a in answers}) == 1, "every delivery gets the same answer"
    assert answers[0].json() == {
        "task_id": task_id,
        "attempt": 1,
        "task_status": "completed",
        "attempt_status": "succeeded",
    }
    other = dict(body, usage={"model": "m", "input_tokens": 999, "output_tokens": 999})
    later = await _post(client, conn, claimed, other)
    assert later.status_code == 200 and later.json() == answers[0].json(), "a terminal no-op"
    task = await app.get_task_async(task_id)
    (attempt,) = task.attempt_history
    assert (attempt.input_tokens, attempt.output_tokens, attempt.llm_cost_usd) == (100, 20, 0.5)
    cur = await conn.execute(
        "SELECT count(*) AS n FROM task_attempts WHERE task_id = %s", (task_id,)
    )
    assert (await cur.fetchone())["n"] == 1


async def test_a_failure_callback_retries_or_fails(served: Any, conn: Any) -> None:
    app, client = served
    task_id, claimed = await _claimed(app, conn)
    answer = await _post(client, conn, claimed, {"status": "failed", "error": "the scanner jammed"})
    assert answer.json()["task_status"] == "enqueued", "retried: attempts remain"
    await conn.execute("UPDATE tasks SET run_after = now() WHERE id = %s", (task_id,))
    (second,) = await queue.claim(conn, worker_id="w", agents=["ocr"], limit=1)
    final = await _post(
        client, conn, second, {"status": "failed", "error": "unreadable", "retry": False}
    )
    assert final.json()["task_status"] == "failed"
    assert (await app.get_task_async(task_id)).error == "unreadable"


async def test_a_callback_for_a_lost_attempt_is_refused_and_recorded(
    served: Any, conn: Any
) -> None:
    app, client = served
    task_id, claimed = await _claimed(app, conn)
    await conn.execute("UPDATE tasks SET lease_expires_at = now() - interval '1 s'")
    await queue.sweep_expired(conn)
    late = await _post(
        client,
        conn,
        claimed,
        {"status": "succeeded", "result": 1, "usage": {"input_tokens": 7}},
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "attempt_ended"
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED
    (attempt,) = task.attempt_history
    assert (attempt.status, attempt.late_outcome, attempt.input_tokens) == ("lost", "succeeded", 7)


@pytest.mark.parametrize("problem", ["missing", "wrong secret", "tampered", "stale", "future"])
async def test_unauthentic_callbacks_are_401(served: Any, conn: Any, problem: str) -> None:
    app, client = served
    task_id, claimed = await _claimed(app, conn)
    body = json.dumps({"status": "succeeded"}).encode()
    url = f"/api/callbacks/{claimed.attempt_id}"
    secret = attempt_secret(await queue.callback_key(conn), claimed.attempt_id, claimed.claim_token)
    headers = {
        "missing": {},
        "wrong secret": sign("guess", body),
        "tampered": sign(secret, body.replace(b"succeeded", b"failed")),
        "stale": sign(secret, body, time.time() - 3600),
        "future": sign(secret, body, time.time() + 3600),
    }[problem]
    answer = await client.post(url, content=body, headers=headers)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "bad_signature"
    assert (await app.get_task_async(task_id)).status == TaskStatus.PROCESSING


@pytest.mark.parametrize("attempt_id", ["999999", "abc", "-1", "0", "1e3"])
async def test_unknown_attempts_are_404(served: Any, attempt_id: str) -> None:
    _, client = served
    answer = await client.post(f"/api/callbacks/{attempt_id}", content=b"{}")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b'{"status": "succeeded"', 400),
        (b'{"status": "done"}', 422),
        (b'{"status": "succeeded", "usage": {"input_tokens": -1}}', 422),
        (b'{"status": "succeeded", "colour": 1}', 422),
    ],
)
async def test_signed_but_bad_bodies_are_4xx(
    served: Any, conn: Any, raw: bytes, status: int
) -> None:
    app, client = served
    _, claimed = await _claimed(app, conn)
    answer = await _post(client, conn, claimed, raw)
    assert answer.status_code == status, answer.text


async def test_an_http_job_is_posted_to_a_runner_that_calls_back(settings: Settings) -> None:
    """HttpJob: the worker POSTs the job to a runner, which answers with its run id at
    once and calls back later, as a batch system's gateway would."""
    from conveyor.external import HttpJob
    from conveyor.web.serve import make_server

    runner = FastAPI()
    received: list[dict[str, Any]] = []
    background: set[asyncio.Task[None]] = set()

    async def call_back(job: dict[str, Any]) -> None:
        body = json.dumps(
            {
                "status": "succeeded",
                "result": {"ran": job["payload"]},
                "usage": {"model": "batch", "input_tokens": 5},
            }
        ).encode()
        async with httpx.AsyncClient() as http:
            await http.post(
                job["callback_url"],
                content=body,
                headers={"content-type": "application/json", **sign(job["callback_secret"], body)},
            )

    @runner.post("/jobs")
    async def accept(request: Request) -> dict[str, str]:
        job = await request.json()
        received.append(job)
        task = asyncio.create_task(call_back(job))
        background.add(task)
        task.add_done_callback(background.discard)
        return {"run_id": f"batch-{job['attempt_id']}"}

    server = make_server(runner, "127.0.0.1", 0, token=None)
    serve = asyncio.create_task(server.serve())
    await wait_for(lambda: server.started, what="the runner")
    runner_url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/jobs"
    app = App(settings=settings)
    app.external("transcribe", HttpJob(runner_url))
    try:
        async with serving(app) as url:
            app.settings = dataclasses.replace(app.settings, public_url=url)
            task_id = await app.enqueue_async("transcribe", {"audio": "a.wav"})
            worker = Worker(app, concurrency=2)
            run = asyncio.create_task(worker.run())
            try:
                task = await wait_for(
                    lambda: _finished(app, task_id), timeout=30, what="the callback"
                )
            finally:
                worker.stop()
                await run
    finally:
        server.should_exit = True
        await serve
    assert task.status == TaskStatus.COMPLETED, [a.error for a in task.attempt_history]
    assert task.result == {"ran": {"audio": "a.wav"}}
    (attempt,) = task.attempt_history
    assert attempt.run_id == f"batch-{attempt.id}" and attempt.input_tokens == 5
    assert received[0]["task_id"] == task_id and "callback_secret" in received[0]


async def test_usage_reported_without_a_cost_is_priced(served: Any, conn: Any) -> None:
    app, _ = served
    app.settings = dataclasses.replace(
        app.settings,
        llm_prices='{"priced": {"input_per_mtok": 1000000, "output_per_mtok": 2000000}}',
    )
    # The router priced with the settings it was built with: serve again with these.
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as priced:
        costs = []
        for model in ("priced", "no-such-model-xyz"):
            task_id, claimed = await _claimed(app, conn)
            body = {
                "status": "succeeded",
                "usage": {"model": model, "input_tokens": 3, "output_tokens": 1},
            }
            assert (await _post(priced, conn, claimed, body)).status_code == 200
            (attempt,) = (await app.get_task_async(task_id)).attempt_history
            costs.append(attempt.llm_cost_usd)
    assert costs == [3 * 1 + 1 * 2, None], "priced from the override; unknown: left empty"


async def _connect(database_url: str) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    return await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    )


async def test_the_first_callers_of_a_fresh_database_all_get_the_one_key(
    database_url: str, conn: Any
) -> None:
    """The key is created by the first process that needs it. Callers that find it being
    created wait for that commit, and must then get the key: with INSERT ... DO NOTHING and
    a read in the same statement they got nothing (the read's snapshot predates the commit),
    and the external jobs of a fresh database failed without starting."""
    first, *others = [await _connect(database_url) for _ in range(6)]
    try:
        async with first.transaction():
            key = await queue.callback_key(first)  # inserted, not yet committed
            waiting = [asyncio.create_task(queue.callback_key(c)) for c in others]
            pids = [c.info.backend_pid for c in others]
            await wait_for(lambda: _all_waiting(conn, pids), what="callers waiting on the insert")
        assert await asyncio.gather(*waiting) == [key] * len(others)
    finally:
        for c in [first, *others]:
            await c.close()
    # And a stampede of fresh connections, none holding anything back.
    await conn.execute("DELETE FROM conveyor_keys")
    stampede = [await _connect(database_url) for _ in range(12)]
    try:
        keys = await asyncio.gather(*(queue.callback_key(c) for c in stampede))
    finally:
        for c in stampede:
            await c.close()
    assert len(set(keys)) == 1 and keys[0] != key


async def _all_waiting(conn: Any, pids: list[int]) -> bool:
    cur = await conn.execute(
        "SELECT count(*) AS n FROM pg_stat_activity"
        " WHERE pid = ANY(%s) AND wait_event_type = 'Lock'",
        (pids,),
    )
    row = await cur.fetchone()
    return bool(row["n"] == len(pids))


async def test_a_callback_after_a_cancel_is_recorded_and_a_redelivery_changes_nothing(
    served: Any, conn: Any
) -> None:
    """The route leaves the decision to the one write that ends attempts: after a cancel,
    the job's outcome is kept on record (200, the task stays cancelled); after its own
    success, a redelivery with other figures writes nothing."""
    app, client = served
    task_id, claimed = await _claimed(app, conn)
    await app.cancel_async(task_id)
    late = await _post(client, conn, claimed, {"status": "succeeded", "result": 1, "usage": {}})
    assert late.status_code == 200
    assert (late.json()["task_status"], late.json()["attempt_status"]) == ("cancelled", "cancelled")
    (attempt,) = (await app.get_task_async(task_id)).attempt_history
    assert attempt.late_outcome == "succeeded"

    other_id, second = await _claimed(app, conn)
    first = {"status": "succeeded", "result": 2, "usage": {"model": "m", "input_tokens": 5}}
    assert (await _post(client, conn, second, first)).status_code == 200
    again = {"status": "failed", "error": "late", "usage": {"model": "m", "input_tokens": 9}}
    answer = await _post(client, conn, second, again)
    assert (answer.status_code, answer.json()["task_status"]) == (200, "completed")
    task = await app.get_task_async(other_id)
    (attempt,) = task.attempt_history
    assert (task.result, task.error, attempt.input_tokens, attempt.late_outcome) == (
        2,
        None,
        5,
        None,
    )
