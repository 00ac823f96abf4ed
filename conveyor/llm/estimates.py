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
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from conveyor.sql import Queries

WINDOW = 50
MIN_SAMPLES = 3
Q = Queries("estimates")


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
