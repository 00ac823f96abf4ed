"""The connection pool, and how Conveyor finds its database.

One `Database` per event loop: an async psycopg pool of autocommit connections, so a
single statement is a single round trip. Statements that must share a transaction open one
explicitly (`async with conn.transaction()`).

Nothing waits for ever on a database that stopped answering. Two bounds, because each
catches what the other cannot:

* the server's: every pooled connection runs with `statement_timeout` and
  `idle_in_transaction_session_timeout` (CONVEYOR_STATEMENT_TIMEOUT), so a slow statement
  or a stuck client's open transaction is ended by PostgreSQL, locks released;
* the client's: a server or proxy that hangs answers nothing, so no server-side timeout
  ever fires. Every round trip on a pooled connection gets the statement timeout plus a
  grace period to answer; then the connection is dropped. `connect_timeout` bounds a
  connection attempt, TCP keepalives and `tcp_user_timeout` a peer that vanished from the
  network, and the pool's `timeout` the wait for a free connection.

What the callers see is `DatabaseUnavailable`, never a driver or pool exception: every
`psycopg.OperationalError` raised in `Database.connection()` becomes one at its exit.

Outages fail fast and end fast. The first sign of one (a connection lost or gone silent,
the pool unable to connect) closes the gate: `connection()` raises at once instead of
queueing on a pool that cannot connect. A probe then tries a fresh connection every
`PROBE_INTERVAL`; the first that succeeds has the pool discard its dead connections
(`AsyncConnectionPool.check`) and opens the gate again. A server that restarts is in use
again within a probe interval of accepting connections.

Credentials that rotate (CONVEYOR_DATABASE_CREDENTIALS, `conveyor.db.credentials`) are
asked for at every new connection, the probe's included: `BoundedConnection.connect` takes
them, so that the pool, which only knows a class and keyword arguments, connects with the
current ones, asks again after a refused login, and keeps `max_lifetime` below the token's.
(psycopg_pool 3.3 also takes a callable `kwargs`, which could fetch fresh parameters but
could not retry a refused login with newer ones.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Self

import psycopg
from psycopg.abc import PQGen
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from conveyor.db import jsonb
from conveyor.db.credentials import Credentials, register
from conveyor.errors import DatabaseUnavailable
from conveyor.log import fields
from conveyor.settings import Settings

log = logging.getLogger(__name__)

#: Errors after which the same call may succeed once the server is back: a broken or
#: refused connection, a server shutting down, a deadlock the server broke by aborting us.
#: (`Database.connection()` turns all of them into DatabaseUnavailable; the raw ones stay
#: listed for code that talks to a connection of its own.)
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (DatabaseUnavailable, psycopg.OperationalError)

Connection = psycopg.AsyncConnection[DictRow]

#: Seconds a server gets to answer a round trip beyond the statement timeout, after which
#: the client stops waiting (the server's own timeout, had it fired, would have answered).
GRACE = 2.0
#: Seconds between connection attempts while the database is unavailable: how long after a
#: server is back Conveyor may take to notice (a refused attempt costs next to nothing).
PROBE_INTERVAL = 0.2
#: A connection idle for longer than this is checked (an empty query) before it is handed
#: out: the server may have restarted meanwhile. One used more recently is trusted, so that
#: a busy pool pays no extra round trip.
CHECK_IDLE_AFTER = 1.0
#: Seconds that check may take: an empty query answers at once on any live server.
CHECK_TIMEOUT = 2.0
#: Migrations may rewrite large tables: their statements get this long instead.
MIGRATION_STATEMENT_TIMEOUT = 3600.0


def resolve_url(settings: Settings) -> str:
    """The database to use: CONVEYOR_DATABASE_URL, else the embedded server (started now)."""
    if settings.database_url:
        return settings.database_url
    from conveyor.db.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(settings.home / "postgres")
    return server.start()


class BoundedConnection(psycopg.AsyncConnection[DictRow]):
    """A connection that waits a bounded time for each answer of the server.

    psycopg runs every exchange with the server (a statement, a fetch, a COPY chunk, a
    commit) through `wait()`, which takes a timeout: this passes one. Cancelling the task
    instead would make psycopg send the server a cancel request and wait for it, which a
    hung server never answers. On expiry the connection is closed (it is mid-exchange, and
    no use to anyone) and psycopg's timeout error, an OperationalError, propagates.
    """

    answer_timeout: float | None = None
    idle_since: float = 0.0
    timed_out: bool = False

    @classmethod
    async def connect(  # type: ignore[override]
        cls, conninfo: str = "", *, credentials: Credentials | None = None, **kwargs: Any
    ) -> Self:
        connect = super().connect
        if credentials is None:
            return await connect(conninfo, **kwargs)
        return await credentials.connect(connect, conninfo, **kwargs)

    async def wait(
        self, gen: PQGen[Any], interval: float = 0.1, timeout: float | None = None
    ) -> Any:
        try:
            return await super().wait(gen, interval, timeout or self.answer_timeout)
        except psycopg.OperationalError:
            # A server error is raised later, from the result; here the connection failed
            # or, still waiting for an answer (ACTIVE), timed out: then it is dropped.
            if not self.closed and self.pgconn.transaction_status == _ACTIVE:
                self.timed_out = True
                self.pgconn.finish()
            raise


_ACTIVE = psycopg.pq.TransactionStatus.ACTIVE


class Database:
    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        statement_timeout: float = 10.0,
        credentials: Credentials | None = None,
        max_lifetime: float = 3600.0,
    ) -> None:
        self.url = url
        self.credentials = credentials
        self.max_lifetime = max_lifetime
        if credentials is not None:
            register(url, credentials)  # for LISTEN connections, opened from the URL
        self.statement_timeout = statement_timeout
        self.answer_timeout = statement_timeout + GRACE
        self.connect_timeout = max(2, round(min(statement_timeout, 10.0)))
        self._outage: str | None = None  # why the gate is closed; None: open
        self._outage_since = 0.0
        self._probing: asyncio.Task[None] | None = None
        self._waiters: set[asyncio.Timeout] = set()
        self.pool: AsyncConnectionPool[BoundedConnection] = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs=self._connect_options(),
            connection_class=BoundedConnection,
            configure=self._configure,
            timeout=statement_timeout,
            # The pool's own retries back off exponentially (1 s, 2 s, 4 s, ...), which is
            # what made recovery take seconds: it gives up at once instead (two attempts)
            # and tells us, the probe takes over, and a request grows the pool again.
            reconnect_timeout=0,
            reconnect_failed=self._reconnect_failed,
            max_lifetime=max_lifetime,
            name="conveyor",
        )

    def _connect_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"credentials": self.credentials} if self.credentials else {}
        return options | {
            "autocommit": True,
            "row_factory": dict_row,
            "connect_timeout": self.connect_timeout,
            # A peer that vanished (host down, network cut) rather than hung: the kernel
            # notices unanswered keepalives or unacknowledged data and fails the socket.
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            "tcp_user_timeout": int(self.answer_timeout * 1000),
        }

    async def _configure(self, conn: BoundedConnection) -> None:
        conn.answer_timeout = self.answer_timeout
        conn.idle_since = time.monotonic()
        lifetime = self.credentials.lifetime(conn) if self.credentials is not None else None
        if lifetime is not None:
            # Read by the pool right after this hook, for this connection's expiry: it is
            # retired (and replaced with fresh credentials) before its token expires.
            self.pool.max_lifetime = min(self.max_lifetime, lifetime)
        set_json_loads(jsonb.loads, conn)
        # A session setting rather than a startup `options`, which poolers such as
        # PgBouncer refuse.
        await conn.execute(
            "SELECT set_config('statement_timeout', %(ms)s, false),"
            " set_config('idle_in_transaction_session_timeout', %(ms)s, false)",
            {"ms": str(int(self.statement_timeout * 1000))},
        )

    async def _reconnect_failed(self, pool: AsyncConnectionPool[Any]) -> None:
        self._suspect("the pool could not connect")

    async def open(self, timeout: float = 30.0) -> None:
        # One plain connection first: the pool would retry a refused connection or a wrong
        # password silently until its timeout, while this fails at once and says why.
        reason = await self._probe()
        if reason is not None:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {self.where}: {reason}")
        try:
            await self.pool.open(wait=True, timeout=timeout)
        except psycopg.OperationalError as exc:
            await self.pool.close()
            raise DatabaseUnavailable(
                f"cannot connect to PostgreSQL at {self.where}: {_line(exc)}"
            ) from exc

    async def close(self) -> None:
        if self._probing is not None:
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing
        await self.pool.close()

    @property
    def where(self) -> str:
        """The server, for messages (no password)."""
        return _redact(self.url)

    @property
    def available(self) -> bool:
        """False while an outage is known (until a probe connects again)."""
        return self._outage is None

    @asynccontextmanager
    async def connection(
        self, *, statement_timeout: float | None = None
    ) -> AsyncIterator[BoundedConnection]:
        """A pooled connection; `statement_timeout` (seconds) raises its bound for a
        long job such as a migration. Raises DatabaseUnavailable when the database is
        known to be down (at once), cannot give a connection in time, or fails meanwhile."""
        self._raise_if_down()
        conn = await self._acquire()
        try:
            if statement_timeout is not None:
                await self._set_timeout(conn, statement_timeout)
            yield conn
            if statement_timeout is not None:
                await self._set_timeout(conn, self.statement_timeout)
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) or conn.closed:
                raise self._failed(exc, conn) from exc
            raise
        finally:
            conn.idle_since = time.monotonic()
            if statement_timeout is not None and conn.answer_timeout != self.answer_timeout:
                await conn.close()  # still set for the long job: not for the next user
            await self.pool.putconn(conn)

    async def _set_timeout(self, conn: BoundedConnection, seconds: float) -> None:
        await conn.execute(
            "SELECT set_config('statement_timeout', %(ms)s, false)",
            {"ms": str(int(seconds * 1000))},
        )
        conn.answer_timeout = seconds + GRACE

    async def _acquire(self) -> BoundedConnection:
        # A connection idle for a while is checked first (the server may have restarted
        # meanwhile), here rather than by the pool's `check`, whose retries after a failed
        # check back off by seconds. Dead ones are discarded until a live one comes, the
        # pool has to connect anew, or an outage is declared.
        while True:
            conn = await self._getconn()
            if time.monotonic() - conn.idle_since < CHECK_IDLE_AFTER:
                return conn
            conn.answer_timeout = min(self.answer_timeout, CHECK_TIMEOUT)
            try:
                await AsyncConnectionPool.check_connection(conn)
            except psycopg.Error as exc:
                await self.pool.putconn(conn)  # broken: the pool replaces it
                self._suspect(f"a pooled connection was dead: {_line(exc)}")
                self._raise_if_down()
                continue
            conn.answer_timeout = self.answer_timeout
            return conn

    async def _getconn(self) -> BoundedConnection:
        # The timeout context never fires by itself (the pool has its own); an outage
        # declared meanwhile fires it, so that nobody queues for a pool that cannot connect.
        try:
            async with asyncio.timeout(None) as wake:
                self._waiters.add(wake)
                try:
                    return await self.pool.getconn()
                finally:
                    self._waiters.discard(wake)
        except TimeoutError:
            raise DatabaseUnavailable(self._outage_message()) from None
        except psycopg.OperationalError as exc:  # PoolTimeout, TooManyRequests, PoolClosed
            self._suspect(_line(exc))
            raise DatabaseUnavailable(
                f"no connection to PostgreSQL at {self.where}: {_line(exc)}"
            ) from exc

    def _failed(self, exc: psycopg.Error, conn: BoundedConnection) -> DatabaseUnavailable:
        """The error to raise for `exc`; a lost connection also closes the gate."""
        if conn.timed_out:
            reason = f"PostgreSQL did not answer within {self.answer_timeout:g} s"
            self._declare(reason)
        elif conn.closed or conn.broken:
            reason = f"lost the connection to PostgreSQL: {_line(exc)}"
            self._declare(reason)
        elif isinstance(exc, psycopg.errors.QueryCanceled):
            reason = f"{_line(exc)} (CONVEYOR_STATEMENT_TIMEOUT is {self.statement_timeout:g}s)"
        else:
            reason = _line(exc)
        return DatabaseUnavailable(f"{reason} ({self.where}); try again")

    # ---- outages --------------------------------------------------------------------

    def _raise_if_down(self) -> None:
        if self._outage is not None:
            raise DatabaseUnavailable(self._outage_message())

    def _outage_message(self) -> str:
        since = time.monotonic() - self._outage_since
        return (
            f"PostgreSQL at {self.where} is unavailable ({self._outage}, {since:.1f} s ago); "
            "try again"
        )

    def _declare(self, reason: str) -> None:
        """Close the gate: requests fail at once until a probe connects again."""
        if self._outage is None:
            self._outage, self._outage_since = reason, time.monotonic()
            log.warning("database unavailable", extra=fields(where=self.where, error=reason))
        for waiter in list(self._waiters):
            if not waiter.expired():  # (one already firing may not be rescheduled)
                waiter.reschedule(-1)  # fire now: see _getconn
        self._start_probing()

    def _suspect(self, reason: str) -> None:
        """Something looks wrong, but perhaps with one connection only: probe, and declare
        an outage only if a fresh connection fails too."""
        log.debug("database suspect", extra=fields(where=self.where, error=reason))
        self._start_probing()

    def _start_probing(self) -> None:
        if self._probing is None or self._probing.done():
            self._probing = asyncio.get_running_loop().create_task(
                self._watch(), name="conveyor-db-probe"
            )

    async def _watch(self) -> None:
        while True:
            try:
                reason = await self._probe()
                if reason is None:
                    # Back: the pooled connections from before are likely dead (a
                    # restart), and a check of each now costs less than a failed request.
                    with contextlib.suppress(psycopg.Error):
                        await self.pool.check()
                    break
                self._declare(reason)
            except Exception:  # a bug here must not leave the gate closed for ever
                log.exception("database probe failed", extra=fields(where=self.where))
            await asyncio.sleep(PROBE_INTERVAL)
        if self._outage is not None:
            log.warning(
                "database available again",
                extra=fields(
                    where=self.where, after=round(time.monotonic() - self._outage_since, 2)
                ),
            )
        self._outage = None

    async def _probe(self) -> str | None:
        """None if a fresh connection works; else why not."""
        try:
            conn = await BoundedConnection.connect(self.url, **self._connect_options())
        except psycopg.Error as exc:
            return _line(exc)
        try:
            conn.answer_timeout = self.answer_timeout
            await conn.execute("SELECT 1")
        except psycopg.Error as exc:
            return _line(exc)
        finally:
            await conn.close()
        return None


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


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
