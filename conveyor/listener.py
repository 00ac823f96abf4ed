"""One LISTEN connection on the channel 'conveyor', turned into callbacks.

The connection is dedicated (a pooled connection cannot stay in LISTEN). When it breaks it
is re-established with backoff, and `on_reconnect` runs: NOTIFYs sent while it was down
are gone, so whoever listens must look at the database again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import psycopg

from conveyor.db.credentials import connect_to
from conveyor.log import fields

log = logging.getLogger(__name__)

CHANNEL = "conveyor"
#: The longest wait between reconnection attempts: events flow again within it of the
#: server's return (a refused attempt costs next to nothing).
MAX_RETRY_DELAY = 0.5


class Listener:
    def __init__(
        self,
        url: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        on_reconnect: Callable[[], None] | None = None,
    ) -> None:
        self.url = url
        self.on_event = on_event
        self.on_reconnect = on_reconnect
        self._listening = asyncio.Event()
        self._conn: psycopg.AsyncConnection[Any] | None = None

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
                # With the URL's registered credentials, if they rotate (a refused login
                # asks for fresh ones once; a provider that fails is a connection error).
                self._conn = await connect_to(self.url, autocommit=True, connect_timeout=5)
                await self._conn.execute(f"LISTEN {CHANNEL}")
                self._listening.set()
                if reconnecting and self.on_reconnect is not None:
                    self.on_reconnect()
                delay = 0.05
                async for notify in self._conn.notifies():
                    self._dispatch(notify.payload)
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
