"""The schema: table migrations, then the live text of the SQL functions.

Tables change by migrations, the plain SQL files in `migrations/`, applied once each in
name order and recorded with their checksum in `conveyor_migrations`. They are history:
databases in the field have applied them, so a released file never changes. (The first
eight also created functions; those texts are history too, replaced as described next.)

Functions and triggers have one current text: `conveyor/sql/functions/*.sql`, one file per
concern. After the migrations, whenever the set of those files or any file's text differs
from what the database last applied (sha256 per file in `conveyor_schema_functions`), the
Conveyor functions (those named `conveyor_*` in the schema) are dropped with the triggers
that call them, and every file is applied again. Dropping first is what makes every change
a plain edit of the file: a function renamed, removed, or whose arguments or result changed
leaves no stale copy behind, which `CREATE OR REPLACE` alone would (or refuse to replace).
Anything else that depends on a Conveyor function makes the drop fail, loudly, rather than
vanish. A database whose files are current is not touched at all.

Every run is one transaction under one advisory lock, so any number of processes may call
`migrate()` at once (workers starting together, `conveyor up` beside `conveyor migrate`):
one applies what is missing, the others then find nothing to do; a reader never sees the
functions half replaced.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from importlib import resources
from typing import cast

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from conveyor.errors import ConveyorError
from conveyor.log import fields
from conveyor.sql import function_files

log = logging.getLogger(__name__)

# Fixed key for pg_advisory_xact_lock; the text only names it for people reading pg_locks.
_LOCK_KEY = "select pg_advisory_xact_lock(hashtext('conveyor.migrate'))"

# CREATE OR REPLACE TRIGGER (the function files use it) came with PostgreSQL 14; 13 and
# older are out of support.
MIN_SERVER_VERSION = 140000

# The Conveyor functions of the current schema, and the triggers that call them.
_OWN_FUNCTIONS = r"""
    SELECT p.oid::regprocedure::text
    FROM pg_proc p
    WHERE p.pronamespace = to_regnamespace(current_schema())
      AND p.proname LIKE 'conveyor\_%'
    ORDER BY 1
"""
_OWN_TRIGGERS = r"""
    SELECT t.tgname, t.tgrelid::regclass::text
    FROM pg_trigger t
    JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE NOT t.tgisinternal
      AND p.pronamespace = to_regnamespace(current_schema())
      AND p.proname LIKE 'conveyor\_%'
    ORDER BY 2, 1
"""


class MigrationError(ConveyorError):
    pass


@dataclass(frozen=True)
class Migration:
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def available() -> list[Migration]:
    folder = resources.files("conveyor.db").joinpath("migrations")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(f.name.removesuffix(".sql"), f.read_text()) for f in files]


def functions() -> list[Migration]:
    """The function files, in the order they are applied (by name)."""
    return [Migration(name, text) for name, text in function_files().items()]


async def migrate(conn: psycopg.AsyncConnection[object]) -> list[str]:
    """Apply the migrations this database lacks, then the function files if any changed.

    Return the names applied: migrations as `0001_queue`, function files as
    `functions/admission`.
    """
    applied_now: list[str] = []
    async with conn.transaction():
        await conn.execute(_LOCK_KEY)
        await _check_server(conn)
        await conn.execute(
            """
            CREATE TABLE IF NOT EXISTS conveyor_migrations (
                name        text PRIMARY KEY,
                checksum    text NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        cur = conn.cursor(row_factory=tuple_row)
        await cur.execute("SELECT name, checksum FROM conveyor_migrations")
        done = {cast(str, name): cast(str, checksum) for name, checksum in await cur.fetchall()}
        for migration in available():
            if migration.name in done:
                if done[migration.name] != migration.checksum:
                    log.warning(
                        "an applied migration file has changed since it was applied",
                        extra=fields(migration=migration.name),
                    )
                continue
            await _run_script(conn, migration.text)
            await conn.execute(
                "INSERT INTO conveyor_migrations (name, checksum) VALUES (%s, %s)",
                (migration.name, migration.checksum),
            )
            applied_now.append(migration.name)
            log.info("applied migration", extra=fields(migration=migration.name))
        unknown = set(done) - {m.name for m in available()}
        if not unknown:
            applied_now += await _apply_functions(conn)
    if unknown:
        raise MigrationError(
            f"the database has migrations this version of Conveyor does not know: "
            f"{sorted(unknown)}; upgrade Conveyor"
        )
    return applied_now


async def _check_server(conn: psycopg.AsyncConnection[object]) -> None:
    cur = conn.cursor(row_factory=tuple_row)
    await cur.execute("SELECT current_setting('server_version_num')::int, version()")
    row = await cur.fetchone()
    assert row is not None  # a SELECT without FROM has one row
    number, version = cast(int, row[0]), cast(str, row[1])
    if number < MIN_SERVER_VERSION:
        raise MigrationError(f"Conveyor needs PostgreSQL 14 or newer; the server runs {version}")


async def _apply_functions(conn: psycopg.AsyncConnection[object]) -> list[str]:
    """Replace the Conveyor functions and triggers by the files' text, if it changed."""
    await conn.execute(
        """
        CREATE TABLE IF NOT EXISTS conveyor_schema_functions (
            name        text PRIMARY KEY,
            sha256      text NOT NULL,
            applied_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    files = functions()
    cur = conn.cursor(row_factory=tuple_row)
    await cur.execute("SELECT name, sha256 FROM conveyor_schema_functions")
    recorded = {cast(str, name): cast(str, sha) for name, sha in await cur.fetchall()}
    if recorded == {f.name: f.checksum for f in files}:
        return []

    await cur.execute(_OWN_TRIGGERS)
    triggers = [(cast(str, name), cast(str, table)) for name, table in await cur.fetchall()]
    if triggers:
        # Their tables all at once, before any is changed: taken one by one, each DROP
        # TRIGGER's lock could deadlock with a worker's statement holding the next table.
        # (regclass text is already quoted as needed, and schema-qualified if so.)
        tables = sql.SQL(", ").join(sql.SQL(t) for t in sorted({t for _, t in triggers}))
        await conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(tables))
    for trigger, table in triggers:
        await conn.execute(
            sql.SQL("DROP TRIGGER {} ON {}").format(sql.Identifier(trigger), sql.SQL(table))
        )
    await cur.execute(_OWN_FUNCTIONS)
    for (signature,) in await cur.fetchall():
        # regprocedure text: a quoted name and its argument types, as DROP FUNCTION takes.
        try:
            await conn.execute(sql.SQL("DROP FUNCTION {}").format(sql.SQL(cast(str, signature))))
        except psycopg.errors.DependentObjectsStillExist as e:
            raise MigrationError(
                f"cannot replace the function {signature}: {e.diag.message_detail}; drop "
                f"what depends on it, migrate, then create it again"
            ) from e

    await conn.execute("DELETE FROM conveyor_schema_functions")
    for file in files:
        await _run_script(conn, file.text)
        await conn.execute(
            "INSERT INTO conveyor_schema_functions (name, sha256) VALUES (%s, %s)",
            (file.name, file.checksum),
        )
    log.info("applied the SQL functions", extra=fields(files=[f.name for f in files]))
    return [f"functions/{f.name}" for f in files]


async def _run_script(conn: psycopg.AsyncConnection[object], text: str) -> None:
    # A whole file in one simple-protocol call (no parameters): it may hold many
    # statements, functions with $$ bodies, and literal % signs.
    await conn.execute(sql.SQL(text))
