"""The live event stream: one LISTEN connection per web process, fanned out over SSE.

`GET /api/events` answers `text/event-stream`; each change of a task's status is one event:

    id: 9c41d2e0-1734
    event: task
    data: {"id": 17, "agent": "invoice", "status": "completed"}

A statement that changed more than 200 tasks NOTIFYs only their number, and becomes one
event `{"agent", "status", "count"}`. Under heavy fan-out (from `coalesce_from` clients
on), a statement that changed several tasks becomes one event naming them all,
`{"agent", "status", "ids": [...]}`: every client receives every byte, so at a thousand
clients the bytes are what the stream costs: a worker's statement that finished 16 tasks is
216 bytes this way instead of 16 x 93 (tests/test_events.py checks the ratio).

An event `refresh` tells the client to read its numbers again: the LISTEN connection was
re-established (NOTIFYs sent meanwhile are lost), its `Last-Event-ID` is too old or from
another process, or it fell so far behind that coalescing its backlog into one refresh is
cheaper than sending it. Every ~15 s of silence there is a heartbeat: a comment line for
proxies and a `ping` event that a page can watch (browsers hide comments from scripts).

How it is built: the hub appends every event, encoded once, to one ring buffer; a client
is a cursor into it, so fanning an event out to a thousand clients costs one wake-up, not
a thousand queue appends, and each client's backlog is bounded by the ring. Under load the
wake-ups are spaced (5 ms apart for a few clients, up to 250 ms for a thousand), so that
events travel in batches; after a quiet spell an event goes out at once. A client whose
backlog nears the ring's size gets a `refresh` instead of the backlog; a client stuck in a
write (its socket is full) while the ring laps it is dropped, and never slows the others.

Event ids are `<process>-<sequence>`: the sequence increases within the stream, and the
random process part makes an id from before a restart, or from another web process behind
the same load balancer, recognisably unknown (a `refresh`) rather than wrongly resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from conveyor.app import App
from conveyor.listener import CHANNEL
from conveyor.log import fields
from conveyor.states import TaskStatus
from conveyor.web.errors import ApiError
from conveyor.web.handover import RenewingListener

log = logging.getLogger(__name__)

HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache, no-transform"),
    # nginx buffers proxied responses unless told not to; an event stream must not wait.
    (b"x-accel-buffering", b"no"),
]


@dataclass(slots=True)
class _Event:
    seq: int
    agent: str | None  # None: a refresh, which every client gets whatever its filters
    status: str | None
    wire: bytes


@dataclass(eq=False)
class Client:
    agents: frozenset[str] | None
    statuses: frozenset[str] | None
    cursor: int  # the sequence of the last event this client was given
    writing: bool = False
    dropped: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def wants(self, event: _Event) -> bool:
        if event.agent is None:
            return True
        return (self.agents is None or event.agent in self.agents) and (
            self.statuses is None or event.status in self.statuses
        )


class EventHub:
    """Fans the NOTIFYs of one LISTEN connection out to this process's SSE clients.

    Set the tuning attributes before `start()`; tests make them small."""

    def __init__(self) -> None:
        self.instance = secrets.token_hex(4)
        self.ring_size = 4096  # events kept for resuming and for slow readers
        self.heartbeat = 15.0  # seconds of silence before a heartbeat
        self.sweep_interval = 1.0  # how often stuck clients are looked for
        # Under load, clients are woken at most once per linger: events batch up instead
        # of costing a wake-up and a write (at both ends) each; after a quiet spell the
        # first event goes out at once. A wake-up costs a write per client (a system call
        # and a pass through the ASGI stack), so the linger grows with the clients to keep
        # the writes near `writes_per_second`: 5 ms up to 20 clients, 250 ms from 1,000.
        self.writes_per_second = 4_000
        self.linger_bounds = (0.005, 0.25)
        # From this many clients on, a statement's tasks travel as one event with their ids.
        self.coalesce_from = 100
        self.clients: set[Client] = set()
        self.head = 0  # the sequence of the newest event; 0: none yet
        self.enabled = False
        self.closing = False
        self._ring: list[_Event | None] = []
        self._next: asyncio.Future[None] | None = None  # resolved at the next wake-up
        self._last_wake = 0.0
        self._wake_at: asyncio.TimerHandle | None = None
        self._chunk: tuple[int, int, bytes] = (0, 0, b"")  # the last unfiltered backlog
        self._listener: RenewingListener | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # -- life cycle ----------------------------------------------------------------------

    async def start(self, app: App) -> None:
        """Hold the LISTEN connection (unless CONVEYOR_LISTEN=0, behind a transaction
        pooler: then the stream answers 503 and the dashboard polls)."""
        self._ring = [None] * self.ring_size
        self.closing = False
        if not app.settings.listen:
            return
        db = await app.database()

        async def notify(payload: str) -> None:
            async with app.connection() as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

        # Opened again, with fresh credentials, before a rotating token expires
        # (conveyor.web.handover): no NOTIFY lost or repeated, no refresh for the clients.
        self._listener = RenewingListener(
            db.url, self._on_notify, on_reconnect=self._on_reconnect, notify=notify
        )
        self._tasks = [
            asyncio.create_task(self._listener.run(), name="conveyor-events-listen"),
            asyncio.create_task(self._sweep(), name="conveyor-events-sweep"),
        ]
        if not await self._listener.wait_listening(10.0):
            log.warning("the event stream's LISTEN connection is not up yet; retrying")
        self.enabled = True

    def close_streams(self) -> None:
        """End every stream, so that a server shutting down does not wait for them
        forever; a client stuck in a write is cut off a second later."""
        self.closing = True
        self._wake_now()
        loop = asyncio.get_running_loop()
        for client in list(self.clients):
            loop.call_later(1.0, self._drop, client, "shutdown")

    async def stop(self) -> None:
        self.close_streams()
        self.enabled = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._listener is not None:
            await self._listener.close()
            self._listener = None

    # -- events in -----------------------------------------------------------------------

    def _on_notify(self, payload: dict[str, Any]) -> None:
        if payload.get("event") == "review":  # a review marked or decided (web/reviews.py)
            if isinstance(payload.get("agent"), str) and isinstance(payload.get("id"), int):
                data = {k: payload.get(k) for k in ("id", "agent", "tenant", "review", "version")}
                if isinstance(payload.get("by"), str):
                    data["by"] = payload["by"]
                self._append("review", payload["agent"], None, data)
                self._wake()
            return
        agent, status = payload.get("agent"), payload.get("status")
        if not isinstance(agent, str) or not isinstance(status, str):
            return
        ids, count = payload.get("ids"), payload.get("count")
        if isinstance(ids, list):
            ids = [i for i in ids if isinstance(i, int)]
            if len(ids) > 1 and len(self.clients) >= self.coalesce_from:
                self._append("task", agent, status, {"agent": agent, "status": status, "ids": ids})
            else:
                for task_id in ids:
                    self._append(
                        "task", agent, status, {"id": task_id, "agent": agent, "status": status}
                    )
        elif isinstance(count, int):
            self._append("task", agent, status, {"agent": agent, "status": status, "count": count})
        self._wake()

    def _on_reconnect(self) -> None:
        log.info("event stream: LISTEN re-established; clients are told to refresh")
        self._append("refresh", None, None, {"reason": "reconnected"})
        self._wake()

    def _append(self, kind: str, agent: str | None, status: str | None, data: Any) -> None:
        self.head += 1
        self._ring[self.head % self.ring_size] = _Event(
            self.head, agent, status, _wire(self.event_id(self.head), kind, data)
        )

    def _wake(self) -> None:
        if self._wake_at is not None:
            return  # a wake-up is due shortly and will cover this event too
        loop = asyncio.get_running_loop()
        low, high = self.linger_bounds
        linger = min(high, max(low, len(self.clients) / self.writes_per_second))
        delay = self._last_wake + linger - loop.time()
        if delay > 0:
            self._wake_at = loop.call_later(delay, self._wake_now)
        else:
            self._wake_now()

    def _wake_now(self) -> None:
        # One future for all waiting clients: resolving it wakes them all in one pass (an
        # asyncio.Event would cost each waiter a linear removal from its list of waiters).
        self._wake_at = None
        self._last_wake = asyncio.get_running_loop().time()
        woken, self._next = self._next, None
        if woken is not None and not woken.done():
            woken.set_result(None)

    def _changed(self) -> asyncio.Future[None]:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        return self._next

    # -- events out ----------------------------------------------------------------------

    def event_id(self, seq: int) -> str:
        return f"{self.instance}-{seq}"

    def subscribe(
        self, agents: frozenset[str] | None, statuses: frozenset[str] | None, last_id: str | None
    ) -> tuple[Client, bytes]:
        """A new client and what it is sent first: a refresh when it cannot resume."""
        client = Client(agents, statuses, cursor=self.head)
        first = b"retry: 1000\n\n"  # EventSource reconnects after 1 s (its default is ~3 s)
        if last_id is not None:
            seq = self._resumable(last_id)
            if seq is None:
                first += self._refresh("unknown_last_event_id")
            else:
                client.cursor = seq
        self.clients.add(client)
        return client, first

    def _resumable(self, last_id: str) -> int | None:
        instance, _, seq_text = last_id.strip().partition("-")
        if instance != self.instance or not seq_text.isdigit():
            return None
        seq = int(seq_text)
        # Resuming needs every event after `seq` still in the ring.
        if self.head - self.ring_size <= seq <= self.head:
            return seq
        return None

    def _refresh(self, reason: str) -> bytes:
        return _wire(self.event_id(self.head), "refresh", {"reason": reason})

    def take(self, client: Client) -> bytes:
        """The client's backlog as one write, its cursor moved to the newest event."""
        behind = self.head - client.cursor
        if behind <= 0:
            return b""
        if behind > self.ring_size * 3 // 4:
            # Nearly a whole ring behind: one refresh is smaller, and the client's numbers
            # are reread anyway.
            client.cursor = self.head
            return self._refresh("behind")
        unfiltered = client.agents is None and client.statuses is None
        if unfiltered and self._chunk[:2] == (client.cursor, self.head):
            # Clients woken together mostly share a cursor: the same bytes, joined once.
            client.cursor = self.head
            return self._chunk[2]
        ring, size = self._ring, self.ring_size
        parts = []
        for seq in range(client.cursor + 1, self.head + 1):
            event = ring[seq % size]
            if event is not None and client.wants(event):
                parts.append(event.wire)
        chunk = b"".join(parts)
        if unfiltered:
            self._chunk = (client.cursor, self.head, chunk)
        client.cursor = self.head
        return chunk

    async def pump(self, client: Client, send: Send) -> None:
        """Write the client's events as they come, heartbeats in the silences."""
        while not self.closing:
            if client.cursor >= self.head:
                try:
                    async with asyncio.timeout(self.heartbeat):
                        # shielded: a client that leaves must not cancel everyone's future
                        await asyncio.shield(self._changed())
                except TimeoutError:
                    await self._write(client, send, b": heartbeat\n\nevent: ping\ndata: {}\n\n")
                continue
            chunk = self.take(client)
            if chunk:
                await self._write(client, send, chunk)

    async def _write(self, client: Client, send: Send, chunk: bytes) -> None:
        client.writing = True
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        client.writing = False

    def unsubscribe(self, client: Client) -> None:
        self.clients.discard(client)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            self.sweep_once()

    def sweep_once(self) -> int:
        """Drop the clients stuck in a write while the ring lapped them; how many."""
        stuck = [c for c in self.clients if c.writing and self.head - c.cursor > self.ring_size]
        for client in stuck:
            self._drop(client, "slow")
        return len(stuck)

    def _drop(self, client: Client, reason: str) -> None:
        if client in self.clients and client.task is not None and not client.task.done():
            log.warning("event stream: client dropped", extra=fields(reason=reason))
            client.dropped = True
            client.task.cancel()


