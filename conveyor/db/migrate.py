"""Schema migrations: the plain SQL files in `migrations/`, applied in name order.

Every run takes one transaction-scoped advisory lock, so any number of processes may call
`migrate()` at once (workers starting together, `conveyor up` beside `conveyor migrate`);
one applies what is missing, the others then find nothing to do. A file is applied whole
or not at all, and recorded with its checksum in `conveyor_migrations`.
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

log = logging.getLogger(__name__)

# Fixed key for pg_advisory_xact_lock; the text only names it for people reading pg_locks.
_LOCK_KEY = "select pg_advisory_xact_lock(hashtext('conveyor.migrate'))"


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


async def migrate(conn: psycopg.AsyncConnection[object]) -> list[str]:
    """Apply the migrations this database lacks; return the names applied."""
    applied_now: list[str] = []
    async with conn.transaction():
        await conn.execute(_LOCK_KEY)
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
            # A whole file in one simple-protocol call (no parameters): it may hold many
            # statements, functions with $$ bodies, and literal % signs.
            await conn.execute(sql.SQL(migration.text))
            await conn.execute(
                "INSERT INTO conveyor_migrations (name, checksum) VALUES (%s, %s)",
                (migration.name, migration.checksum),
            )
            applied_now.append(migration.name)
            log.info("applied migration", extra=fields(migration=migration.name))
    unknown = set(done) - {m.name for m in available()}
    if unknown:
        raise MigrationError(
            f"the database has migrations this version of Conveyor does not know: "
            f"{sorted(unknown)}; upgrade Conveyor"
        )
    return applied_now
