"""The schema has one current text: migrations build the tables, and the function files of
conveyor/sql/functions/ are what the database runs, however it got there.

A database is compared with another by a snapshot of its catalog: tables and columns,
indexes, constraints, table options, every function of the schema as pg_get_functiondef
prints it (body, settings and all), and every trigger as pg_get_triggerdef prints it.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row, tuple_row

import conveyor.db.migrate as migrate_module
from conveyor.db.migrate import MigrationError, available, functions, migrate
from conveyor.sql import function_files
from tests.conftest import one, with_dbname

Conn = psycopg.AsyncConnection[Any]

# The migrations released before the function files existed; they also created functions.
# Every later migration changes tables only.
LAST_MIGRATION_WITH_FUNCTIONS = "0008_adaptive"

SNAPSHOT = {
    "columns": """
        SELECT table_name, column_name, ordinal_position, data_type, is_nullable,
               column_default
        FROM information_schema.columns WHERE table_schema = current_schema()
        ORDER BY 1, 2""",
    "indexes": """
        SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()
        ORDER BY 1""",
    "constraints": """
        SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def
        FROM pg_constraint WHERE connamespace = to_regnamespace(current_schema())
        ORDER BY 1, 2""",
    "table_options": """
        SELECT relname, reloptions FROM pg_class
        WHERE relnamespace = to_regnamespace(current_schema()) AND relkind = 'r'
        ORDER BY 1""",
    "functions": """
        SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS def
        FROM pg_proc p WHERE p.pronamespace = to_regnamespace(current_schema())
        ORDER BY 1""",
    "triggers": """
        SELECT tgrelid::regclass::text AS tbl, tgname, pg_get_triggerdef(oid) AS def
        FROM pg_trigger WHERE NOT tgisinternal
        ORDER BY 1, 2""",
}


async def snapshot(conn: Conn) -> dict[str, list[tuple[Any, ...]]]:
    shot = {}
    for part, query in SNAPSHOT.items():
        cur = conn.cursor(row_factory=tuple_row)
        await cur.execute(query)
        shot[part] = await cur.fetchall()
    return shot


@asynccontextmanager
async def scratch_database(server_url: str) -> AsyncIterator[Conn]:
    """An empty database (named so that conftest drops it if this session dies)."""
    name = f"conveyor_t_{os.getpid()}_m{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        conn = await psycopg.AsyncConnection.connect(
            with_dbname(server_url, name), autocommit=True, row_factory=dict_row
        )
        async with conn:
            yield conn
    finally:
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
            await admin.execute(
                sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
            )


async def apply_like_an_older_conveyor(conn: Conn, upto: str) -> None:
    """The migrations up to `upto`, as Conveyor applied them before the function files: each
    file once, recorded in conveyor_migrations, and nothing else."""
    await conn.execute(
        "CREATE TABLE conveyor_migrations (name text PRIMARY KEY, checksum text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for migration in available():
        if migration.name > upto:
            break
        async with conn.transaction():
            await conn.execute(sql.SQL(migration.text))
            await conn.execute(
                "INSERT INTO conveyor_migrations (name, checksum) VALUES (%s, %s)",
                (migration.name, migration.checksum),
            )


def defined_in_files() -> list[str]:
    """The function names the files create, one entry per CREATE."""
    creates = re.compile(r"^CREATE OR REPLACE FUNCTION (\w+)\(", re.MULTILINE)
    return sorted(n for text in function_files().values() for n in creates.findall(text))


async def test_the_database_holds_exactly_the_functions_of_the_files(
    conn: Conn, server_url: str
) -> None:
    """Built by migrate(), a database has the files' functions and triggers, no copy the old
    migrations left behind; and it is the same as a database whose migrations ran, whose
    every function was then dropped, and which then ran the files alone."""
    migrated = await snapshot(conn)
    names = sorted(re.sub(r"\(.*", "", sig) for sig, _ in migrated["functions"])
    assert names == defined_in_files()
    assert "conveyor_admit" in names
    # The live text, not 0002's: the spread came with 0008.
    admit = dict(migrated["functions"])["conveyor_admit(text,integer)"]
    assert "free_pace" in admit

    async with scratch_database(server_url) as scratch:
        await apply_like_an_older_conveyor(scratch, upto="9999")
        cur = await scratch.execute(
            "SELECT oid::regprocedure::text AS sig FROM pg_proc"
            " WHERE pronamespace = to_regnamespace(current_schema())"
        )
        for row in await cur.fetchall():
            await scratch.execute(sql.SQL("DROP FUNCTION {} CASCADE").format(sql.SQL(row["sig"])))
        for text in function_files().values():
            await scratch.execute(sql.SQL(text))
        from_files = await snapshot(scratch)
    # Bookkeeping aside (migrate's own tables), everything is the same.
    for part in SNAPSHOT:
        strip = [r for r in migrated[part] if "conveyor_schema_functions" not in str(r)]
        assert strip == from_files[part], part


@pytest.mark.parametrize("upto", ["0005_notify_join", LAST_MIGRATION_WITH_FUNCTIONS])
async def test_a_database_of_an_older_conveyor_is_brought_to_the_same_schema(
    conn: Conn, server_url: str, upto: str
) -> None:
    """A database in the field (its migrations applied by an older Conveyor, functions as the
    migrations defined them) migrates to exactly what a new database is."""
    fresh = await snapshot(conn)
    async with scratch_database(server_url) as old:
        await apply_like_an_older_conveyor(old, upto)
        applied = await migrate(old)
        later = [m.name for m in available() if m.name > upto]
        assert applied == later + [f"functions/{f.name}" for f in functions()]
        assert await snapshot(old) == fresh
        assert await migrate(old) == []


async def test_migrate_again_touches_nothing(conn: Conn) -> None:
    """A current database: no function, trigger or record is rewritten (their catalog rows
    keep the transaction id that wrote them)."""
    versions = """
        SELECT 'f' || oid::regprocedure::text AS what, xmin::text AS xmin FROM pg_proc
        WHERE pronamespace = to_regnamespace(current_schema())
        UNION ALL SELECT 't' || tgname, xmin::text FROM pg_trigger WHERE NOT tgisinternal
        UNION ALL SELECT 'r' || name, xmin::text FROM conveyor_schema_functions
        ORDER BY 1"""
    before = await (await conn.execute(versions)).fetchall()
    assert len(before) > len(functions())
    assert await migrate(conn) == []
    assert await migrate(conn) == []
    assert await (await conn.execute(versions)).fetchall() == before


#: A function file of the test's own, so that what it changes is not the text of a real
#: one (which would break the test whenever that file is edited): a plain function, one
#: with a row result, one with an argument.
PROBE = """
CREATE OR REPLACE FUNCTION conveyor_probe_bucket(v double precision) RETURNS smallint
LANGUAGE sql IMMUTABLE AS $$ SELECT least(v, 32767)::smallint $$;
CREATE OR REPLACE FUNCTION conveyor_probe_usage(agent text, OUT tokens bigint, OUT spread bigint)
LANGUAGE sql STABLE AS $$ SELECT 0::bigint, 0::bigint $$;
CREATE OR REPLACE FUNCTION conveyor_probe_cost(usd double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE AS $$ SELECT usd $$;
"""


def _probe_changed() -> str:
    """PROBE with a body changed, a row result that CREATE OR REPLACE alone refuses to
    change (one OUT column more), and an argument more (a different signature)."""
    changed = (
        PROBE.replace("32767)::smallint", "32000)::smallint")
        .replace("OUT spread bigint)", "OUT spread bigint, OUT probe bigint)")
        .replace("0::bigint, 0::bigint", "0::bigint, 0::bigint, 0::bigint")
        .replace("(usd double precision)", "(usd double precision, extra int)")
    )
    assert changed.count("32000") == changed.count("extra int") == 1
    return changed


async def test_a_changed_function_file_is_applied_again(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its checksum differs, so the functions are replaced by the files' new text: a body
    changed, a result that CREATE OR REPLACE alone refuses to change, arguments changed,
    a file added and then removed. No stale copy stays behind; back to the released files,
    the database is as it was."""
    released = function_files()
    before = await snapshot(conn)
    with_probe = {**released, "zz_probe": PROBE}
    monkeypatch.setattr(migrate_module, "function_files", lambda: with_probe)
    assert await migrate(conn) == [f"functions/{name}" for name in with_probe]
    probed = await snapshot(conn)

    changed = {**released, "zz_probe": _probe_changed()}
    monkeypatch.setattr(migrate_module, "function_files", lambda: changed)
    applied = await migrate(conn)
    assert applied == [f"functions/{name}" for name in changed]
    now = dict((await snapshot(conn))["functions"])
    assert "32000" in now["conveyor_probe_bucket(double precision)"]
    assert "OUT probe bigint" in now["conveyor_probe_usage(text)"]
    assert "conveyor_probe_cost(double precision)" not in now
    assert "conveyor_probe_cost(double precision,integer)" in now
    cur = await conn.execute("SELECT name, sha256 FROM conveyor_schema_functions ORDER BY name")
    recorded = {r["name"]: r["sha256"] for r in await cur.fetchall()}
    assert recorded == {f.name: f.checksum for f in migrate_module.functions()}
    assert await migrate(conn) == []

    monkeypatch.setattr(migrate_module, "function_files", lambda: with_probe)
    assert await migrate(conn) == [f"functions/{name}" for name in with_probe]
    assert await snapshot(conn) == probed
    monkeypatch.setattr(migrate_module, "function_files", lambda: released)
    assert await migrate(conn) == [f"functions/{f.name}" for f in functions()]
    assert await snapshot(conn) == before  # the probe's functions are gone with their file


async def test_the_replaced_triggers_still_guard_and_notify(conn: Conn, database_url: str) -> None:
    """After a re-application the triggers are there and work: a NOTIFY per change, the
    state machine enforced, the rollups written."""
    await conn.execute("UPDATE conveyor_schema_functions SET sha256 = 'stale'")
    assert await migrate(conn) == [f"functions/{f.name}" for f in functions()]
    await conn.execute("INSERT INTO agents (name) VALUES ('a')")
    # The test's URL, not conn.info.dsn: that leaves the password out (the embedded server's).
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as listener:
        await listener.execute("LISTEN conveyor")
        task_id = await one(
            conn,
            "INSERT INTO tasks (agent, status, finished_at) VALUES ('a', 'completed', now())"
            " RETURNING id",
        )
        note = await anext(listener.notifies(timeout=10))
        assert f'"ids" : [{task_id}]' in note.payload
    with pytest.raises(psycopg.errors.CheckViolation, match="no transition"):
        await conn.execute("UPDATE tasks SET status = 'processing' WHERE id = %s", (task_id,))
    assert await one(conn, "SELECT sum(tasks) FROM task_rollups_exact WHERE grain = 'h'") == 1


async def test_something_else_depending_on_a_function_stops_the_change_clearly(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator's view over a Conveyor function is never dropped silently: migrate()
    says what is in the way and changes nothing."""
    released = function_files()
    monkeypatch.setattr(migrate_module, "function_files", lambda: {**released, "zz_probe": PROBE})
    await migrate(conn)
    await conn.execute("CREATE VIEW buckets AS SELECT conveyor_probe_bucket(5) AS b")
    before = await snapshot(conn)
    changed = {**released, "zz_probe": _probe_changed()}
    monkeypatch.setattr(migrate_module, "function_files", lambda: changed)
    with pytest.raises(MigrationError, match=r"conveyor_probe_bucket.*view buckets"):
        await migrate(conn)
    assert await snapshot(conn) == before


async def test_an_old_server_is_refused_with_a_clear_error(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrate_module, "MIN_SERVER_VERSION", 10_000_000)
    with pytest.raises(MigrationError, match="needs PostgreSQL 14 or newer; the server runs"):
        await migrate(conn)


def test_migrations_after_the_function_files_change_tables_only() -> None:
    defines = re.compile(r"\b(CREATE|ALTER|DROP)\s+(OR\s+REPLACE\s+)?(FUNCTION|TRIGGER)\b", re.I)
    later = [m for m in available() if m.name > LAST_MIGRATION_WITH_FUNCTIONS]
    for migration in later:
        assert not defines.search(migration.text), (
            f"{migration.name}: functions and triggers belong in conveyor/sql/functions/"
        )
    # The history is what databases in the field applied: these eight stay as released.
    assert [m.name for m in available()][:8][-1] == LAST_MIGRATION_WITH_FUNCTIONS
