"""Token estimates corrected by what attempts really used, per agent.

Admission reserves a task's estimate before any model call (`conveyor.limits`): an
estimate that is too low lets a budget be overspent, one too high leaves it idle. The
estimate of a document (`conveyor.agents.llm_budget.estimate_tokens`: its text at four characters
a token, each request's instructions, and an answer of its header and one item per item
row; without the rows counted, the schema and a flat answer budget instead) is a rule of
thumb; a given server differs from it in two ways that one factor cannot both fix: in
what a request costs whatever its text (the schema, sent as prompt text by a server that
does not enforce it and not by one that does; the answer's header), and in what each
character costs (its tokenizer). Measured with llama.cpp
and Qwen2.5 on the 32 realdocs (docs/benchmarks.md): a prompt's estimate was 4.2 times its
tokens for the shortest invoice and 0.78 of them for the longest (about 2.2 characters a
token, not 4), so a median ratio fitted the middle and missed both ends.

So each agent keeps a `Correction`: a straight line, actual = intercept + slope x
estimate, fitted to its last WINDOW successful attempts once MIN_SAMPLES are known, and
applied to every new estimate. The fit is Theil-Sen (the slope is the median of the
slopes between every two attempts, the intercept the median of what is left): one
document answered at length (a long table of line items) must not move every later
estimate, as it would a least-squares line. Outside the estimates it has seen, nothing
says the line holds (a short document's intercept says nothing of a 200-page one): an
estimate beyond the range gets the line extended or the line's value at the nearer end
scaled in proportion, whichever is more, since a reservation too high costs an idle
budget for a while and one too low an overspent one. With every
attempt at one estimate (documents known by their page count only), there is no slope to
see, and the correction is the median ratio. It is seeded from `task_attempts`
(`from_attempts`) and learns from every attempt after that.

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
from dataclasses import dataclass
from typing import Any

from conveyor.sql import Queries

WINDOW = 50
MIN_SAMPLES = 3
REFRESH_SECONDS = 300.0
Q = Queries("estimates")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fit:
    """actual = intercept + slope x estimate, learnt from estimates in [low, high];
    `ratio` (the median actual / estimate) where the line cannot serve."""

    intercept: float
    slope: float
    low: int
    high: int
    ratio: float

    def __call__(self, estimate: int) -> int:
        if self.slope <= 0 or self.low == self.high:
            return math.ceil(estimate * self.ratio)
        value = self.intercept + self.slope * estimate
        end = min(max(estimate, self.low), self.high)
        if end != estimate:
            # Beyond what was learnt, the line extended or the line's value at the nearer
            # end scaled, whichever is more: a budget reserved too high idles a while, one
            # too low is overspent.
            value = max(value, (self.intercept + self.slope * end) * estimate / end)
        if value <= 0:
            return math.ceil(estimate * self.ratio)
        return math.ceil(value)


def theil_sen(points: list[tuple[int, int]]) -> Fit:
    """The Theil-Sen line through (estimate, actual) points (at least one)."""
    ratio = statistics.median(actual / estimate for estimate, actual in points)
    slopes = [
        (a2 - a1) / (e2 - e1)
        for i, (e1, a1) in enumerate(points)
        for e2, a2 in points[i + 1 :]
        if e2 != e1
    ]
    low = min(e for e, _ in points)
    high = max(e for e, _ in points)
    if not slopes:
        return Fit(0.0, 0.0, low, high, ratio)
    slope = statistics.median(slopes)
    intercept = statistics.median(a - slope * e for e, a in points)
    return Fit(intercept, slope, low, high, ratio)


class Correction:
    """What estimates become, learnt from (estimate, actual) pairs; thread-safe
    (estimates are made on enqueue threads)."""

    def __init__(self, window: int = WINDOW) -> None:
        self._seen: deque[tuple[int, int]] = deque(maxlen=window)
        self._fit: Fit | None = None  # of _seen, made when first needed
        self._lock = threading.Lock()

    def learn(self, estimate: int, actual: int) -> None:
        if estimate > 0 and actual > 0:
            with self._lock:
                self._seen.append((estimate, actual))
                self._fit = None

    @property
    def fit(self) -> Fit | None:
        """The line learnt, None until MIN_SAMPLES attempts are known."""
        with self._lock:
            if len(self._seen) < MIN_SAMPLES:
                return None
            if self._fit is None:
                self._fit = theil_sen(list(self._seen))
            return self._fit

    @property
    def samples(self) -> int:
        with self._lock:
            return len(self._seen)

    def apply(self, estimate: int) -> int:
        fit = self.fit
        return fit(estimate) if fit is not None and estimate > 0 else estimate


async def from_attempts(
    conn: Any, agent: str, estimate: Callable[[dict[str, Any]], int]
) -> Correction:
    """A correction seeded from the agent's latest attempts; `estimate` is the agent's
    raw estimator (payload -> tokens), applied again to each task's payload."""
    correction = Correction()
    cursor = await conn.execute(Q.attempts_tokens_recent, {"agent": agent, "limit": WINDOW})
    rows = await cursor.fetchall()
    for row in reversed(rows):  # oldest first, as if learnt live
        # Every payload field the query reads (chars, pages, ...): an estimate made again
        # from fewer fields than the live one had would teach a line of other estimates.
        payload = {key: value for key, value in row.items() if key != "actual"}
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
