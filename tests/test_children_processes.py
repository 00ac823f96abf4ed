"""Child tasks with real `conveyor worker` processes (docs/children.md): two workers ending
a parent's last two children at the same moment, a SIGKILL between the spawn and its
commit, a SIGKILL of the parent's worker while its children run, and a cancel of a parent
whose children run. The agents are tests/worker_app.py's fan_parent and fan_child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conveyor import App
from tests.conftest import wait_for
from tests.processes import ROOT


class Worker:
    """A `conveyor worker` process of tests/worker_app.py for the given agents only, with
    no task claimed ahead of a free slot (so that each child runs where it was claimed)."""

    def __init__(self, url: str, agents: list[str], *, concurrency: int = 1) -> None:
        args = [sys.executable, "-m", "conveyor.cli", "worker", "--app", "tests.worker_app:app"]
        args += ["--concurrency", str(concurrency), "--prefetch", "0"]
        for agent in agents:
            args += ["--agent", agent]
        env = {
            **os.environ,
            "CONVEYOR_DATABASE_URL": url,
            "CONVEYOR_POLL_INTERVAL": "0.2",
            "CONVEYOR_SWEEP_INTERVAL": "0.2",
            "PYTHONPATH": str(ROOT),
        }
        self.proc = subprocess.Popen(
            args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def workers(database_url: str) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


@pytest.fixture
async def app(database_url: str) -> Any:
    app = App(database_url=database_url)
    yield app
    await app.aclose()


async def _registered(conn: Any) -> None:
    """Wait until a worker has registered tests/worker_app.py's agents (a task of an
    agent nobody registered is refused)."""

    async def known() -> bool:
        rows = await _rows(
            conn, "SELECT name FROM agents WHERE name IN ('fan_parent', 'fan_child')"
        )
        return len(rows) == 2

    await wait_for(known, timeout=60, what="the agents registered")


async def _rows(conn: Any, sql: str, *params: Any) -> list[dict[str, Any]]:
    cur = await conn.execute(sql, params)
    return list(await cur.fetchall())


async def _children(conn: Any, parent: int) -> list[dict[str, Any]]:
    return await _rows(conn, "SELECT * FROM tasks WHERE parent_id = %s ORDER BY id", parent)


async def _attempts(conn: Any, task_id: int) -> list[str]:
    rows = await _rows(
        conn, "SELECT status FROM task_attempts WHERE task_id = %s ORDER BY attempt", task_id
    )
    return [r["status"] for r in rows]


async def _status(conn: Any, task_id: int) -> str:
    (row,) = await _rows(conn, "SELECT status FROM tasks WHERE id = %s", task_id)
    return str(row["status"])


async def _lock_waiters(url: str) -> int:
    """Workers' outcomes of this database waiting for a lock (not their lease renewals),
    read from a connection of its own: inside a transaction pg_stat_activity is a
    snapshot."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as look:
        cur = await look.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database() "
            "AND query LIKE '%conveyor_end_attempts%'"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def test_two_workers_ending_the_last_two_children_at_once_wake_the_parent_once(
    app: App, conn: Any, database_url: str, workers: list[Worker], tmp_path: Path
) -> None:
    gate = tmp_path / "children-gate"
    workers += [Worker(database_url, ["fan_parent", "fan_child"]) for _ in range(2)]
    await _registered(conn)
    parent = await app.enqueue_async("fan_parent", {"n": 2, "child_payload": {"gate": str(gate)}})

    async def both_children_running() -> bool:
        kids = await _children(conn, parent)
        return (
            len(kids) == 2
            and all(k["status"] == "processing" for k in kids)
            and len({k["locked_by"] for k in kids}) == 2
        )

    await wait_for(both_children_running, timeout=60, what="a child running on each worker")
    # Hold the parent's row: both workers' outcomes then wait on it, and end their child
    # in the same instant once it is let go.
    await conn.execute("BEGIN")
    await conn.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (parent,))
    gate.touch()
    await wait_for(
        lambda: _two(database_url),
        timeout=30,
        what="both workers' outcomes waiting for the parent's row",
    )
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listen:
        await listen.execute("LISTEN conveyor")
        await conn.execute("COMMIT")
        await wait_for(lambda: _is(conn, parent, "completed"), timeout=60, what="the parent")
        await conn.execute("NOTIFY conveyor, 'the end'")
        woken = 0
        async for note in listen.notifies(timeout=30):
            if note.payload == "the end":
                break
            message = json.loads(note.payload)
            woken += message["status"] == "enqueued" and parent in message.get("ids", [])
    assert woken == 1, "the parent was made runnable exactly once"
    assert await _attempts(conn, parent) == ["spawned", "succeeded"]
    kids = await _children(conn, parent)
    assert len({k["result"]["pid"] for k in kids}) == 2, "one child on each worker"
    assert [await _attempts(conn, k["id"]) for k in kids] == [["succeeded"]] * 2


async def _two(url: str) -> bool:
    return await _lock_waiters(url) == 2


