"""The adaptive prefetch: how many claimed tasks a worker keeps waiting for a slot.

Claimed tasks waiting for a free slot hide the exchange's round trip: when an agent
finishes, the next task starts at once instead of after a claim. Agents that run for a few
ms or less buffer more tasks than their concurrency: for them the buffer, not the
database, bounds the rate. The buffer never holds more than PREFETCH_HORIZON seconds of
work (by the average run time), which bounds how long a task claimed later (an urgent one)
waits behind it, nor more than PREFETCH_MAX tasks.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

PREFETCH_HORIZON = 0.1
PREFETCH_MAX = 512


@dataclass
class Timings:
    """Moving averages of what the prefetch follows: each agent's run time, an exchange's."""

    task_seconds: dict[str, float] = field(default_factory=dict)  # by agent
    exchange_seconds: float | None = None

    def ran(self, agent: str, seconds: float) -> None:
        self.task_seconds[agent] = average(self.task_seconds.get(agent), seconds)

    def exchanged(self, seconds: float) -> None:
        self.exchange_seconds = average(self.exchange_seconds, seconds)


def prefetch(timings: Timings, *, concurrency: int, agents: Collection[str]) -> int:
    """As many tasks as the slots finish during two exchanges, at least `concurrency`.
    Agents that run for more than a few ms keep prefetch = concurrency; only very short
    ones, whose drain rate the buffer bounds, get more."""
    exchange = timings.exchange_seconds
    if exchange is None or not set(agents) <= timings.task_seconds.keys():
        return concurrency  # an agent whose length is not known yet may be slow
    # The slowest agent decides: tasks of a slow one must not wait behind a buffer sized
    # for a quick one.
    task = max(max(timings.task_seconds.values()), 1e-6)
    # Tasks the slots finish while two exchanges (the two lanes) are in flight: the larger
    # the batches, the less each task pays of an exchange's fixed cost (its round trip, its
    # commit, the statement-level triggers).
    wanted = math.ceil(concurrency * 2 * exchange / task)
    cap = min(PREFETCH_MAX, math.floor(concurrency * PREFETCH_HORIZON / task))
    return max(concurrency, min(wanted, cap))


def average(average: float | None, value: float, weight: float = 0.05) -> float:
    """An exponential moving average (the first value starts it)."""
    return value if average is None else average + weight * (value - average)
