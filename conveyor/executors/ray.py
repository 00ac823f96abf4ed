"""Attempts as Ray tasks: `app.external("ocr", RayTask(read_scan, num_cpus=2))`.

`pip install 'conveyor[ray]'`. Each attempt is one Ray task, `fn(task)` run on the cluster
that CONVEYOR_RAY_ADDRESS names (`ray://head:10001`, `auto`, a GCS `host:port`), or on a
local one the worker starts in its own process when it is unset. What stays as for any
attempt: the worker claimed the task, renews its lease while the Ray task runs and writes
the outcome, fenced by the attempt; Conveyor's attempts are the only retry policy (every
Ray task has `max_retries=0`).

- dispatch: `fn` is shipped to the cluster once (a remote function per RayTask); each
  attempt sends its `Task`'s fields as plain values (payload, ids), rebuilt into a Task
  there, and the resources declared here;
- usage: `task.report_usage(...)` inside the Ray task is carried back with its result (or
  its exception) and lands on the attempt, priced like any other;
- cancel: a cancelled task, a lost lease or a worker shutting down cancels the Ray task
  with `ray.cancel(ref, force=True)`, which kills the process running it;
- a worker that dies (even by SIGKILL) owned its Ray tasks, and Ray ends what its owner
  left behind; the sweeper then re-runs the task like any attempt whose lease expired;
- run id: `ray:<task id>@<node id>`, written with the attempt's outcome (`ray:<task id>`
  if it died; none if the worker was stopped or killed before it ended); in Ray's state
  API and dashboard its tasks are named `conveyor:<function>`;
- compute cost: with `usd_per_hour={"CPU": ..., "GPU": ..., "memory_gib": ...}` an attempt
  is priced at the resources it asked for times those rates, per hour of its wall time;
  without it, at the agent's rate like any attempt.

How an attempt ended: the function's return value (JSON) is the result; `Throttled` and
`PermanentFailure` raised inside Ray keep their meaning; any other exception fails the
attempt with its type, message and the remote traceback; a Ray task killed underneath
(out of memory, its worker process or node gone) fails the attempt with what Ray said, and
it is retried with backoff like any failure.

What the function can reach: its payload, and what the cluster can reach. A document is
read from CONVEYOR_DOCUMENTS_URL's store (s3://, gs://, abfs://, or a file:/// folder on
storage every node mounts); the default store, PostgreSQL, needs the database's URL there.
The Ray job mode (one Ray job per attempt through the Jobs REST API, ended by the signed
callback) is conveyor.executors.ray_jobs.RayJob.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from conveyor.errors import PermanentFailure, Throttled
from conveyor.executors.base import Attempt, JobFailed, Succeeded
from conveyor.settings import Settings
from conveyor.task import Task, Usage

#: Rates a RayTask may declare, per unit of a resource and hour: a CPU, a GPU, a GiB of
#: memory; other keys name custom Ray resources.
MEMORY_RATE = "memory_gib"
GIB = 1024**3

_init_lock = threading.Lock()


@dataclass
class _Ended:
    """What the Ray task sent back, whatever way it ended (read here)."""

    usage: Usage
    node: str
    value: Any = None
    error: str | None = None  # "throttled", "permanent" or "raised"
    message: str = ""
    error_type: str = ""
    retry_after: float | None = None
    remote_traceback: str = ""


#: How _Ended travels back from the Ray task: plain values (usage as model, input and
#: output tokens, calls, tokens by model; then node, value, error, message, error type,
#: retry after, remote traceback), which Ray serializes with msgpack. The dataclass itself
#: went through cloudpickle both ways: 40 us of CPU per attempt to dump and load, against
#: 4 us for these values (`bench_ray.py --phases serialize`, docs/benchmarks.md).
Returned = tuple[Any, ...]


def _returned(
    usage: Usage, node: str, value: Any = None, error: str | None = None, message: str = "",
    error_type: str = "", retry_after: float | None = None, remote_traceback: str = "",
) -> Returned:  # fmt: skip
    spent = (usage.model, usage.input_tokens, usage.output_tokens, usage.calls, usage.by_model)
    return (*spent, node, value, error, message, error_type, retry_after, remote_traceback)


def _ended(returned: Returned) -> _Ended:
    model, input_tokens, output_tokens, calls, by_model, node, value, *rest = returned
    error, message, error_type, retry_after, remote_traceback = rest
    usage = Usage(
        model, input_tokens, output_tokens, calls, {k: list(v) for k, v in by_model.items()}
    )
    return _Ended(usage, node, value, error, message, error_type, retry_after, remote_traceback)


#: What an attempt sends to its Ray task: the Task's fields as plain values, which Ray
#: serializes with msgpack; a Task object went through cloudpickle, a third of the time
#: that submitting a Ray task took in the worker's loop (a py-spy profile, see
#: docs/benchmarks.md).
Sent = tuple[Any, ...]


def _sent(task: Task) -> Sent:
    return (
        task.id, task.agent, task.payload, task.attempt, task.max_attempts, task.priority,
        task.created_at.isoformat(), task.tenant, task.labels, task.estimated_tokens,
    )  # fmt: skip


def _received(sent: Sent) -> Task:
    task_id, agent, payload, attempt, max_attempts, priority, created_at, *rest = sent
    tenant, labels, estimated_tokens = rest
    return Task(
        id=task_id, agent=agent, payload=payload, attempt=attempt, max_attempts=max_attempts,
        priority=priority, created_at=datetime.fromisoformat(created_at), tenant=tenant,
        labels=labels, estimated_tokens=estimated_tokens,
    )  # fmt: skip


def _attempt_in_ray(fn: Callable[[Task], Any], sent: Sent) -> Returned:
    """Runs in a Ray worker process: the agent function, its usage, how it ended."""
    task = _received(sent)
    node = _node_id()
    try:
        value = fn(task)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        return _returned(task.usage, node, value)
    except Throttled as exc:
        return _returned(
            task.usage, node, error="throttled", message=str(exc), retry_after=exc.retry_after
        )
    except Exception as exc:
        return _returned(
            task.usage,
            node,
            error="permanent" if isinstance(exc, PermanentFailure) else "raised",
            message=str(exc),
            error_type=type(exc).__name__,
            remote_traceback="".join(traceback.format_exception(exc)),
        )


_node: str | None = None


def _node_id() -> str:
    """The node this Ray worker process runs on (asked once: a process stays on its node)."""
    global _node
    if _node is None:
        import ray

        _node = str(ray.get_runtime_context().get_node_id())
    return _node


async def _awaited(value: Any) -> Any:
    return await value


@dataclass
class RayTask:
    """An executor that runs each attempt of its agent as a Ray task (see the module)."""

    fn: Callable[[Task], Any]
    num_cpus: float = 1
    num_gpus: float = 0
    memory: int | None = None  # bytes
    resources: Mapping[str, float] = field(default_factory=dict)  # custom Ray resources
    #: USD per hour per unit: {"CPU": 0.04, "GPU": 2.5, "memory_gib": 0.005, custom: ...}
    usd_per_hour: Mapping[str, float] | None = None
    address: str | None = None  # None: CONVEYOR_RAY_ADDRESS, else a local cluster
    runtime_env: Mapping[str, Any] | None = None
    _remote: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"RayTask needs a function, not {self.fn!r}")
        for name, value in (("num_cpus", self.num_cpus), ("num_gpus", self.num_gpus)):
            if value < 0:
                raise ValueError(f"{name} must be >= 0")
        unknown = set(self.usd_per_hour or {}) - {"CPU", "GPU", MEMORY_RATE, *self.resources}
        if unknown:
            raise ValueError(
                f"usd_per_hour prices resources this task does not ask for: {sorted(unknown)}"
            )

    @property
    def compute_usd_per_hour(self) -> float | None:
        """The hourly price of the resources one attempt holds, or None without rates."""
        if self.usd_per_hour is None:
            return None
        held = {"CPU": self.num_cpus, "GPU": self.num_gpus, **self.resources}
        held[MEMORY_RATE] = (self.memory or 0) / GIB
        return sum(rate * held.get(name, 0.0) for name, rate in self.usd_per_hour.items())

    async def run(self, attempt: Attempt) -> Succeeded:
        import ray

        remote = await self._connected()
        task = attempt.task
        ref = self._submit(remote, task)
        task_id = ref.task_id().hex()
        try:
            ended: _Ended = await self._result(ref)
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)  # kills the process running it
            raise
        except ray.exceptions.RayError as exc:
            attempt.run_id = f"ray:{task_id}"  # written with the outcome
            raise JobFailed(
                f"Ray task {task_id} died: {type(exc).__name__}: {_first(exc)}"
            ) from None
        finally:
            if self.usd_per_hour is not None:
                attempt.compute_usd_per_hour = self.compute_usd_per_hour
        _add_usage(task.usage, ended.usage)
        # Known once the node is: written with the outcome, in the same round trip (its
        # own write took 12 ms of a 59 ms no-op attempt at concurrency 16, see
        # docs/benchmarks.md).
        attempt.run_id = f"ray:{task_id}@{ended.node}"
        if ended.error == "throttled":
            raise Throttled(ended.retry_after, ended.message)
        if ended.error == "permanent":
            raise PermanentFailure(ended.message)
        if ended.error is not None:
            raise JobFailed(
                f"Ray task {task_id} raised {ended.error_type}: {ended.message}\n"
                f"{ended.remote_traceback}".strip()
            )
        return Succeeded(ended.value)

    def _submit(self, remote: Any, task: Task) -> Any:
        """Hand the attempt to Ray: its ObjectRef (a step of its own, so that a benchmark
        can time it)."""
        return remote.remote(_sent(task))

    async def _result(self, ref: Any) -> _Ended:
        """What the Ray task sent back, awaited without blocking the loop."""
        return _ended(await ref)

    async def close(self) -> None:
        pass  # the cluster connection is the process's; Ray closes it at exit

    async def _connected(self) -> Any:
        """The remote function, once the process is connected to the cluster (ray.init
        blocks for seconds: off the loop, once per process)."""
        if self._remote is None:
            await asyncio.to_thread(self._connect)
        return self._remote

    def _connect(self) -> None:
        import ray

        with _init_lock:
            if not ray.is_initialized():
                ray.init(**self._init_options())
            if self._remote is None:
                fn = self.fn

                def conveyor_attempt(sent: Sent) -> Returned:
                    return _attempt_in_ray(fn, sent)

                # One name and one resource shape for every attempt: Ray reuses a worker
                # process only between tasks of one shape, and a name per attempt made
                # each its own (33 tasks/s instead of 100-230 in a test on this machine).
                shape: dict[str, Any] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
                if self.memory is not None:
                    shape["memory"] = self.memory
                if self.resources:
                    shape["resources"] = dict(self.resources)
                self._remote = ray.remote(
                    max_retries=0,  # Conveyor's attempts are the retries
                    **shape,
                )(conveyor_attempt).options(name=f"conveyor:{_name(fn)}")

    def _init_options(self) -> dict[str, Any]:
        address = self.address or Settings.from_env().ray_address
        options: dict[str, Any] = {"address": address, "log_to_driver": False}
        if address is None:
            options["include_dashboard"] = False  # a local cluster: no web UI on a port
        if self.runtime_env is not None:
            options["runtime_env"] = dict(self.runtime_env)
        return options


def _add_usage(into: Usage, spent: Usage) -> None:
    for model, (input_tokens, output_tokens) in spent.by_model.items():
        total = into.by_model.setdefault(model, [0, 0])
        total[0] += input_tokens
        total[1] += output_tokens
    into.input_tokens += spent.input_tokens
    into.output_tokens += spent.output_tokens
    into.calls += spent.calls
    into.model = spent.model or into.model


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _first(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
