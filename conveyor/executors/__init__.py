"""Executors: where and how the attempts of an agent run, behind one protocol.

- `inprocess`: `async def` agents in the worker's event loop, plain `def` in its threads;
- `callback`: external jobs (`jobs`: a subprocess, a POST to a runner) that end their
  attempt with a signed callback (`signing`);
- an executor of your own: any object with `async run(attempt) -> Ended` and
  `async close()`, declared with `app.external(name, executor)`.

The contract (what `run` is given, how it reports a run id, usage and how the attempt
ended, what a cancel means) is written once, in `conveyor.executors.base`.
Executors never import the worker, the web app or the CLI (a contract in pyproject.toml).
"""

from __future__ import annotations

from conveyor.executors.base import (
    Attempt,
    Callback,
    CalledBack,
    Ended,
    Executor,
    JobFailed,
    Succeeded,
    WorkerServices,
)
from conveyor.executors.callback import CallbackExecutor
from conveyor.executors.inprocess import AsyncExecutor, ThreadExecutor, traced
from conveyor.executors.jobs import (
    Dispatched,
    Dispatcher,
    DispatchError,
    HttpJob,
    Job,
    SubprocessJob,
)

__all__ = [
    "AsyncExecutor",
    "Attempt",
    "Callback",
    "CallbackExecutor",
    "CalledBack",
    "DispatchError",
    "Dispatched",
    "Dispatcher",
    "Ended",
    "Executor",
    "HttpJob",
    "Job",
    "JobFailed",
    "SubprocessJob",
    "Succeeded",
    "ThreadExecutor",
    "WorkerServices",
    "as_executor",
    "traced",
]


def as_executor(declared: Executor | Dispatcher) -> Executor:
    """The executor of what `app.external(name, ...)` was given: an executor as it is, a
    dispatcher (it has `dispatch(job)`) behind a CallbackExecutor."""
    if hasattr(declared, "dispatch"):
        return CallbackExecutor(declared)  # type: ignore[arg-type]
    if isinstance(declared, Executor):
        return declared
    raise TypeError(
        f"{type(declared).__name__} is neither an executor (async run(attempt), async close())"
        " nor a dispatcher (async dispatch(job))"
    )
