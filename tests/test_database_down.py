"""A database that stops answering, or restarts: every call is bounded, fails fast with
DatabaseUnavailable (503 JSON over HTTP) while the database is away, and works again soon
after it is back.

The hung database is a real TCP proxy on loopback in front of PostgreSQL that stops
forwarding without closing anything, as a hung server, a stuck proxy or a frozen VM does.
The restarting one is a private embedded PostgreSQL, stopped and started by the test (the
machine's shared server is left alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from conveyor import App, DatabaseUnavailable
from conveyor.db.embedded import EmbeddedPostgres
from conveyor.db.pool import GRACE
from conveyor.listener import Listener
from conveyor.settings import Settings
from tests.conftest import wait_for
from tests.servers import own_server
from tests.web import serving

STATEMENT_TIMEOUT = 1.0
#: How long a call may take on a hung database: the client's deadline, plus room for a
#: busy machine.
BOUND = STATEMENT_TIMEOUT + GRACE + 2.0
#: How long a call may take once the outage is known (at once, but on a busy machine).
FAST = 1.0


class HangingProxy:
    """Forwards TCP to PostgreSQL until `hang()`: then it reads and holds everything, in
    both directions and on new connections too, and closes nothing. `resume()` forwards
    again (what was held first). Runs its own event loop in a thread."""

    def __init__(self, url: str) -> None:
        info = conninfo_to_dict(url)
        self._target = (str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432))
        self._url = url
        self._loop = asyncio.new_event_loop()
        self._forwarding = asyncio.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self.port = 0

    def __enter__(self) -> HangingProxy:
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return make_conninfo(self._url, host="127.0.0.1", port=str(self.port))

    def hang(self) -> None:
        self._loop.call_soon_threadsafe(self._forwarding.clear)

    def resume(self) -> None:
        self._loop.call_soon_threadsafe(self._forwarding.set)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._forwarding.set()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(client_w)
        writers = [client_w]
        try:
            await self._forwarding.wait()
            server_r, server_w = await asyncio.open_connection(*self._target)
            writers.append(server_w)
            self._writers.add(server_w)
            await asyncio.gather(self._pump(client_r, server_w), self._pump(server_r, client_w))
        except (OSError, asyncio.CancelledError):
            pass  # a side closed, or the proxy is closing
        finally:
            for writer in writers:
                writer.close()
                self._writers.discard(writer)
            self._handlers.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            await self._forwarding.wait()
            writer.write(data)
            await writer.drain()


def _app(url: str, home: Path) -> App:
    app = App(settings=Settings(database_url=url, home=home, statement_timeout=STATEMENT_TIMEOUT))

    @app.agent("a")
    async def a(task: Any) -> None:
        return None

    return app


def test_enqueue_on_a_hung_database_raises_within_its_bound(
    database_url: str, tmp_path: Path
) -> None:
    with HangingProxy(database_url) as proxy:
        app = _app(proxy.url, tmp_path)
        try:
            assert app.enqueue("a", {}) > 0
            proxy.hang()
            began = time.monotonic()
            with pytest.raises(DatabaseUnavailable, match="did not answer within"):
                app.enqueue("a", {})
            assert time.monotonic() - began < BOUND

            # The outage is known now: the next calls fail at once, every kind of them.
            for call in (lambda: app.enqueue("a", {}), lambda: app.get_task(1)):
                began = time.monotonic()
                with pytest.raises(DatabaseUnavailable, match="unavailable"):
                    call()
                assert time.monotonic() - began < FAST

            proxy.resume()
            deadline = time.monotonic() + 10
            while True:
                try:
                    assert app.enqueue("a", {}) > 0
                    break
                except DatabaseUnavailable:
                    assert time.monotonic() < deadline, "never recovered"
                    time.sleep(0.05)
        finally:
            proxy.resume()
            app.close()


async def test_a_hung_database_answers_503_json_quickly(database_url: str, tmp_path: Path) -> None:
    with HangingProxy(database_url) as proxy:
        app = _app(proxy.url, tmp_path)
        async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert (await http.get("/api/tasks")).status_code == 200
            proxy.hang()
            for bound in (BOUND, FAST, FAST):
                began = time.monotonic()
                response = await http.get("/api/tasks")
                assert time.monotonic() - began < bound
                assert response.status_code == 503
                assert response.json()["error"]["code"] == "database_unavailable"
                assert response.headers["retry-after"] == "1"
            proxy.resume()
        await app.aclose()


@pytest.fixture(scope="module")
def private_server() -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL of this module's own, to stop and start."""
    with own_server("conveyor-test-down-") as server:
        yield server


@pytest.fixture
async def restartable(private_server: EmbeddedPostgres, tmp_path: Path) -> AsyncIterator[App]:
    await asyncio.to_thread(private_server.start)
    app = _app(private_server.url, tmp_path)
    try:
        yield app
    finally:
        await asyncio.to_thread(private_server.start)
        await app.aclose()