def _wire(event_id: str, kind: str, data: Any) -> bytes:
    body = json.dumps(data, separators=(",", ":"))
    return f"id: {event_id}\nevent: {kind}\ndata: {body}\n\n".encode()


class EventStream(Response):
    """The stream as a raw ASGI response: the pump runs beside a watch for the client's
    disconnect, so that a client that goes away frees its resources at once, and a
    dropped one is cut off even while its write is blocked."""

    def __init__(self, hub: EventHub, client: Client, first: bytes) -> None:
        super().__init__()
        self.hub, self.client, self.first = hub, client, first

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hub, client = self.hub, self.client
        try:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            await send({"type": "http.response.body", "body": self.first, "more_body": True})
            client.task = asyncio.create_task(hub.pump(client, send))
            watch = asyncio.create_task(_disconnected(receive))
            await asyncio.wait({client.task, watch}, return_when=asyncio.FIRST_COMPLETED)
            for task in (client.task, watch):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if not client.dropped and not watch.cancelled():
                return  # the client went away
            if not client.dropped:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            # A dropped client's write is blocked: returning without ending the response
            # makes the server close the connection.
        finally:
            hub.unsubscribe(client)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def router(hub: EventHub) -> APIRouter:
    api = APIRouter()

    # Not in the OpenAPI document: a stream is not a request/response operation (and a
    # fuzzer that waits for its end would wait forever). docs/dashboard.md describes it.
    @api.get("/api/events", include_in_schema=False)
    async def events(
        agent: Annotated[list[str] | None, Query(max_length=100)] = None,
        status: Annotated[list[TaskStatus] | None, Query()] = None,
        last_event_id: Annotated[str | None, Header(max_length=100)] = None,
    ) -> Response:
        if not hub.enabled:
            raise ApiError(
                503,
                "events_unavailable",
                "the event stream needs LISTEN/NOTIFY, which is off here (CONVEYOR_LISTEN=0); "
                "poll /api/metrics and /api/tasks instead",
            )
        client, first = hub.subscribe(
            frozenset(agent) if agent else None,
            frozenset(str(s) for s in status) if status else None,
            last_event_id,
        )
        return EventStream(hub, client, first)

    return api
