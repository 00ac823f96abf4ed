"""A worker's LISTEN connection is opened again, with fresh credentials, before its token
expires (conveyor.listener), and the worker goes on hearing every enqueue.

Against the private server of tests/scram_server.py, whose role's password the test keeps
rotating, with a real `conveyor worker` process whose credentials provider gives tokens of
a few seconds. A watchdog plays a service that ends a connection whose token has expired:
it terminates any LISTEN connection of the role older than the token's life. The worker
polls only once a minute, so a task done within seconds of its enqueue was woken by its
NOTIFY. Before the listener renewed itself, the watchdog ended the worker's LISTEN
connection once per token life.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import psycopg

from conveyor import App
from conveyor.db.credentials import Credentials, register
from conveyor.listener import APPLICATION_NAME, Listener
from conveyor.settings import Settings
from tests import scram_server as scram
from tests.conftest import wait_for
from tests.processes import WorkerProcess
from tests.scram_server import Rotating

scram_server, rotating = scram.scram_server, scram.rotating

TOKEN_LIFE = 4.0  # seconds; a LISTEN connection is renewed at 80 % of it
FLOW_SECONDS = 14.0  # three token lives at least: three renewals at least
ROTATE_EVERY = 1.5  # the password a connection logged in with is soon dead
PROMPT = 5.0  # a task done within this of its enqueue was woken by NOTIFY (polls: 60 s)


async def _noop(task: Any) -> None:
    return None


async def test_a_worker_s_listen_is_renewed_before_its_token_expires(
    rotating: Rotating, tmp_path: Path
) -> None:
    def provider() -> dict[str, Any]:
        return rotating.provider() | {"expires_at": time.time() + TOKEN_LIFE}

    settings = Settings(database_url=rotating.url, home=tmp_path, listen=False)
    client = App(settings=settings, credentials=provider)  # enqueues; does not listen
    client.agent("noop")(_noop)
    await client.database()  # migrated, the agent registered
    worker = WorkerProcess(
        rotating.url,
        concurrency=2,
        env=rotating.env(TOKEN_LIFE) | {"CONVEYOR_POLL_INTERVAL": "60"},
        log_path=tmp_path / "worker.log",
    )
    # pid -> (backend_start, last seen), for the role's LISTEN connections: the worker's
    # (by their application_name: the last query of one is also the worker's idle claim).
    seen: dict[int, tuple[float, float]] = {}
    killed = 0
    stop = asyncio.Event()

    async def watch(admin: psycopg.AsyncConnection[Any]) -> None:
        # The service's side: a LISTEN connection that outlived its token is ended.
        nonlocal killed
        while not stop.is_set():
            cur = await admin.execute(
                "SELECT pid, extract(epoch FROM backend_start)::float8,"
                " extract(epoch FROM now())::float8,"
                " CASE WHEN backend_start < now() - make_interval(secs => %s)"
                "   THEN pg_terminate_backend(pid) ELSE false END"
                " FROM pg_stat_activity WHERE usename = %s AND application_name = %s",
                (TOKEN_LIFE, rotating.role, APPLICATION_NAME),
            )
            for pid, started, now, ended in await cur.fetchall():
                seen[pid] = (started, now)
                killed += bool(ended)
            await asyncio.sleep(0.1)

    async def rotate() -> None:
        while not stop.is_set():
            await asyncio.sleep(ROTATE_EVERY)
            await asyncio.to_thread(rotating.rotate)

    done: list[int] = []
    try:
        async with await psycopg.AsyncConnection.connect(
            rotating.admin_url, autocommit=True
        ) as admin:
            background = [asyncio.create_task(watch(admin)), asyncio.create_task(rotate())]
            try:
                await wait_for(lambda: seen, timeout=30, what="the worker's LISTEN connection")
                began = time.monotonic()
                while time.monotonic() - began < FLOW_SECONDS:
                    task_id = await client.enqueue_async("noop", {})

                    async def completed(task_id: int = task_id) -> bool:
                        return (await client.get_task_async(task_id)).status == "completed"

                    await wait_for(
                        completed, timeout=PROMPT, interval=0.05, what=f"task {task_id} done"
                    )
                    done.append(task_id)
                    assert worker.proc.poll() is None, worker.output()[-3000:]
            finally:
                stop.set()
                await asyncio.gather(*background)
        async with client.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS attempts, count(DISTINCT task_id) AS tasks,"
                " count(*) FILTER (WHERE status <> 'succeeded') AS other FROM task_attempts"
            )
            attempts = await cur.fetchone()
        assert worker.proc.poll() is None, worker.output()[-3000:]  # no worker exit
        log = worker.output()
    finally:
        worker.close()
        await client.aclose()

    assert killed == 0, log[-3000:]  # no LISTEN connection outlived its token
    # ... and each was replaced before its token's end, several times over the flow.
    lives = {pid: round(last - started, 2) for pid, (started, last) in seen.items()}
    assert len(seen) >= 1 + int(FLOW_SECONDS // TOKEN_LIFE), lives
    assert max(lives.values()) < TOKEN_LIFE, lives
    assert rotating.rotations >= FLOW_SECONDS // ROTATE_EVERY - 1
    # Every task, enqueued one at a time, was done promptly and once.
    assert attempts == {"attempts": len(done), "tasks": len(done), "other": 0}
    assert len(done) >= 10
    assert "LISTEN connection lost" not in log
    print(
        f"\n{len(done)} tasks one at a time in {FLOW_SECONDS:g} s, {rotating.rotations} "
        f"rotations, {len(seen)} LISTEN connections lived {sorted(lives.values())} s, "
        f"{log.count('LISTEN connection renewed')} renewals logged"
    )


async def test_a_renewal_that_cannot_connect_keeps_the_old_connection(rotating: Rotating) -> None:
    """While no fresh credentials come (the token service is down), the old connection goes
    on listening and the renewal is tried again each second; then it renews."""
    failing = False

    def provider() -> dict[str, Any]:
        if failing:
            raise RuntimeError("the token service is down")
        return rotating.provider() | {"expires_at": time.time() + 2.0}

    credentials = Credentials(provider, timeout=2.0)
    register(rotating.url, credentials)
    heard: list[int] = []
    reconnects: list[None] = []
    listener = Listener(
        rotating.url,
        lambda event: heard.extend(event["ids"]),
        on_reconnect=lambda: reconnects.append(None),
    )
    running = asyncio.create_task(listener.run())

    async def notify(task_id: int) -> None:
        async with await psycopg.AsyncConnection.connect(
            rotating.url, password=rotating.password, autocommit=True
        ) as conn:
            payload = json.dumps({"agent": "a", "status": "enqueued", "ids": [task_id]})
            await conn.execute("SELECT pg_notify('conveyor', %s)", (payload,))

    try:
        assert await listener.wait_listening(10.0)
        failing = True
        renewals, calls = listener.renewals, credentials.calls
        await wait_for(lambda: credentials.calls >= calls + 2, what="two renewals tried")
        await notify(1)
        await wait_for(lambda: 1 in heard, what="a NOTIFY on the old connection")
        assert listener.renewals == renewals
        failing = False
        await wait_for(lambda: listener.renewals > renewals, what="a renewal")
        await notify(2)
        await wait_for(lambda: 2 in heard, what="a NOTIFY on the fresh connection")
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert set(heard) == {1, 2}
    assert len(reconnects) == listener.renewals  # each renewal says: look again
