"""Database credentials that rotate (conveyor.db.credentials), against a PostgreSQL that
checks passwords: a private embedded server, a role whose password the test changes with
ALTER ROLE (tests/scram_server.py), a provider that reads the current one from a file
(tests/rotating_password.py), in the test's process and in real worker processes alike.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from conveyor import App, DatabaseUnavailable
from conveyor.db.credentials import (
    Credentials,
    CredentialsUnavailable,
    Entra,
    Lakebase,
    RdsIam,
    is_auth_failure,
    load,
)
from conveyor.listener import Listener
from conveyor.settings import Settings, SettingsError
from tests import scram_server as scram
from tests.conftest import wait_for
from tests.processes import WorkerProcess
from tests.scram_server import PROVIDER, Rotating
from tests.web import serving

# The fixtures of the private server and its rotating role (tests/scram_server.py).
scram_server, rotating = scram.scram_server, scram.rotating


def _settings(url: str, home: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(
        database_url=url, home=home, poll_interval=0.2, sweep_interval=0.2, shutdown_timeout=5
    )
    return Settings(**(values | overrides))


@pytest.fixture
async def app_factory(tmp_path: Path) -> AsyncIterator[Any]:
    apps: list[App] = []

    def make(url: str, credentials: Any, **settings: Any) -> App:
        app = App(settings=_settings(url, tmp_path, **settings), credentials=credentials)
        app.agent("noop")(_noop)
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.aclose()


async def _noop(task: Any) -> None:
    return None


# ---- the premise: this server checks passwords --------------------------------------------


def test_the_private_server_refuses_a_wrong_password(rotating: Rotating) -> None:
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(rotating.url, password="wrong", connect_timeout=5)
    assert is_auth_failure(refused.value)
    with psycopg.connect(rotating.url, password=rotating.password, connect_timeout=5) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (rotating.role,)


# ---- rotation -------------------------------------------------------------------------------


async def test_a_rotated_password_needs_no_restart(rotating: Rotating, app_factory: Any) -> None:
    app = app_factory(rotating.url, rotating.provider)
    first = await app.enqueue_async("noop", {})
    old = rotating.password
    rotating.rotate()
    with pytest.raises(psycopg.OperationalError):  # the old password is dead now
        await psycopg.AsyncConnection.connect(rotating.url, password=old, connect_timeout=5)

    # The pool's connections from before go on; new ones (a second App's pool, the LISTEN
    # connection, opened from the URL alone) ask the provider and get the new password.
    assert (await app.get_task_async(first)).id == first
    other = app_factory(rotating.url, rotating.provider)
    assert await other.enqueue_async("noop", {}) > first
    heard: list[dict[str, Any]] = []
    listener = Listener((await other.database()).url, heard.append)
    listening = asyncio.create_task(listener.run())
    try:
        assert await listener.wait_listening(10.0)
        await other.enqueue_async("noop", {})
        await wait_for(lambda: heard, what="a NOTIFY on the LISTEN connection")
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
        await listener.close()


async def test_pooled_connections_are_retired_before_their_token_expires(
    rotating: Rotating, app_factory: Any
) -> None:
    expires = 2.0

    def provider() -> dict[str, Any]:
        return rotating.provider() | {"expires_at": time.time() + expires}

    app = app_factory(rotating.url, provider)
    db = await app.database()
    assert db.pool.max_lifetime <= 0.8 * expires
    pids = set()
    began = time.monotonic()
    while time.monotonic() - began < 3 * expires:
        async with app.connection() as conn:
            row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
            assert row is not None
            pids.add(row["pid"])
        await asyncio.sleep(0.1)
    # Each connection lived under 1.6 s: over 6 s, one pooled connection became several.
    assert len(pids) >= 3, pids


async def test_a_refused_login_asks_the_provider_again_once(rotating: Rotating) -> None:
    stale = rotating.password
    rotating.rotate()
    answers = [stale, rotating.password]
    credentials = Credentials(lambda: answers.pop(0) if answers else stale)

    conn = await credentials.connect(psycopg.AsyncConnection.connect, rotating.url)
    await conn.close()
    assert credentials.calls == 2  # the stale one, refused, then the fresh one

    always_stale = Credentials(lambda: stale)
    with pytest.raises(psycopg.OperationalError) as refused:
        await always_stale.connect(psycopg.AsyncConnection.connect, rotating.url)
    assert is_auth_failure(refused.value)
    assert always_stale.calls == 2  # once more, not in a loop


async def test_a_password_that_stays_wrong_is_a_clear_unavailable(
    rotating: Rotating, app_factory: Any
) -> None:
    app = app_factory(rotating.url, lambda: "not-the-password")
    with pytest.raises(DatabaseUnavailable, match="password authentication failed"):
        await app.database()


# ---- providers that fail ------------------------------------------------------------------


async def test_a_provider_that_raises_is_a_clear_error_and_is_retried(
    rotating: Rotating, app_factory: Any
) -> None:
    broken = threading.Event()
    broken.set()

    def provider() -> dict[str, Any]:
        if broken.is_set():
            raise RuntimeError("the vault is sealed")
        return rotating.provider() | {"expires_at": time.time() + 2.0}

    app = app_factory(rotating.url, provider)
    with pytest.raises(DatabaseUnavailable) as refused:
        await app.database()
    assert "credentials provider" in str(refused.value)
    assert "RuntimeError: the vault is sealed" in str(refused.value)

    broken.clear()  # the same App connects once the provider answers
    await app.enqueue_async("noop", {})

    # Open, with connections that must be renewed every 1.6 s: a provider that breaks
    # closes the gate (a clear 'unavailable', at once), and the pool is back within a
    # probe interval of the provider's recovery, not wedged.
    broken.set()

    async def refused_now() -> str | None:
        try:
            await app.enqueue_async("noop", {})
        except DatabaseUnavailable as exc:
            return str(exc)
        return None

    message = await wait_for(refused_now, timeout=15, interval=0.1, what="the gate to close")
    assert "the vault is sealed" in message
    broken.clear()
    fixed = time.monotonic()

    async def works() -> bool:
        return await refused_now() is None

    await wait_for(works, timeout=10, interval=0.05, what="the pool to work again")
    assert time.monotonic() - fixed < 3.0


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_provider_that_hangs_is_given_up_on_within_its_timeout(kind: str) -> None:
    released = threading.Event()

    def hangs() -> str:
        released.wait(60)
        return "late"

    async def hangs_async() -> str:
        await asyncio.sleep(60)
        return "late"

    credentials = Credentials(hangs if kind == "sync" else hangs_async, timeout=0.5)
    began = time.monotonic()
    with pytest.raises(CredentialsUnavailable, match=r"did not answer within 0\.5 s"):
        await credentials.get()
    assert time.monotonic() - began < 2.0
    released.set()


async def test_a_hung_provider_does_not_wedge_opening_the_database(
    rotating: Rotating, app_factory: Any
) -> None:
    released = threading.Event()

    def hangs() -> str:
        released.wait(60)
        return rotating.password

    app = app_factory(rotating.url, Credentials(hangs, timeout=0.5))
    began = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="did not answer"):
        await app.database()
    assert time.monotonic() - began < 5.0
    released.set()


# ---- what a provider may return, and how one is named ---------------------------------------


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"password": "x", "token": "y"}, "unknown keys token"),
        ({"user": "u"}, "no password"),
        (42, "returned int"),
        ({"password": "x", "expires_at": datetime(2030, 1, 1)}, "naive expires_at"),
        ({"password": "x", "expires_at": "soon"}, "expires_at='soon'"),
    ],
)
async def test_a_provider_answering_nonsense_is_told_why(answer: Any, message: str) -> None:
    with pytest.raises(CredentialsUnavailable, match=message):
        await Credentials(lambda: answer).get()


async def test_what_a_provider_may_return() -> None:
    assert await Credentials(lambda: "secret").get() == {"password": "secret"}
    later = datetime.now(UTC) + timedelta(hours=1)

    async def full() -> dict[str, Any]:
        return {"password": "p", "user": "u", "host": "h", "port": 5433, "expires_at": later}

    credentials = Credentials(full)
    assert await credentials.get() == {"password": "p", "user": "u", "host": "h", "port": 5433}
    lifetime = credentials.lifetime()
    assert lifetime is not None and 0.75 * 3600 < lifetime <= 0.8 * 3600
    await credentials.get()
    assert credentials.calls == 1  # an answer with an expiry is reused until near it
    await credentials.get(refresh=True)
    assert credentials.calls == 2

    seen: list[dict[str, Any]] = []

    def wants_the_url(url: dict[str, Any]) -> str:
        seen.append(url)
        return "p"

    await Credentials(wants_the_url).get("postgresql://bob:static@db.example:6432/app")
    assert seen == [{"user": "bob", "host": "db.example", "port": "6432", "dbname": "app"}]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected MODULE:CALLABLE"),
        ("tests.not_a_module:f", "cannot import tests.not_a_module"),
        ("tests.rotating_password:missing", "has no missing"),
        ("tests.test_credentials:PROVIDER", "is not callable"),
    ],
)
def test_a_bad_credentials_setting_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load(spec)


def test_the_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVEYOR_DATABASE_CREDENTIALS", PROVIDER)
    monkeypatch.setenv("CONVEYOR_DATABASE_URL", "postgresql://u@127.0.0.1/d")
    app = App()
    assert app.credentials is not None and app.credentials.name == PROVIDER


async def test_credentials_without_a_url_of_ones_own_are_refused(tmp_path: Path) -> None:
    app = App(settings=Settings(home=tmp_path), credentials=lambda: "p")
    with pytest.raises(SettingsError, match="CONVEYOR_DATABASE_URL"):
        await app.database()


# ---- the built-in providers, without their clouds -------------------------------------------


def test_rds_iam_signs_a_token_for_the_url_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    host = "orders.c9akciq32.eu-west-1.rds.amazonaws.com"
    before = time.time()
    answer = RdsIam()({"host": host, "port": "5432", "user": "conveyor"})
    token = answer["password"]
    assert token.startswith(f"{host}:5432/?Action=connect&DBUser=conveyor&")
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in token
    assert "%2Feu-west-1%2Frds-db%2Faws4_request" in token  # the region, from the host
    assert "X-Amz-Expires=900" in token and "X-Amz-Signature=" in token
    assert before + 899 <= answer["expires_at"] <= time.time() + 900
    with pytest.raises(SettingsError, match="user"):
        RdsIam()({"host": host})


class _Token:
    def __init__(self, token: str, expires_on: int) -> None:
        self.token, self.expires_on = token, expires_on


def test_entra_asks_for_the_postgres_scope() -> None:
    scopes: list[str] = []

    class Credential:
        def get_token(self, scope: str) -> _Token:
            scopes.append(scope)
            return _Token("eyJ0eXAi", 1_900_000_000)

    assert Entra(Credential())() == {"password": "eyJ0eXAi", "expires_at": 1_900_000_000.0}
    assert scopes == ["https://ossrdbms-aad.database.windows.net/.default"]


def test_lakebase_asks_the_workspace_for_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []

    class Database:
        def generate_database_credential(self, **request: Any) -> Any:
            asked.append(request)
            return type(
                "Cred", (), {"token": "dapi-oauth", "expiration_time": "2030-01-01T00:00:00Z"}
            )

    class Me:
        user_name = "svc@example.com"

    class Client:
        database = Database()
        current_user = type("Users", (), {"me": staticmethod(lambda: Me())})

    monkeypatch.setenv("CONVEYOR_LAKEBASE_INSTANCE", "orders-db")
    answer = Lakebase(client=Client())({"host": "instance-1.database.example"})
    assert answer == {
        "password": "dapi-oauth",
        "expires_at": datetime(2030, 1, 1, tzinfo=UTC).timestamp(),
        "user": "svc@example.com",
    }
    assert asked[0]["instance_names"] == ["orders-db"] and asked[0]["request_id"]
    assert "user" not in Lakebase("x", client=Client())({"user": "given"})


def test_lakebase_autoscaling_asks_for_the_endpoint() -> None:
    timestamp_pb2 = pytest.importorskip("google.protobuf.timestamp_pb2")
    endpoint = "projects/p/branches/main/endpoints/primary"
    asked: list[str] = []

    class Postgres:
        def generate_database_credential(self, endpoint: str) -> Any:
            asked.append(endpoint)
            expire = timestamp_pb2.Timestamp(seconds=1_900_000_000, nanos=500_000_000)
            return type("Cred", (), {"token": "oauth", "expire_time": expire})

    client = type("Client", (), {"postgres": Postgres()})
    answer = Lakebase(endpoint=endpoint, client=client)({"user": "app-sp"})
    assert answer == {"password": "oauth", "expires_at": 1_900_000_000.5}
    assert asked == [endpoint]


# ---- the whole system, rotating -------------------------------------------------------------

#: How long the drain runs with rotations (CONVEYOR_TEST_ROTATION_SECONDS for a longer run).
ROTATE_EVERY = float(os.environ.get("CONVEYOR_TEST_ROTATE_EVERY", "1.5"))
TASKS = int(os.environ.get("CONVEYOR_TEST_ROTATION_TASKS", "3000"))


async def test_rotating_while_two_worker_processes_drain_and_the_stream_serves(
    rotating: Rotating, app_factory: Any, tmp_path: Path
) -> None:
    lifetime = 2.5  # tokens "expire" fast, so that every pool reconnects all the time
    os.environ.update(rotating.env(lifetime))  # the web app in this process too
    try:
        web = app_factory(rotating.url, PROVIDER)
        from tests.worker_app import app as worker_app

        assert worker_app.agents["sleepy"].fn is not None
        web.agent("sleepy", lease_seconds=3)(worker_app.agents["sleepy"].fn)
        await web.database()  # migrated, agents registered
        workers = [
            WorkerProcess(
                rotating.url,
                concurrency=8,
                env=rotating.env(lifetime),
                log_path=tmp_path / f"worker-{n}.log",
            )
            for n in range(2)
        ]
        try:
            await _drain_while_rotating(rotating, web, workers)
        finally:
            for worker in workers:
                worker.close()
    finally:
        for name in rotating.env():
            os.environ.pop(name, None)


async def _drain_while_rotating(rotating: Rotating, web: App, workers: list[WorkerProcess]) -> None:
    statuses: dict[int, int] = {}
    events = 0
    stop = asyncio.Event()

    async with serving(web) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:

        async def watch_stream() -> None:
            nonlocal events
            async with http.stream("GET", "/api/events") as response:
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                async for line in response.aiter_lines():
                    if line == "event: task":
                        events += 1
                    if stop.is_set():
                        return

        async def poll_api() -> None:
            while not stop.is_set():
                for path in ("/api/tasks?status=processing", "/api/metrics", "/healthz"):
                    answer = await http.get(path)
                    statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                await asyncio.sleep(0.05)

        async def rotate() -> None:
            while not stop.is_set():
                await asyncio.sleep(ROTATE_EVERY)
                await asyncio.to_thread(rotating.rotate)

        streaming = asyncio.create_task(watch_stream())
        background = [asyncio.create_task(poll_api()), asyncio.create_task(rotate())]
        batch = [{"agent": "sleepy", "payload": {"seconds": 0.02}} for _ in range(TASKS)]
        ids = await web.enqueue_many_async(batch)
        began = time.monotonic()

        async def drained() -> bool:
            async with web.connection() as conn:
                cur = await conn.execute(
                    "SELECT count(*) AS n FROM tasks WHERE status = 'completed'"
                )
                row = await cur.fetchone()
                return row is not None and row["n"] == len(ids)

        try:
            await wait_for(drained, timeout=180, interval=0.25, what="every task to complete")
        finally:
            stop.set()
            await asyncio.gather(*background)
        drain_seconds = time.monotonic() - began
        streaming.cancel()
        await asyncio.gather(streaming, return_exceptions=True)

        async with web.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS attempts, count(DISTINCT task_id) AS tasks,"
                " count(*) FILTER (WHERE status <> 'succeeded') AS other"
                " FROM task_attempts"
            )
            row = await cur.fetchone()
    assert row == {"attempts": len(ids), "tasks": len(ids), "other": 0}  # each ran once
    assert rotating.rotations >= 3, (rotating.rotations, drain_seconds)
    assert not [code for code in statuses if code >= 500], statuses
    assert statuses.get(200, 0) > 10
    assert events > 0
    logs = ""
    for worker in workers:
        assert worker.proc.poll() is None, worker.output()[-3000:]
        logs += worker.output()
    assert web.credentials is not None and web.credentials.calls >= rotating.rotations
    print(
        f"\n{len(ids)} tasks in {drain_seconds:.1f} s, {rotating.rotations} rotations, "
        f"{web.credentials.calls} provider calls in the web process, statuses {statuses}, "
        f"{events} task events; in the workers' logs: "
        f"{logs.count('database login refused')} refused logins retried, "
        f"{logs.count('database unavailable')} outages, "
        f"{logs.count('LISTEN connection lost')} LISTEN reconnections"
    )


async def test_a_connection_lives_by_the_expiry_of_its_own_credentials(rotating: Rotating) -> None:
    """A connection opened with a token that ends in 100 s is renewed by that end, even once
    the shared cache holds a newer token (another connection's refresh) ending in an hour."""
    ends = iter([time.time() + 100, time.time() + 3600])
    credentials = Credentials(lambda: rotating.provider() | {"expires_at": next(ends)})
    first = await credentials.connect(psycopg.AsyncConnection.connect, rotating.url)
    try:
        await credentials.get(rotating.url, refresh=True)
        own = credentials.lifetime(first)
        assert own is not None and own <= 0.8 * 100
        fresh = credentials.lifetime()  # a connection opened now gets the newer token
        assert fresh is not None and fresh > 0.75 * 3600
    finally:
        await first.close()
