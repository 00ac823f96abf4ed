"""One LISTEN connection on the channel 'conveyor', turned into callbacks.

The connection is dedicated (a pooled connection cannot stay in LISTEN). When it breaks it
is re-established with backoff, and `on_reconnect` runs: NOTIFYs sent while it was down
are gone, so whoever listens must look at the database again.

Every LISTEN connection of the package is opened here (`open_listening`), with the URL's
registered credentials (`conveyor.db.credentials`), and none outlives them: when they come
with an expiry, the connection is renewed at `renewal_delay`, the share of the token's
life the pool keeps its own connections for. A service that ends a connection whose token
expired (Lakebase, a proxy) then never cuts a listener off.

How it is renewed depends on what a lost NOTIFY costs. Here (`renew=True`, the workers'
and `submit --wait`'s listener) the fresh connection LISTENs before the old one is closed,
what the old one had already received is handed on, and `on_reconnect` runs, as after any
reconnection: a NOTIFY still in flight to the old connection may be missed, and one sent
while both listened may be handed on twice. A worker loses nothing by either: its
on_reconnect is a claim, which finds any task whose enqueue it did not hear, a repeated
wake-up is one more claim, and a cancel or a callback it did not hear is found by its next
lease renewal (conveyor.worker.leases). Sharing the web's exact handover
(conveyor.web.handover: a marker NOTIFY, two connections until both heard it) would buy a
worker nothing and send every listener in the system a marker per renewal of every
worker. The event stream, whose clients would be told to refresh, needs that exactness:
its feeds are Listeners with `renew=False`, renewed by the handover on the same schedule.

A worker's listener also claims (`after_events`, conveyor.worker.exchange.Exchange.
claim_idle): between two batches of NOTIFYs the connection is free for a statement, and
the server process behind it, which has just sent the NOTIFY, answers sooner than a pooled
connection's that slept. Such a connection is bounded like the pool's (`statement_timeout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg.rows import dict_row

from conveyor.db.credentials import connect_to, for_url
from conveyor.log import fields

log = logging.getLogger(__name__)

CHANNEL = "conveyor"
#: The longest wait between reconnection attempts: events flow again within it of the
#: server's return (a refused attempt costs next to nothing).
MAX_RETRY_DELAY = 0.5
#: pg_stat_activity.application_name of LISTEN connections (unless the URL names one): a
#: worker's also runs its idle claims, so its last query is not always the LISTEN.
APPLICATION_NAME = "conveyor listener"
#: Seconds a connection attempt may take.
CONNECT_TIMEOUT = 5
#: Seconds before a renewal that could not connect is tried again (the old connection
#: goes on listening meanwhile).
RETRY_RENEW = 1.0


async def open_listening(
    url: str, *, statement_timeout: float | None = None
) -> psycopg.AsyncConnection[Any]:
    """A connection of its own to `url`, LISTENing on CHANNEL. With the URL's registered
    credentials, if they rotate: a refused login asks for fresh ones once, a provider that
    fails is a connection error like any other. `statement_timeout` (seconds), for a
    connection that also runs statements (a worker's idle claims, Listener.after_events),
    bounds them as the pool bounds its own, set in the same round trip as the LISTEN."""
    options: dict[str, Any] = {}
    if "application_name" not in psycopg.conninfo.conninfo_to_dict(url):
        options["application_name"] = APPLICATION_NAME
    conn = await connect_to(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, row_factory=dict_row, **options
    )
    setup = f"LISTEN {CHANNEL}"
    if statement_timeout is not None:
        ms = int(statement_timeout * 1000)
        setup += f"; SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {ms}"
    try:
        await conn.execute(setup)
    except BaseException:
        with contextlib.suppress(psycopg.Error):
            await conn.close()
        raise
    return conn


def renewal_delay(url: str, conn: Any = None) -> float | None:
    """Seconds until `conn`, a LISTEN connection to `url` opened just now, must be renewed
    (by the expiry of the credentials it was opened with), or None if its credentials have
    no known end (none registered, or no expiry given)."""
    credentials = for_url(url)
    return credentials.lifetime(conn) if credentials is not None else None


class Listener:
    def __init__(
        self,
        url: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        on_reconnect: Callable[[], None] | None = None,
        renew: bool = True,
        after_events: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None = None,
        statement_timeout: float | None = None,
    ) -> None:
        self.url = url
        self.on_event = on_event
        self.on_reconnect = on_reconnect
        self.renew = renew
        # Run after each batch of NOTIFYs has been handed to on_event, with the listening
        # connection, which is free for statements until it returns (NOTIFYs that arrive
        # meanwhile wait in psycopg, and come next). A worker claims there, on a server
        # process that is awake (it has just sent the NOTIFY): see Worker._after_events.
        self.after_events = after_events
        self.statement_timeout = statement_timeout
        self.renewals = 0  # connections replaced before their credentials' end
        self._listening = asyncio.Event()
        self._conn: psycopg.AsyncConnection[Any] | None = None

    @property
    def connection(self) -> psycopg.AsyncConnection[Any] | None:
        """The connection listening now (None before the first one opens)."""
        return self._conn

    async def wait_listening(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._listening.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        delay = 0.05
        reconnecting = False
        while True:
            try:
                self._conn = await self._open()
                self._listening.set()
                if reconnecting:
                    self._reconnected()
                delay = 0.05
                renew_at = self._renew_at()
                while True:
                    await self._hear(None if renew_at is None else renew_at - time.monotonic())
                    renewed = await self._renewed()
                    # A renewal that failed is tried again soon: the current connection's
                    # credentials end all the same.
                    renew_at = self._renew_at() if renewed else time.monotonic() + RETRY_RENEW
            except psycopg.OperationalError as exc:
                log.warning(
                    "LISTEN connection lost, reconnecting",
                    extra=fields(error=str(exc).strip(), retry_in=round(delay, 2)),
                )
                await asyncio.sleep(delay)
                delay = min(MAX_RETRY_DELAY, delay * 2)
            except psycopg.Error as exc:
                # Any other error of the connection: listening must go on (a listener that
                # ended would leave its process deaf while it looks alive).
                log.error(
                    "LISTEN failed, reconnecting",
                    exc_info=exc,
                    extra=fields(error=str(exc).strip(), retry_in=round(delay, 2)),
                )
                await asyncio.sleep(delay)
                delay = min(MAX_RETRY_DELAY, delay * 2)
            finally:
                self._listening.clear()
                await self._close_conn()
            reconnecting = True

    def _renew_at(self) -> float | None:
        """When (monotonic) the connection opened just now must be renewed; None: never."""
        delay = renewal_delay(self.url, self._conn) if self.renew else None
        return None if delay is None else time.monotonic() + delay

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        return await open_listening(self.url, statement_timeout=self.statement_timeout)

    async def _hear(self, seconds: float | None) -> None:
        """Hand on the current connection's NOTIFYs for `seconds` (None: until it fails)."""
        conn = self._conn
        assert conn is not None
        timeout = None if seconds is None else max(0.0, seconds)
        if self.after_events is None:
            async for notify in conn.notifies(timeout=timeout):
                self._dispatch(notify.payload)
            return
        # A batch at a time (stop_after=1 ends the generator after the NOTIFYs that came
        # together), so that after_events can use the connection between batches.
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            heard = False
            async for notify in conn.notifies(timeout=remaining, stop_after=1):
                self._dispatch(notify.payload)
                heard = True
            if heard:
                await self.after_events(conn)
            # Also after a batch: NOTIFYs that keep coming must not put off a renewal.
            if deadline is not None and time.monotonic() >= deadline:
                return

    async def _renewed(self) -> bool:
        """Replace the current connection with one opened now, with fresh credentials;
        False if that failed (the current one goes on listening)."""
        try:
            fresh = await self._open()
        except psycopg.Error as exc:
            log.warning(
                "could not renew the LISTEN connection; retrying",
                extra=fields(error=str(exc).strip(), retry_in=RETRY_RENEW),
            )
            return False
        old, self._conn = self._conn, fresh
        assert old is not None
        try:
            # What the old connection received before the fresh one listened. (It also
            # received what came since, which the fresh one hands on too.)
            async for notify in old.notifies(timeout=0):
                self._dispatch(notify.payload)
        except psycopg.Error:
            pass  # it is being replaced: what it missed, on_reconnect recovers
        finally:
            with contextlib.suppress(psycopg.Error):
                await old.close()
        self.renewals += 1
        log.info("LISTEN connection renewed before its credentials expire")
        self._reconnected()
        return True

    def _reconnected(self) -> None:
        if self.on_reconnect is not None:
            self.on_reconnect()

    def _dispatch(self, payload: str) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            log.warning("ignored a NOTIFY that is not JSON", extra=fields(payload=payload[:200]))
            return
        if not isinstance(event, dict):
            return
        try:
            self.on_event(event)
        except Exception:
            # Whoever may NOTIFY can send any JSON: one the handler chokes on is that
            # event's problem, not a reason to stop hearing the next ones.
            log.exception("a NOTIFY could not be handled", extra=fields(payload=payload[:200]))

    async def _close_conn(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                await self._conn.close()
            self._conn = None

    async def close(self) -> None:
        await self._close_conn()