async def _until_it_works(http: httpx.AsyncClient, timeout: float) -> float:
    """Seconds until GET /api/tasks answers 200 (every answer meanwhile a quick 503)."""
    began = time.monotonic()
    while True:
        asked = time.monotonic()
        response = await http.get("/api/tasks")
        if response.status_code == 200:
            return time.monotonic() - began
        assert response.status_code == 503, response.text
        assert time.monotonic() - asked < FAST
        assert time.monotonic() - began < timeout, "the web app never recovered"
        await asyncio.sleep(0.02)


async def test_requests_fail_fast_while_postgresql_is_down_and_work_within_a_second_of_its_return(
    restartable: App, private_server: EmbeddedPostgres
) -> None:
    app = restartable
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:
        assert (await http.get("/api/tasks")).status_code == 200
        await app.enqueue_async("a", {})
        await asyncio.to_thread(private_server.stop)

        # Down: the first call finds out, every one after fails at once; none waits.
        slowest = 0.0
        for _ in range(30):
            began = time.monotonic()
            with pytest.raises(DatabaseUnavailable):
                await app.enqueue_async("a", {})
            slowest = max(slowest, time.monotonic() - began)
            response = await http.get("/api/tasks")
            assert response.status_code == 503
            assert response.json()["error"]["code"] == "database_unavailable"
        assert slowest < FAST

        await asyncio.to_thread(private_server.start)  # returns once it accepts connections
        assert await _until_it_works(http, timeout=5.0) < 1.0
        assert await app.enqueue_async("a", {}) > 0


async def test_many_clients_during_a_restart_get_quick_503s_and_then_200s(
    restartable: App, private_server: EmbeddedPostgres
) -> None:
    """Requests in flight and queued for a connection when the server goes: none waits
    for the pool's timeout (10 s), as they all did before."""
    app = restartable
    answers: list[tuple[float, float, int]] = []  # (asked at, took, status)
    stop = asyncio.Event()
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:

        async def client() -> None:
            while not stop.is_set():
                asked = time.monotonic()
                response = await http.get("/api/tasks")
                answers.append((asked, time.monotonic() - asked, response.status_code))

        clients = [asyncio.create_task(client()) for _ in range(10)]
        await wait_for(lambda: len(answers) > 20, what="requests")
        down = time.monotonic()
        await asyncio.to_thread(private_server.stop)
        await wait_for(lambda: [a for a in answers if a[0] > down and a[2] == 503], what="503s")
        await asyncio.to_thread(private_server.start)
        back = time.monotonic()
        await wait_for(lambda: [a for a in answers if a[0] > back + 1.0], what="requests")
        stop.set()
        await asyncio.gather(*clients)
    during = [a for a in answers if down <= a[0] < back]
    assert {status for _, _, status in during} <= {200, 503}
    assert max(took for _, took, _ in during) < 5.0
    settled = [a for a in answers if a[0] >= back + 1.0]
    assert settled and all(status == 200 for _, _, status in settled)


async def test_a_restart_between_requests_costs_no_failed_request(
    restartable: App, private_server: EmbeddedPostgres
) -> None:
    app = restartable
    await app.enqueue_async("a", {})
    await asyncio.to_thread(private_server.restart)
    # The pooled connections died with the old server: they are checked (they have been
    # idle for longer than the restart took) and replaced, not handed out.
    await asyncio.sleep(1.1)
    assert await app.enqueue_async("a", {}) > 0


async def test_events_flow_again_within_a_second_of_the_servers_return(
    private_server: EmbeddedPostgres,
) -> None:
    await asyncio.to_thread(private_server.start)
    reconnected = asyncio.Event()
    heard: list[dict[str, Any]] = []
    listener = Listener(private_server.url, heard.append, on_reconnect=reconnected.set)
    listening = asyncio.create_task(listener.run())
    try:
        assert await listener.wait_listening(10)
        await asyncio.to_thread(private_server.stop)
        # The length of the outage, not a wait for something: long enough for a backoff
        # that kept doubling to sleep past the server's return.
        await asyncio.sleep(5)
        await asyncio.to_thread(private_server.start)
        back = time.monotonic()
        await asyncio.wait_for(reconnected.wait(), 10)
        assert time.monotonic() - back < 1.0
        async with await psycopg.AsyncConnection.connect(private_server.url) as conn:
            await conn.execute("SELECT pg_notify('conveyor', '{\"agent\": \"a\"}')")
        await wait_for(lambda: heard, timeout=5, what="the NOTIFY")
    finally:
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listening
        await listener.close()


async def test_pooled_connections_carry_the_server_side_bounds(
    database_url: str, tmp_path: Path
) -> None:
    app = _app(database_url, tmp_path)
    try:
        async with app.connection() as conn:  # after the migration's longer bound
            cur = await conn.execute(
                "SELECT current_setting('statement_timeout') AS statement,"
                " current_setting('idle_in_transaction_session_timeout') AS idle"
            )
            assert await cur.fetchone() == {"statement": "1s", "idle": "1s"}
        with pytest.raises(DatabaseUnavailable, match=r"statement timeout.*STATEMENT_TIMEOUT"):
            async with app.connection() as conn:
                await conn.execute("SELECT pg_sleep(5)")
        # A server that answers is not an outage.
        assert await app.enqueue_async("a", {}) > 0
    finally:
        await app.aclose()
