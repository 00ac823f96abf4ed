"""Test databases: one PostgreSQL server per run, one fresh database per test.

The server is CONVEYOR_TEST_DATABASE_URL when set, else an embedded one started for the
run. A template database is migrated once; each test gets `CREATE DATABASE ... TEMPLATE`,
which copies a few files instead of running the migrations again.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from conveyor import App
from conveyor.db.migrate import migrate
from conveyor.settings import Settings

TEMPLATE = f"conveyor_tmpl_{os.getpid()}"

# The real headless Chromium's fixtures (`browser`, `page`), for the tests that drive pages.
pytest_plugins = ["tests.browser"]


def with_dbname(url: str, dbname: str) -> str:
    return make_conninfo(url, dbname=dbname)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    url = os.environ.get("CONVEYOR_TEST_DATABASE_URL")
    if url:
        yield url
        return
    from conveyor.db.embedded import EmbeddedPostgres

    # One server per installation, shared by its concurrent test sessions: a server adopted
    # from another virtual environment runs that one's binaries, and once that environment
    # is removed its new backends cannot load plpgsql.
    install = hashlib.sha1(sys.prefix.encode()).hexdigest()[:8]
    folder = Path(tempfile.gettempdir()) / f"conveyor-test-pg-{os.getuid()}-{install}"
    # Test databases are thrown away: fsync buys nothing here, and every CREATE DATABASE
    # from the template checkpoints, which with fsync on is most of a test's set-up time.
    server = EmbeddedPostgres(folder, settings={"fsync": "off", "full_page_writes": "off"})
    yield server.start()
    server.release()  # stops it, unless another test session still uses it


def _drop_database(conn: psycopg.Connection[Any], name: str) -> None:
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _drop_orphans(conn: psycopg.Connection[Any], server_url: str) -> None:
    """Drop the databases of test sessions that ended without cleaning up (killed, or
    interrupted twice): their names carry the session's pid, and on a server on this
    machine a pid that is not running any more cannot be using them."""
    host = conninfo_to_dict(server_url).get("host") or "localhost"
    if host not in ("localhost", "127.0.0.1", "::1") and not str(host).startswith("/"):
        return  # another machine's pids mean nothing here
    names = conn.execute(
        "SELECT datname FROM pg_database WHERE datname ~ '^conveyor_(tmpl|t)_[0-9]+(_|$)'"
    ).fetchall()
    for (name,) in names:
        pid = int(name.split("_")[2])
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            _drop_database(conn, name)


@pytest.fixture(scope="session")
def template_db(server_url: str) -> Iterator[str]:
    with psycopg.connect(server_url, autocommit=True) as conn:
        _drop_orphans(conn, server_url)
        _drop_database(conn, TEMPLATE)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))

    async def build() -> None:
        conn = await psycopg.AsyncConnection.connect(
            with_dbname(server_url, TEMPLATE), autocommit=True
        )
        async with conn:
            await migrate(conn)

    asyncio.run(build())
    yield TEMPLATE
    with psycopg.connect(server_url, autocommit=True) as conn:
        _drop_database(conn, TEMPLATE)


@pytest.fixture
def database_url(server_url: str, template_db: str) -> Iterator[str]:
    name = f"conveyor_t_{os.getpid()}_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template_db)
            )
        )
    yield with_dbname(server_url, name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        _drop_database(conn, name)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    # Fast maintenance loops so that tests wait on conditions for short times.
    return Settings(
        database_url=database_url,
        home=tmp_path,
        poll_interval=0.2,
        sweep_interval=0.2,
        shutdown_timeout=5.0,
    )


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    yield app
    await app.aclose()


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A separate connection for looking at (and backdating) rows, as a person with psql."""
    from psycopg.rows import dict_row

    conn = await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    )
    async with conn:
        yield conn


async def one(conn: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the one row a query answers (a dict-row connection)."""
    cur = await conn.execute(sql.SQL(query), params or None)
    row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


async def claim_queue(conn: Any) -> None:
    """A queue worth planning a claim for: 20,000 tasks of two agents over ten priorities,
    a fifth of them enqueued, analysed (the claim-plan tests of test_schema and
    test_claim_plan)."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute(
        """INSERT INTO tasks (agent, priority, status)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10,
                  CASE WHEN g % 5 = 0 THEN 'enqueued' ELSE 'completed' END
           FROM generate_series(1, 20000) g"""
    )
    await conn.execute("ANALYZE tasks")


async def table_reads(conn: Any, action: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """What `action` read of tasks and task_attempts on `conn`, nested statements of
    functions and triggers included, from the connection's statistics of its own
    transaction (pg_stat_xact_user_tables): {table: {"seq_scan", "seq_tup_read",
    "idx_tup_fetch"}}. A test of what a plan costs rather than of its shape, so it runs on
    every server: the embedded one has no auto_explain to show nested plans. The action runs
    in a transaction that is rolled back."""
    query = sql.SQL(
        "SELECT relname, seq_scan, seq_tup_read, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch"
        " FROM pg_stat_xact_user_tables WHERE relname IN ('tasks', 'task_attempts')"
    )
    async with conn.transaction(force_rollback=True):
        before = {r["relname"]: r for r in await (await conn.execute(query)).fetchall()}
        await action()
        after = {r["relname"]: r for r in await (await conn.execute(query)).fetchall()}
    return {
        table: {k: after[table][k] - before[table][k] for k in after[table] if k != "relname"}
        for table in after
    }


async def wait_for(
    condition: Callable[[], Any],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> Any:
    """Poll `condition` (sync or async) until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)
