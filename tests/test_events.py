"""GET /api/events over real HTTP: a real server on loopback, a real database, real NOTIFYs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from conveyor import App
from conveyor.settings import Settings
from conveyor.web import create_app
from conveyor.web.events import EventHub
from conveyor.web.serve import make_server
from tests.conftest import wait_for

LONG = "a-long-agent-name-" * 5  # bigger events fill a stuck client's buffers sooner


async def _noop(task: Any) -> None:
    return None


@asynccontextmanager
async def serving_api(
    settings: Settings, tune: Callable[[EventHub], None] = lambda hub: None
) -> AsyncIterator[tuple[str, App, EventHub]]:
    """A web server like tests/web.py's, with the hub at hand to tune and inspect."""
    app = App(settings=settings)
    app.agent("invoice")(_noop)
    app.agent("contract")(_noop)
    app.agent(LONG)(_noop)
    api: FastAPI = create_app(app)
    hub: EventHub = api.state.events
    tune(hub)
    server = make_server(api, "127.0.0.1", 0, token=settings.api_token)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app, hub
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)  # an open stream must not hold the shutdown up


class Stream:
    """An SSE client: events parsed as the specification says (field lines, blank line)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.comments: list[str] = []

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        event: dict[str, Any] = {}
        async with asyncio.timeout(timeout):
            async for line in self.lines:
                if line == "":
                    if "event" in event or "data" in event:
                        if "data" in event:
                            event["data"] = json.loads(event["data"])
                        return event
                    continue
                if line.startswith(":"):
                    self.comments.append(line)
                    continue
                name, _, value = line.partition(": ")
                event[name] = value
        raise AssertionError("the stream ended")

    async def next_of(self, kind: str, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                event = await self.next(timeout)
                if event.get("event") == kind:
                    return event


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient, path: str = "/api/events", **kwargs: Any
) -> AsyncIterator[Stream]:
    async with client.stream("GET", path, **kwargs) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Stream(response)


async def test_every_status_change_is_an_event_with_increasing_ids(settings: Settings) -> None:
    async with (
        serving_api(settings) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as events,
    ):
        await wait_for(lambda: hub.clients, what="the subscription")
        first, second = await app.enqueue_many_async([{"agent": "invoice"}, {"agent": "contract"}])
        await app.cancel_async(first)
        seen = [await events.next_of("task") for _ in range(3)]
    # One INSERT NOTIFYs once per agent, in no particular order; the cancel comes after.
    enqueued = sorted((e["data"] for e in seen[:2]), key=lambda d: d["id"])
    assert enqueued == [
        {"id": first, "agent": "invoice", "status": "enqueued"},
        {"id": second, "agent": "contract", "status": "enqueued"},
    ]
    assert seen[2]["data"] == {"id": first, "agent": "invoice", "status": "cancelled"}
    sequences = [int(e["id"].split("-")[1]) for e in seen]
    assert sequences == sorted(sequences) and len(set(sequences)) == 3
    assert not hub.clients  # the client went away, and so did its subscription


async def test_filters_by_agent_and_status(settings: Settings) -> None:
    async with (
        serving_api(settings) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client, params={"agent": "contract", "status": "cancelled"}) as events,
    ):
        await wait_for(lambda: hub.clients, what="the subscription")
        invoice, contract = await app.enqueue_many_async(
            [{"agent": "invoice"}, {"agent": "contract"}]
        )
        await app.cancel_async(invoice)
        await app.cancel_async(contract)
        event = await events.next_of("task")
        assert event["data"] == {"id": contract, "agent": "contract", "status": "cancelled"}
        bad = await client.get("/api/events", params={"status": "done"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


async def test_a_large_statement_is_one_counted_event(settings: Settings) -> None:
    async with (
        serving_api(settings) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as events,
    ):
        await wait_for(lambda: hub.clients, what="the subscription")
        await app.enqueue_many_async([{"agent": "invoice"} for _ in range(250)])
        event = await events.next_of("task")
    assert event["data"] == {"agent": "invoice", "status": "enqueued", "count": 250}


async def test_under_heavy_fan_out_a_statement_is_one_event_naming_its_tasks(
    settings: Settings,
) -> None:
    def heavy_from_one_client(hub: EventHub) -> None:
        hub.coalesce_from = 1

    async with (
        serving_api(settings, heavy_from_one_client) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as events,
    ):
        await wait_for(lambda: hub.clients, what="the subscription")
        ids = await app.enqueue_many_async([{"agent": "invoice"} for _ in range(5)])
        (single,) = await app.enqueue_many_async([{"agent": "invoice"}])
        several, one = await events.next_of("task"), await events.next_of("task")
    assert several["data"] == {"agent": "invoice", "status": "enqueued", "ids": sorted(ids)}
    # A statement that changed one task is the same size either way: the usual form.
    assert one["data"] == {"id": single, "agent": "invoice", "status": "enqueued"}


async def test_one_event_naming_a_statement_s_tasks_is_a_fraction_of_their_events() -> None:
    hub = EventHub()
    hub.ring_size = 64
    ids = list(range(1_234_567, 1_234_583))  # a worker finishes up to 16 tasks at once
    notify = {"agent": "invoice", "status": "completed", "ids": ids}

    def wire_bytes(clients: int) -> int:
        hub.coalesce_from, hub.head, hub._ring = clients, 0, [None] * hub.ring_size
        hub._on_notify(notify)  # as the LISTEN connection hands it over
        return sum(len(e.wire) for e in hub._ring if e is not None)

    coalesced, separate = wire_bytes(0), wire_bytes(10**9)
    assert separate > 1_400 and coalesced * 5 < separate, (coalesced, separate)


async def test_resume_with_last_event_id(settings: Settings) -> None:
    async with (
        serving_api(settings) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        async with stream(client) as events:
            await wait_for(lambda: hub.clients, what="the subscription")
            (seen_id,) = await app.enqueue_many_async([{"agent": "invoice"}])
            last = await events.next_of("task")
            assert last["data"]["id"] == seen_id
        missed = await app.enqueue_many_async([{"agent": "invoice"}, {"agent": "invoice"}])
        await wait_for(lambda: hub.head >= 3, what="the missed events at the hub")
        async with stream(client, headers={"Last-Event-ID": last["id"]}) as events:
            resumed = [await events.next_of("task") for _ in range(2)]
            assert [e["data"]["id"] for e in resumed] == missed
        # An id from another process (or from before a restart) cannot be resumed.
        async with stream(client, headers={"Last-Event-ID": "0badc0de-2"}) as events:
            refresh = await events.next()
            assert refresh["event"] == "refresh"
            assert refresh["data"] == {"reason": "unknown_last_event_id"}
            assert refresh["id"] == hub.event_id(hub.head)


async def test_heartbeats_in_the_silences(settings: Settings) -> None:
    def tune(hub: EventHub) -> None:
        hub.heartbeat = 0.1

    async with (
        serving_api(settings, tune) as (url, _app, _hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as events,
    ):
        ping = await events.next(timeout=5)
        assert ping["event"] == "ping"
        assert events.comments == [": heartbeat"]


async def test_a_listen_reconnect_tells_every_client_to_refresh(
    settings: Settings, conn: psycopg.AsyncConnection[Any]
) -> None:
    async with (
        serving_api(settings) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as first,
        stream(client, params={"agent": "contract"}) as second,
    ):
        await wait_for(lambda: len(hub.clients) == 2, what="the subscriptions")
        cur = await conn.execute(
            "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity"
            " WHERE datname = current_database() AND query = 'LISTEN conveyor'"
        )
        assert [r["killed"] for r in await cur.fetchall()] == [True]  # one LISTEN, not one a client
        for events in (first, second):
            refresh = await events.next_of("refresh", timeout=10)
            assert refresh["data"] == {"reason": "reconnected"}
        (task_id,) = await app.enqueue_many_async([{"agent": "invoice"}])
        assert (await first.next_of("task"))["data"]["id"] == task_id  # listening again


async def test_a_slow_client_is_dropped_and_does_not_slow_the_others(settings: Settings) -> None:
    def tune(hub: EventHub) -> None:
        # Larger than 4/3 of a statement's 200 events, so that a client behind by one
        # statement gets its events, not a coalescing refresh (a few bytes).
        hub.ring_size = 512
        hub.sweep_interval = 0.05

    async with (
        serving_api(settings, tune) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
        stream(client) as reader,
    ):
        await wait_for(lambda: hub.clients, what="the reader's subscription")
        (reader_client,) = hub.clients
        # A client that asks and never reads: a tiny receive buffer fills, then the
        # server's socket, then uvicorn's own buffer, and the server's write blocks.
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        stuck.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            await wait_for(lambda: len(hub.clients) == 2, what="both subscriptions")
            (stuck_client,) = hub.clients - {reader_client}
            count = 0
            while not stuck_client.dropped:
                # Status changes in statements of 200 tasks (each NOTIFY names them all).
                ids = await app.enqueue_many_async([{"agent": LONG} for _ in range(200)])
                count += len(ids)
                # ... and the reader keeps up with all of them, or is told to refresh.
                while True:
                    event = await reader.next(timeout=5)
                    if event["event"] == "refresh" or event["data"].get("id") == ids[-1]:
                        break
                assert count < 100_000, "the stuck client was never dropped"
            await wait_for(lambda: len(hub.clients) == 1, what="the drop")
            # The server closed the stuck connection: reading it to the end finds EOF.
            stuck.setblocking(False)
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(10):
                while await loop.sock_recv(stuck, 1 << 20):
                    pass
        finally:
            stuck.close()
        (task_id,) = await app.enqueue_many_async([{"agent": "contract"}])
        while (await reader.next_of("task"))["data"].get("id") != task_id:
            pass


async def test_streams_end_when_the_server_stops(settings: Settings) -> None:
    async with (
        serving_api(settings) as (url, _app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        response = await client.send(client.build_request("GET", "/api/events"), stream=True)
        await wait_for(lambda: hub.clients, what="the subscription")
    # serving_api's exit waited for the server with a timeout: it did not hang on the stream
    with contextlib.suppress(httpx.HTTPError):
        await response.aread()
    await response.aclose()


async def test_no_listen_no_stream(settings: Settings) -> None:
    async with (
        serving_api(replace(settings, listen=False)) as (url, _app, _hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        answer = await client.get("/api/events")
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "events_unavailable"


@pytest.mark.parametrize("where", ["cookie", "header"])
async def test_with_a_token_the_stream_needs_it(settings: Settings, where: str) -> None:
    async with (
        serving_api(replace(settings, api_token="s3cret")) as (url, app, hub),
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        refused = await client.get("/api/events")
        assert refused.status_code == 401
        if where == "header":
            client.headers["Authorization"] = "Bearer s3cret"
        else:
            login = await client.post("/login", data={"token": "s3cret"})
            assert login.status_code == 303 and "HttpOnly" in login.headers["set-cookie"]
        async with stream(client) as events:
            await wait_for(lambda: hub.clients, what="the subscription")
            (task_id,) = await app.enqueue_many_async([{"agent": "invoice"}])
            assert (await events.next_of("task"))["data"]["id"] == task_id


def test_submit_wait_draws_a_progress_bar_on_a_terminal(database_url: str, tmp_path: Path) -> None:
    """`conveyor submit --wait` on a terminal (a pty): a rich bar fed by LISTEN."""
    from tests.processes import ROOT, WorkerProcess
    from tests.test_cli import _pdf

    files = [str(_pdf(tmp_path / f"{n}.pdf", pages=n)) for n in (1, 2, 3)]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CONVEYOR_DATABASE_URL": database_url,
        "CONVEYOR_HOME": str(tmp_path / "home"),
        "COLUMNS": "100",
        "TERM": "xterm",
    }
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name) VALUES ('pages') ON CONFLICT DO NOTHING")
    worker = WorkerProcess(database_url, concurrency=2, env={"CONVEYOR_HOME": env["CONVEYOR_HOME"]})
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "conveyor.cli", "submit", *files, "--agent", "pages", "--wait"],
            stdin=subprocess.DEVNULL,
            stdout=secondary,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        os.close(secondary)
        output = b""
        with contextlib.suppress(OSError):  # EIO: the child closed the terminal
            while chunk := os.read(primary, 65536):
                output += chunk
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(primary)
        worker.close()
        if proc.stderr:
            proc.stderr.close()
    text = output.decode(errors="replace")
    assert "3/3" in text and "3 completed" in text
    assert text.count(": \x1b") + text.count(": completed") >= 3  # a line per task, coloured
