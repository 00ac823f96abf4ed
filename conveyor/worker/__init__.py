"""The worker: claims tasks, runs their agents, reports how each attempt ended.

    daemon.py     Worker: wires the parts below and runs them until stop()
    exchange.py   the exchange: outcomes out, new tasks in, one round trip; error isolation
    outbox.py     outcomes on their way to the exchange, and the events that wake it
    prefetch.py   how many claimed tasks wait for a slot (follows the tasks' length)
    slots.py      what the worker holds and runs: the buffer, the slots, `held`
    attempts.py   one attempt through its agent's executor (conveyor.executors) to its outcome
    outcomes.py   how an attempt ended, as the outcome written: kind, error, retry delay
    leases.py     the lease keeper: renewal, and stopping what was taken away

Delivery is at least once: a task whose worker dies runs again after its lease expires.
A task is completed at most once: every write of an outcome is fenced by its attempt.
"""

from __future__ import annotations

from conveyor.executors import JobFailed
from conveyor.worker.daemon import LOOP_RESTART_DELAY, Worker, make_worker_id
from conveyor.worker.exchange import claim_sizes
from conveyor.worker.outcomes import MAX_ERROR_CHARS, RELEASED, STOPPED
from conveyor.worker.prefetch import PREFETCH_HORIZON, PREFETCH_MAX

__all__ = [
    "LOOP_RESTART_DELAY",
    "MAX_ERROR_CHARS",
    "PREFETCH_HORIZON",
    "PREFETCH_MAX",
    "RELEASED",
    "STOPPED",
    "JobFailed",
    "Worker",
    "claim_sizes",
    "make_worker_id",
]
