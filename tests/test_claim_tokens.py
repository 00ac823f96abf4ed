"""The idle worker's claim commits asynchronously; its claim token fences what a crash undid.

The crash test runs a PostgreSQL of its own (the embedded one `conveyor up` starts) with
the WAL writer held back (wal_writer_delay 10 s, and the process itself stopped by
SIGSTOP: an idle WAL writer hibernates, and an asynchronous commit wakes it at once),
claims a task, SIGKILLs the postmaster and its processes before the claim's WAL is
written, starts the server again (crash recovery) and claims the task once more from
another worker: the first worker's writes for its undone claim must all be refused, and
the second's accepted.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, TaskStatus, queue
from conveyor.db.embedded import EmbeddedPostgres
from conveyor.db.embedded.processes import PidFile, kill_all, poll, server_processes
from conveyor.external import attempt_secret, sign
from conveyor.queue import FinishResult, Outcome
from conveyor.settings import Settings
from tests.servers import own_server
from tests.web import serving

# Nothing but a commit that waits for it writes the WAL out: no WAL writer round (and the
# WAL writer is stopped besides, _hold_back_wal), no background writer writing a page
# (which writes the WAL up to that page first), no autovacuum, no checkpoint. An
# asynchronous commit's WAL is then still in shared memory when the server is killed.
HELD_BACK_WAL = {
    "wal_writer_delay": "10s",
    "wal_writer_flush_after": "0",
    "bgwriter_lru_maxpages": "0",
    "autovacuum": "off",
    "checkpoint_timeout": "1h",
    "synchronous_commit": "on",
}


@pytest.fixture
def server() -> Iterator[EmbeddedPostgres]:
    with own_server("conveyor-crash-", HELD_BACK_WAL) as server:
        yield server


@pytest.fixture
async def producer(server: EmbeddedPostgres, tmp_path: Path) -> AsyncIterator[App]:
    app = App(settings=Settings(database_url=server.url, home=tmp_path))
    app.agent("crashy", lease_seconds=60)(_noop)
    yield app
    await app.aclose()


async def _noop(task: Any) -> None:
    return None


async def _row(conn: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
    return await (await conn.execute(query, params)).fetchone()


async def _connect(url: str) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)


async def _hold_back_wal(conn: Any) -> None:
    """Stop the WAL writer process (SIGSTOP): whatever an asynchronous commit leaves in
    the WAL buffers stays there (the test checks that the claim's WAL is unwritten)."""
    row = await _row(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'")
    assert row is not None, "a WAL writer runs"
    os.kill(row["pid"], signal.SIGSTOP)


def _crash(server: EmbeddedPostgres) -> None:
    """SIGKILL the postmaster, then the processes it leaves behind (what the OOM killer
    does to a whole server): nothing gets to write out the WAL still in shared memory."""
    pidfile = PidFile.read(server.pgdata)
    assert pidfile is not None and pidfile.pid > 0
    os.kill(pidfile.pid, signal.SIGKILL)
    kill_all(server_processes(server.pgdata), 10.0)
    assert poll(lambda: not server_processes(server.pgdata), 10.0)


async def test_a_claim_a_crash_undid_is_fenced_off_by_its_token(
    server: EmbeddedPostgres, producer: App
) -> None:
    task_id = await producer.enqueue_async("crashy", {})  # a durable commit
    await producer.aclose()

    async with await _connect(server.url) as conn:
        await _hold_back_wal(conn)
        (first,) = await queue.claim(conn, worker_id="first", agents=["crashy"], limit=1)
        # The claim's commit returned before its WAL was flushed (written, even).
        wal = await _row(
            conn, "SELECT pg_current_wal_lsn() < pg_current_wal_insert_lsn() AS unwritten"
        )
        assert wal == {"unwritten": True}, "the claim committed asynchronously"
    # Nothing else is written before the crash: any durable commit would flush the claim's
    # WAL with its own.
    _crash(server)
    server.start()  # crash recovery

    async with await _connect(server.url) as conn:
        row = await _row(conn, "SELECT status, attempts FROM tasks WHERE id = %s", (task_id,))
        assert (row["status"], row["attempts"]) == ("enqueued", 0), "the crash undid the claim"
        assert await _row(conn, "SELECT count(*) AS n FROM task_attempts") == {"n": 0}

        (second,) = await queue.claim(conn, worker_id="second", agents=["crashy"], limit=1)
        # What the old fence had to tell the two claims apart by is the same for both:
        # the attempt number, and even the attempt's id (the sequence's advance was lost
        # with the claim's WAL). The token is not.
        assert (second.id, second.attempt, second.attempt_id) == (
            first.id,
            first.attempt,
            first.attempt_id,
        )
        assert first.claim_token and second.claim_token
        assert second.claim_token != first.claim_token

        # Without its token, the first worker's outcome would end the second's claim.
        async with conn.transaction(force_rollback=True):
            blind = Outcome(task_id, first.attempt, "succeeded", result='"stale"')
            assert await queue.finish(conn, [blind]) == [FinishResult(task_id, 1, True)]

        # With it: the renewal, the outcome and the run id of the first claim change nothing.
        assert await queue.renew_leases(conn, {task_id: first.claim}) == set()
        stale = Outcome(
            task_id,
            first.attempt,
            "succeeded",
            result='"stale"',
            input_tokens=7,
            claim_token=first.claim_token,
        )
        assert await queue.finish(conn, [stale]) == [FinishResult(task_id, 1, False)]
        await queue.set_run_id(conn, first.attempt_id, "pid:stale", first.claim_token)
        # The first worker reconnecting releases its orphans: not the second worker's task.
        assert await queue.sweep(conn, orphans_of="first", keep=[first.claim_token]) == []
        # An external job of the first claim signs its callback with its claim's secret:
        # the route checks the secret of the claim the attempt id names now, and refuses.
        async with serving(producer) as url, httpx.AsyncClient(base_url=url) as client:
            answer = await _callback(client, conn, first)
            assert answer.status_code == 401, answer.text
        row = await _row(
            conn,
            "SELECT status, locked_by, attempts, result FROM tasks WHERE id = %s",
            (task_id,),
        )
        assert row == {"status": "processing", "locked_by": "second", "attempts": 1, "result": None}

        # The second claim renews, runs and finishes as if nothing had happened, and its
        # finish is durable: it survives the same crash.
        assert await queue.renew_leases(conn, {task_id: second.claim}) == {task_id}
        await queue.set_run_id(conn, second.attempt_id, "pid:fresh", second.claim_token)
        fresh = Outcome(
            task_id, second.attempt, "succeeded", result='"fresh"', claim_token=second.claim_token
        )
        await _hold_back_wal(conn)
        assert await queue.finish(conn, [fresh]) == [FinishResult(task_id, 1, True)]
    _crash(server)
    server.start()

    task = await producer.get_task_async(task_id)
    assert (task.status, task.result) == (TaskStatus.COMPLETED, "fresh")
    (attempt,) = task.attempt_history
    assert (attempt.worker_id, attempt.status, attempt.run_id) == (
        "second",
        "succeeded",
        "pid:fresh",
    )
    assert (attempt.late_outcome, attempt.input_tokens) == (None, None), "nothing of the stale one"
    # The route does accept the second claim's signature: a redelivery of its end.
    async with (
        await _connect(server.url) as conn,
        serving(producer) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        answer = await _callback(client, conn, second)
        assert (answer.status_code, answer.json()["task_status"]) == (200, "completed")


async def _callback(
    client: httpx.AsyncClient, conn: Any, claimed: queue.ClaimedTask
) -> httpx.Response:
    """POST the external job's callback of `claimed`, signed with its claim's secret."""
    key = await queue.callback_key(conn)
    secret = attempt_secret(key, claimed.attempt_id, claimed.claim_token)
    body = json.dumps({"status": "succeeded", "result": "stale"}).encode()
    return await client.post(
        f"/api/callbacks/{claimed.attempt_id}",
        content=body,
        headers={"content-type": "application/json", **sign(secret, body)},
    )


async def test_only_the_claim_alone_commits_asynchronously(app: App, conn: Any) -> None:
    """In autocommit the idle claim is its own transaction and skips the WAL flush; inside
    a caller's transaction it leaves the caller's commit durable."""
    app.agent("a")(_noop)
    await app.enqueue_many_async([queue.NewTask("a", {}) for _ in range(2)])
    async with conn.transaction(force_rollback=True):
        await queue.claim_alone(conn, worker_id="w", agents=["a"], limit=1)
        assert await _row(conn, "SHOW synchronous_commit") == {"synchronous_commit": "on"}
    async with conn.transaction(force_rollback=True):
        await conn.execute("SELECT * FROM conveyor_claim('w', ARRAY['a'], 1, 1, true)")
        assert await _row(conn, "SHOW synchronous_commit") == {"synchronous_commit": "off"}
    assert await _row(conn, "SHOW synchronous_commit") == {"synchronous_commit": "on"}
    # In autocommit the setting ends with the claim's own transaction.
    (claimed,) = await queue.claim_alone(conn, worker_id="w", agents=["a"], limit=1)
    assert claimed.claim_token
    assert await _row(conn, "SHOW synchronous_commit") == {"synchronous_commit": "on"}


async def test_every_claim_draws_its_own_token(app: App, conn: Any) -> None:
    """The busy claim too, and the token is on the attempt row, where callbacks find it."""
    app.agent("a")(_noop)
    await app.enqueue_many_async([queue.NewTask("a", {}) for _ in range(3)])
    idle = await queue.claim_alone(conn, worker_id="w", agents=["a"], limit=1)
    done = Outcome(idle[0].id, 1, "succeeded", result="1", claim_token=idle[0].claim_token)
    finished, busy = await queue.finish_and_claim(
        conn, [done], worker_id="w", agents=["a"], limit=2
    )
    assert finished == [FinishResult(idle[0].id, 1, True)]
    claimed = idle + busy
    assert len({c.claim_token for c in claimed}) == 3
    for c in claimed:
        row = await queue.attempt_for_callback(conn, c.attempt_id)
        assert row is not None and str(row["claim_token"]) == c.claim_token


async def test_the_token_is_in_no_index_and_renewals_stay_hot(app: App, conn: Any) -> None:
    app.agent("a")(_noop)
    await app.enqueue_async("a", {})
    indexed = await _row(
        conn,
        """SELECT count(*) AS n FROM pg_index i
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
           WHERE a.attname = 'claim_token'""",
    )
    assert indexed == {"n": 0}
    (claimed,) = await queue.claim_alone(conn, worker_id="w", agents=["a"], limit=1)
    counts = (
        "SELECT n_tup_upd AS updates, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables "
        "WHERE relname = 'tasks'"
    )
    # Inside one transaction, whose counts are not flushed meanwhile: the difference.
    async with conn.transaction(force_rollback=True):
        before = await _row(conn, counts)
        for _ in range(5):
            assert await queue.renew_leases(conn, {claimed.id: claimed.claim}) == {claimed.id}
        after = await _row(conn, counts)
    assert (after["updates"] - before["updates"], after["hot"] - before["hot"]) == (5, 5)
