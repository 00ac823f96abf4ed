"""When a failed attempt is tried again, and after how long: the retry policy, in one place.

An attempt that fails spends one of the task's `max_attempts`, unless it does not count:
throttled attempts, attempts handed back by a worker shutting down, and every attempt before
a manual retry are `tasks.free_attempts`. So the attempts that count are
`attempts - free_attempts`, and a task has a retry left while that is below `max_attempts`.

The database applies the rule, once: `conveyor_retry_left()` in
conveyor/sql/functions/attempts.sql, called by `conveyor_end_attempts()`, the one write
that ends attempts (a worker's outcomes, a callback, the sweeper, a cancel). What the
processes decide is the delay before the retry, with `backoff()` here. This module imports
nothing of the worker, so that the web app (callbacks) uses the same policy without
importing the worker.
"""

from __future__ import annotations

import random


def charged_attempts(attempts: int, free_attempts: int) -> int:
    """The attempts that spent a retry, of `attempts` so far."""
    return attempts - free_attempts


def backoff(failures: int, base: float, cap: float) -> float:
    """Seconds before retry number `failures`: exponential, with jitter so that tasks that
    failed together (an endpoint outage) do not all come back at the same instant."""
    ceiling = min(cap, base * 2.0 ** max(0, failures - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)