async def _is(conn: Any, task_id: int, status: str) -> bool:
    return await _status(conn, task_id) == status


async def test_a_worker_killed_between_spawn_and_commit_spawns_nothing_twice(
    app: App, conn: Any, database_url: str, workers: list[Worker], tmp_path: Path
) -> None:
    gate = tmp_path / "parent-gate"
    first = Worker(database_url, ["fan_parent"])
    workers.append(first)
    await _registered(conn)
    parent = await app.enqueue_async("fan_parent", {"n": 5, "parent_gate": str(gate)})
    await wait_for(lambda: _is(conn, parent, "processing"), timeout=60, what="the parent runs")
    # The parent's row is held here: the worker's outcome (the spawn) waits for it, after
    # the agent returned and before the commit. Then the worker dies, and its
    # transaction with it.
    await conn.execute("BEGIN")
    await conn.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (parent,))
    gate.touch()
    await wait_for(
        lambda: _at_least_one(database_url), timeout=30, what="the spawn waiting for its commit"
    )
    first.kill()
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as admin:
        # The server learns of a dead client only when it next talks to it: end its
        # session as the server would once it noticed.
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
    await conn.execute("COMMIT")
    assert await _children(conn, parent) == [], "the spawn died with its transaction"
    workers.append(Worker(database_url, ["fan_parent", "fan_child"], concurrency=4))
    await wait_for(lambda: _is(conn, parent, "completed"), timeout=90, what="the parent")
    assert await _attempts(conn, parent) == ["lost", "spawned", "succeeded"]
    kids = await _children(conn, parent)
    assert [k["child_key"] for k in kids] == [f"c{i}" for i in range(5)]
    assert all([await _attempts(conn, k["id"]) == ["succeeded"] for k in kids])
    (row,) = await _rows(conn, "SELECT result FROM tasks WHERE id = %s", parent)
    assert row["result"]["children"] == 5 and row["result"]["sum"] == 10


async def _at_least_one(url: str) -> bool:
    return await _lock_waiters(url) >= 1


async def test_killing_the_parents_worker_while_its_children_run_changes_nothing(
    app: App, conn: Any, database_url: str, workers: list[Worker], tmp_path: Path
) -> None:
    gate = tmp_path / "children-gate"
    parents = Worker(database_url, ["fan_parent"])
    workers += [parents, Worker(database_url, ["fan_child"], concurrency=3)]
    await _registered(conn)
    parent = await app.enqueue_async("fan_parent", {"n": 3, "child_payload": {"gate": str(gate)}})

    async def children_running() -> bool:
        kids = await _children(conn, parent)
        return len(kids) == 3 and all(k["status"] == "processing" for k in kids)

    await wait_for(children_running, timeout=60, what="the children running")
    parents.kill()
    (row,) = await _rows(
        conn, "SELECT lease_expires_at, locked_by FROM tasks WHERE id = %s", parent
    )
    assert (row["lease_expires_at"], row["locked_by"]) == (None, None), "held by nobody"
    gate.touch()
    await wait_for(
        lambda: _all_children(conn, parent, "completed"), timeout=60, what="children done"
    )
    assert await _status(conn, parent) == "enqueued", "runnable, waiting for a worker"
    workers.append(Worker(database_url, ["fan_parent"]))
    await wait_for(lambda: _is(conn, parent, "completed"), timeout=60, what="the parent")
    assert await _attempts(conn, parent) == ["spawned", "succeeded"], "no attempt lost"


async def _all_children(conn: Any, parent: int, status: str) -> bool:
    kids = await _children(conn, parent)
    return bool(kids) and all(k["status"] == status for k in kids)


async def test_cancelling_a_parent_stops_its_running_children(
    app: App, conn: Any, database_url: str, workers: list[Worker], tmp_path: Path
) -> None:
    never = tmp_path / "never"
    workers.append(Worker(database_url, ["fan_parent", "fan_child"], concurrency=4))
    await _registered(conn)
    parent = await app.enqueue_async("fan_parent", {"n": 3, "child_payload": {"gate": str(never)}})

    async def children_running() -> bool:
        kids = await _children(conn, parent)
        return len(kids) == 3 and all(k["status"] == "processing" for k in kids)

    await wait_for(children_running, timeout=60, what="the children running")
    cancelled = await app.cancel_async(parent)
    assert cancelled.status == "cancelled"
    assert await _all_children(conn, parent, "cancelled")

    async def agents_stopped() -> bool:
        rows = await _rows(
            conn,
            "SELECT a.status, a.late_outcome FROM task_attempts a "
            "JOIN tasks t ON t.id = a.task_id WHERE t.parent_id = %s",
            parent,
        )
        # late_outcome 'cancelled': the worker stopped the agent and reported it.
        return len(rows) == 3 and all(
            (r["status"], r["late_outcome"]) == ("cancelled", "cancelled") for r in rows
        )

    await wait_for(agents_stopped, timeout=30, what="the workers stopped the children")
    assert await _attempts(conn, parent) == ["spawned"], "a cancelled parent does not run"
