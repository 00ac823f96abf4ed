"""Token estimates corrected by what attempts really used, per agent.

Admission reserves a task's estimate before any model call (`conveyor.limits`): an
estimate that is too low lets a budget be overspent, one too high leaves it idle. The
estimate of a document (`conveyor.agents.llm.estimate_tokens`: its text at four characters
a token, plus the instructions, schema and answer of each request) is a rule of thumb; a
given model's tokenizer and answers differ from it by a steady factor. So each agent
keeps a `Correction`: the median of actual / estimated over its last WINDOW successful
attempts, applied to every new estimate once MIN_SAMPLES are known. It is seeded from
`task_attempts` (`from_attempts`) and learns from every attempt after that.

The median, not the mean: one document answered at length (a long table of line items)
must not move every later estimate.

One rule for every process (`Corrections`): a worker and a web app alike take an agent's
correction from its attempts in `task_attempts`, read when the process first estimates for
the agent and read again once REFRESH_SECONDS old (so a web app, which runs no attempts,
follows what the workers spend, and a worker what the others do); a worker also learns
from each attempt it runs in between.
"""

from __future__ import annotations

import asyncio
import logging
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from conveyor.sql import Queries

WINDOW = 50
MIN_SAMPLES = 3
REFRESH_SECONDS = 300.0
Q = Queries("estimates")
log = logging.getLogger(__name__)


class Correction:
    """actual / estimated, learnt; thread-safe (estimates are made on enqueue threads)."""

    def __init__(self, window: int = WINDOW) -> None:
        self._ratios: deque[float] = deque(maxlen=window)
        self._lock = threading.Lock()

    def learn(self, estimate: int, actual: int) -> None:
        if estimate > 0 and actual > 0:
            with self._lock:
                self._ratios.append(actual / estimate)

    @property
    def factor(self) -> float:
        with self._lock:
            if len(self._ratios) < MIN_SAMPLES:
                return 1.0
            return statistics.median(self._ratios)

    @property
    def samples(self) -> int:
        with self._lock:
            return len(self._ratios)

    def apply(self, estimate: int) -> int:
        return math.ceil(estimate * self.factor) if estimate > 0 else estimate


async def from_attempts(
    conn: Any, agent: str, estimate: Callable[[dict[str, Any]], int]
) -> Correction:
    """A correction seeded from the agent's latest attempts; `estimate` is the agent's
    raw estimator (payload -> tokens), applied again to each task's payload."""
    correction = Correction()
    cursor = await conn.execute(Q.attempts_tokens_recent, {"agent": agent, "limit": WINDOW})
    rows = await cursor.fetchall()
    for row in reversed(rows):  # oldest first, as if learnt live
        payload = {"chars": row["chars"], "pages": row["pages"]}
        correction.learn(estimate(payload), int(row["actual"]))
    return correction


class Corrections:
    """Every agent's Correction in this process, read from `task_attempts` as the module
    says. `database` is the App's (`App.database`): anything with `connection()`."""

    def __init__(
        self, database: Callable[[], Awaitable[Any]], refresh: float = REFRESH_SECONDS
    ) -> None:
        self._database = database
        self._refresh = refresh
        self._known: dict[str, tuple[Correction, float]] = {}  # agent -> (it, read at)
        self._reading: dict[str, asyncio.Task[Correction]] = {}

    def known(self, agent: str) -> Correction | None:
        found = self._known.get(agent)
        return found[0] if found else None

    async def get(self, agent: str, estimate: Callable[[dict[str, Any]], int]) -> Correction:
        """The agent's correction, read (again) from its attempts when unknown or stale."""
        found = self._known.get(agent)
        if found is not None and time.monotonic() - found[1] < self._refresh:
            return found[0]
        try:
            db = await self._database()
            async with db.connection() as conn:
                fresh = await from_attempts(conn, agent, estimate)
        except Exception as exc:  # an estimate is advice: never fail over it
            log.warning("token estimates uncorrected: %s", exc, extra={"agent": agent})
            fresh = found[0] if found is not None else Correction()
        self._known[agent] = (fresh, time.monotonic())
        return fresh

    def apply(self, agent: str, estimate: Callable[[dict[str, Any]], int], payload: Any) -> int:
        """The corrected estimate of `payload`, for a synchronous estimator: with what is
        known now, a read of the attempts started when that is missing or stale (on the
        running event loop, if there is one)."""
        value = estimate(payload)
        found = self._known.get(agent)
        if found is None or time.monotonic() - found[1] >= self._refresh:
            self._read_soon(agent, estimate)
        return found[0].apply(value) if found is not None else value

    def _read_soon(self, agent: str, estimate: Callable[[dict[str, Any]], int]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        reading = self._reading.get(agent)
        if reading is not None and not reading.done():
            return
        self._reading[agent] = loop.create_task(self.get(agent, estimate))
