"""The connection pool, and how Conveyor finds its database.

One `Database` per event loop: an async psycopg pool of autocommit connections, so a
single statement is a single round trip. Statements that must share a transaction open one
explicitly (`async with conn.transaction()`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from conveyor.errors import DatabaseUnavailable
from conveyor.log import fields
from conveyor.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

Connection = psycopg.AsyncConnection[DictRow]

#: Errors after which the same call may succeed once the server is back: a broken or
#: refused connection, a server shutting down, a deadlock the server broke by aborting us.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    psycopg.OperationalError,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    PoolTimeout,
)


def resolve_url(settings: Settings) -> str:
    """The database to use: CONVEYOR_DATABASE_URL, else the embedded server (started now)."""
    if settings.database_url:
        return settings.database_url
    from conveyor.db.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(settings.home / "postgres")
    return server.start()


class Database:
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8) -> None:
        self.url = url
        self.pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True, "row_factory": dict_row},
            connection_class=psycopg.AsyncConnection[DictRow],
            # A broken connection is replaced in the background; a request that finds no
            # connection within `timeout` raises PoolTimeout, which callers treat as transient.
            timeout=10.0,
            reconnect_timeout=0,  # keep trying to reconnect for as long as the server is away
            name="conveyor",
        )

    async def open(self, timeout: float = 30.0) -> None:
        # One plain connection first: the pool would retry a refused connection or a wrong
        # password silently until its timeout, while this fails at once and says why.
        try:
            probe = await psycopg.AsyncConnection.connect(self.url, connect_timeout=10)
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise DatabaseUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: {reason}"
            ) from None
        await probe.close()
        try:
            await self.pool.open(wait=True, timeout=timeout)
        except PoolTimeout as exc:
            await self.pool.close()
            raise DatabaseUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}"
            ) from exc

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        async with self.pool.connection() as conn:
            yield conn

    async def fetch(
        self, query: LiteralString, params: dict[str, Any] | None = None
    ) -> list[DictRow]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []


async def retry_transient(
    operation: Callable[[], Awaitable[T]],
    *,
    what: str,
    stop: asyncio.Event | None = None,
    max_delay: float = 5.0,
) -> T:
    """Run `operation` until it succeeds, waiting out database outages with backoff.

    Only for operations that are safe to repeat (every worker write is fenced and
    idempotent). Gives up only when `stop` is set, by raising the last error.
    """
    delay = 0.05
    while True:
        try:
            return await operation()
        except TRANSIENT_ERRORS as exc:
            if stop is not None and stop.is_set():
                raise
            log.warning(
                "database unavailable, retrying",
                extra=fields(
                    operation=what,
                    error=str(exc).strip() or type(exc).__name__,
                    retry_in=round(delay, 2),
                ),
            )
            await asyncio.sleep(delay)
            delay = min(max_delay, delay * 2)


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<invalid url>"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(
        "", **{k: str(v) for k, v in info.items() if v is not None}
    )
