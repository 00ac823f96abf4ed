"""The event stream's LISTEN connection is opened again, with fresh credentials, before its
token expires (conveyor.web.handover), and not one NOTIFY is lost or repeated meanwhile.

Against the private server of tests/scram_server.py, whose role's password the test keeps
rotating. A watchdog plays a service that ends a connection whose token has expired: it
terminates any LISTEN connection of the role older than the token's life. Before the
handover existed, it killed the stream's connection every few seconds, and each time the
clients got a `refresh` and the events sent meanwhile were lost.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from conveyor import App
from conveyor.db.credentials import Credentials, register
from conveyor.settings import Settings
from conveyor.web import create_app
from conveyor.web.events import EventHub
from conveyor.web.handover import RenewingListener
from conveyor.web.serve import make_server
from tests import scram_server as scram
from tests.conftest import wait_for
from tests.scram_server import Rotating

scram_server, rotating = scram.scram_server, scram.rotating

TOKEN_LIFE = 6.0  # seconds; the LISTEN connection is replaced at 80 % of it
FLOW_SECONDS = 16.0  # long enough for two handovers at least


async def _noop(task: Any) -> None:
    return None


@asynccontextmanager
async def _serving(app: App) -> AsyncIterator[tuple[str, EventHub]]:
    api = create_app(app)
    server = make_server(api, "127.0.0.1", 0, token=None)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", api.state.events
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def test_the_stream_s_listen_is_handed_over_before_its_token_expires(
    rotating: Rotating, tmp_path: Path
) -> None:
    def provider() -> dict[str, Any]:
        return rotating.provider() | {"expires_at": time.time() + TOKEN_LIFE}

    settings = Settings(database_url=rotating.url, home=tmp_path, poll_interval=0.2)
    web = App(settings=settings, credentials=provider)
    web.agent("noop")(_noop)  # nobody works it: each enqueue is one event, "enqueued"
    sent: list[int] = []
    heard: list[int] = []
    kinds: dict[str, int] = {}
    killed = 0
    flowing = asyncio.Event()
    try:
        async with _serving(web) as (base, hub), httpx.AsyncClient(base_url=base) as http:

            async def watch() -> None:
                kind = ""
                async with http.stream("GET", "/api/events", timeout=None) as response:
                    assert response.status_code == 200
                    async for line in response.aiter_lines():
                        if line.startswith("event: "):
                            kind = line.removeprefix("event: ")
                            kinds[kind] = kinds.get(kind, 0) + 1
                        elif line.startswith("data: ") and kind == "task":
                            data = json.loads(line.removeprefix("data: "))
                            heard.extend(data["ids"] if "ids" in data else [data["id"]])

            async def expire_tokens() -> None:
                # The service's side: a LISTEN connection that outlived its token is ended.
                nonlocal killed
                async with await psycopg.AsyncConnection.connect(
                    rotating.admin_url, autocommit=True
                ) as admin:
                    while True:
                        cur = await admin.execute(
                            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n"
                            " FROM pg_stat_activity WHERE usename = %s"
                            " AND query = 'LISTEN conveyor'"
                            " AND backend_start < now() - make_interval(secs => %s)",
                            (rotating.role, TOKEN_LIFE),
                        )
                        row = await cur.fetchone()
                        killed += row[0] if row else 0
                        await asyncio.sleep(0.1)

            async def rotate() -> None:
                while True:
                    await asyncio.sleep(2.0)
                    await asyncio.to_thread(rotating.rotate)

            async def enqueue() -> None:
                began = time.monotonic()
                flowing.set()
                while time.monotonic() - began < FLOW_SECONDS:
                    sent.extend(await web.enqueue_many_async([{"agent": "noop"}] * 3))
                    await asyncio.sleep(0.03)

            watching = asyncio.create_task(watch())
            await wait_for(lambda: hub.clients, what="the stream's subscription")
            background = [asyncio.create_task(expire_tokens()), asyncio.create_task(rotate())]
            try:
                await enqueue()
                await wait_for(
                    lambda: len(heard) >= len(sent), timeout=15, what="every event on the stream"
                )
            finally:
                for task in [watching, *background]:
                    task.cancel()
                await asyncio.gather(watching, *background, return_exceptions=True)
            listener = hub._listener
            assert isinstance(listener, RenewingListener)
            handovers = listener.handovers
    finally:
        await web.aclose()

    assert killed == 0  # no LISTEN connection outlived its token
    assert handovers >= 2, handovers
    assert rotating.rotations >= 5
    assert sorted(heard) == sorted(sent)  # each event once: none lost, none repeated
    assert "refresh" not in kinds, kinds  # and the clients had nothing to reread
    assert len(sent) > 300


async def test_a_handover_that_cannot_finish_keeps_the_old_connection(rotating: Rotating) -> None:
    """While the marker cannot be sent (the pool is down, say), the old connection goes on
    listening and the handover is retried; once it can, it finishes: nothing lost."""
    register(
        rotating.url,
        Credentials(lambda: rotating.provider() | {"expires_at": time.time() + 2.0}),
    )
    failing = True
    tried = 0
    heard: list[int] = []
    refreshes: list[None] = []

    async def notify(payload: str) -> None:
        nonlocal tried
        tried += 1
        if failing:
            raise psycopg.OperationalError("the pool is unavailable")
        await _notify(rotating, payload)

    listener = RenewingListener(
        rotating.url,
        lambda event: heard.extend(event["ids"]),
        on_reconnect=lambda: refreshes.append(None),
        notify=notify,
        timeout=2.0,
    )
    running = asyncio.create_task(listener.run())
    try:
        assert await listener.wait_listening(10.0)
        sent = 0
        while tried < 3:  # three handovers refused, each retried a second later
            sent += 1
            await _notify(rotating, json.dumps({"agent": "a", "status": "enqueued", "ids": [sent]}))
            await asyncio.sleep(0.05)
        failing = False
        await wait_for(lambda: listener.handovers >= 1, timeout=10, what="a handover")
        for _ in range(5):
            sent += 1
            await _notify(rotating, json.dumps({"agent": "a", "status": "enqueued", "ids": [sent]}))
        await wait_for(lambda: len(heard) >= sent, what="every NOTIFY")
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert heard == list(range(1, sent + 1))
    assert not refreshes


async def _notify(rotating: Rotating, payload: str) -> None:
    async with await psycopg.AsyncConnection.connect(
        rotating.url, password=rotating.password, autocommit=True
    ) as conn:
        await conn.execute("SELECT pg_notify('conveyor', %s)", (payload,))
