"""The Conveyor Apps that benchmark worker processes run.

    CONVEYOR_DATABASE_URL=... python -m conveyor.cli worker --app apps:app --concurrency 16

(with this folder on PYTHONPATH). Its agent records when it starts (see timing.py); the
harness enqueues through an App of its own (subjects.py) declaring the same agent name.

`apps:mixed` is the mixed run's (sustained.py --mixed): its one agent fails the first
attempt of a quarter of the tasks, chosen by the payload's "i", and succeeds on the retry.
It is a separate App so that the other benchmarks' workers claim for the no-op agent alone.
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path

from timing import ENV_RECORD, dump_at_exit, record

from conveyor import App, Task

app = App()


@app.agent("noop")
async def noop(task: Task) -> None:
    record(task.payload)


# The mixed run's agent. Its options are here once; the harness declares the same.
FLAKY = "flaky"
FLAKY_OPTIONS = dict(max_attempts=2, backoff_base=0.05, backoff_max=0.05)
FAIL_EVERY = 4  # every 4th task (i % 4 == 0) fails its first attempt


def fails_first(i: int) -> bool:
    return i % FAIL_EVERY == 0


def expected_attempts(i: int) -> int:
    return 2 if fails_first(i) else 1


class FirstAttemptFails(Exception):
    """Raised on purpose: an ordinary failure, retried with the agent's backoff."""


mixed = App()
# Every run of the agent, as (i, attempt): the harness checks that no task ran more, or
# fewer, times than it should, which the tables alone would not show for a run the
# database never heard of.
_runs: list[tuple[int, int]] = []


@mixed.agent(FLAKY, **FLAKY_OPTIONS)  # type: ignore[arg-type]
async def flaky(task: Task) -> None:
    i = task.payload["i"]
    _runs.append((i, task.attempt))
    if task.attempt == 1 and fails_first(i):
        raise FirstAttemptFails(f"task {i} fails its first attempt")
    # Only the attempt that finishes the task is timed, so the slices count finished tasks.
    record(task.payload)


def runs_path(record_path: str) -> Path:
    return Path(record_path + ".runs.json")


def _dump_runs() -> None:
    path = os.environ.get(ENV_RECORD)
    if path and _runs:
        runs_path(path).write_text(json.dumps(_runs))


atexit.register(_dump_runs)

# The CLI owns the worker's main loop; it returns normally after SIGTERM has drained the
# worker, so an exit hook is the place to hand the start times to the harness.
dump_at_exit()
