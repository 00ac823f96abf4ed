"""The event stream's LISTEN connection, opened again before its credentials expire,
without losing or repeating a NOTIFY.

A login by token (Lakebase OAuth, RDS IAM, Entra: CONVEYOR_DATABASE_CREDENTIALS) has a
life, and a web process's LISTEN connection lives as long as the process. A service that
ends a connection whose token expired would cut the stream off, and the NOTIFYs sent
until it is back would be lost (its clients told to refresh). So, when the connection's
credentials near their end (`Credentials.lifetime()`, the share of the token's life the
pool keeps its own connections for), a second connection is opened with fresh ones and
the first is closed once the second hears all that the first would have:

1. the new connection LISTENs; from then on every NOTIFY reaches both connections;
2. a marker, `{"handover": "<random>"}`, is NOTIFYed on the same channel;
3. the old connection's NOTIFYs are handed on up to its marker, the new one's after it.

PostgreSQL delivers the NOTIFYs of committed transactions to each listener in commit
order, so the marker falls at the same place in both sequences: each NOTIFY is handed on
once, by one of the two connections. (Workers and other listeners ignore the marker: it
names no agent and no tasks.) A handover that cannot finish within `timeout` (the new
connection does not come up, the marker cannot be sent or does not arrive) keeps the old
connection and is tried again a second later; if the old connection dies meanwhile, the
listener's own reconnection tells the clients to refresh, as after any outage.

Without a provider, or with one that gives no expiry, the connection is never replaced.

The schedule and the connections are conveyor.listener's (`renewal_delay`, `Listener`,
whose `open_listening` opens every LISTEN connection): this adds only the exactness. Its
feeds do not renew themselves (`renew=False`); other listeners, the workers', renew more
simply, since a NOTIFY they miss costs them nothing (see conveyor.listener).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from conveyor.listener import Listener, renewal_delay
from conveyor.log import fields

log = logging.getLogger(__name__)

#: Seconds between two looks at a provider that gave no expiry (it may give one later).
UNBOUNDED_RECHECK = 60.0
#: Seconds before a handover that did not finish is tried again.
RETRY_DELAY = 1.0


@dataclass(eq=False)
class _Feed:
    """One LISTEN connection and whether its NOTIFYs are handed on (`live`)."""

    live: bool
    listener: Listener | None = None
    task: asyncio.Task[None] | None = None
    marker: str | None = None  # the handover marker this feed waits for
    marked: asyncio.Event = field(default_factory=asyncio.Event)


class RenewingListener:
    """A Listener (same callbacks) whose connection is replaced before its token expires.

    `notify(payload)` sends a NOTIFY on the listener's channel over another connection
    (the app's pool): how the handover's marker is sent."""

    def __init__(
        self,
        url: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        on_reconnect: Callable[[], None],
        notify: Callable[[str], Awaitable[None]],
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.on_event = on_event
        self.on_reconnect = on_reconnect
        self.notify = notify
        self.timeout = timeout
        self.handovers = 0  # completed, for tests and logs
        self._current: _Feed | None = None
        self._listening = asyncio.Event()

    async def wait_listening(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._listening.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """Listen for ever, handing over to a fresh connection before each token ends."""
        self._current = self._start(live=True)
        try:
            retry = False
            while True:
                if retry:  # the current connection's credentials end soon: no waiting
                    delay: float | None = RETRY_DELAY
                else:
                    delay = await self._listening_for()
                if delay is None:
                    await asyncio.sleep(UNBOUNDED_RECHECK)
                    continue
                await asyncio.sleep(delay)
                retry = not await self._hand_over()
        finally:
            await self.close()

    async def close(self) -> None:
        if self._current is not None:
            await self._stop(self._current)

    async def _listening_for(self) -> float | None:
        """Once the current connection listens: how long its credentials last (None: no
        end known)."""
        feed = self._current
        assert feed is not None and feed.listener is not None and feed.task is not None
        while not await feed.listener.wait_listening(1.0):
            if feed.task.done():
                feed.task.result()  # a listener never ends by itself: raise what ended it
        self._listening.set()
        return renewal_delay(self.url, feed.listener.connection)

    def _start(self, *, live: bool) -> _Feed:
        feed = _Feed(live=live)
        feed.listener = Listener(
            self.url,
            lambda event: self._heard(feed, event),
            on_reconnect=self.on_reconnect,
            renew=False,  # this hands over instead
        )
        feed.task = asyncio.ensure_future(feed.listener.run())
        return feed

    def _heard(self, feed: _Feed, event: dict[str, Any]) -> None:
        marker = event.get("handover")
        if marker is not None:
            if marker == feed.marker:
                feed.live = not feed.live  # the old one falls silent, the new one speaks
                feed.marked.set()
            return  # a marker is never an event (another process's included)
        if feed.live:
            self.on_event(event)

    async def _hand_over(self) -> bool:
        """Replace the current connection; False if it is kept (try again later)."""
        old, new = self._current, self._start(live=False)
        assert old is not None and new.listener is not None
        try:
            async with asyncio.timeout(self.timeout):
                if not await new.listener.wait_listening(self.timeout):
                    raise TimeoutError
                old.marker = new.marker = secrets.token_hex(8)
                await self.notify(json.dumps({"handover": new.marker}))
                await new.marked.wait()
                await old.marked.wait()
        except asyncio.CancelledError:
            await self._stop(new)
            raise
        except Exception as exc:  # a timeout, or the marker could not be sent
            if new.marked.is_set():
                # The new connection hears everything from the marker on and the old one
                # has not come that far (it is broken, and reconnecting): go on with the
                # new one; what the old one missed, its clients reread.
                log.warning("event stream: LISTEN handed over before the old one caught up")
                self._current = new
                await self._stop(old)
                self.on_reconnect()
                return True
            if old.marked.is_set():
                self.on_reconnect()  # the old one skipped what came after its marker
            old.marker, old.live = None, True
            log.warning(
                "event stream: could not hand LISTEN over to fresh credentials; retrying",
                extra=fields(error=f"{type(exc).__name__}: {exc}".strip(": ")),
            )
            await self._stop(new)
            return False
        self._current = new
        await self._stop(old)
        self.handovers += 1
        log.info("event stream: LISTEN handed over to fresh credentials")
        return True

    async def _stop(self, feed: _Feed) -> None:
        if feed.task is not None:
            feed.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feed.task
        if feed.listener is not None:
            await feed.listener.close()
