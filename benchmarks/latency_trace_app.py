"""The latency run's worker App with timestamps at each step of a task's way in.

    CONVEYOR_DATABASE_URL=... BENCH_RECORD=... python -m conveyor.cli worker \
        --app latency_trace_app:app --concurrency 16

The same no-op agent as apps.py, and the worker as deployed, with five of its functions
wrapped to note the wall-clock time (time.time(), the clock every process on this machine
shares) of: a NOTIFY of enqueued tasks handed to the worker (conveyor.listener), an idle
lane of the exchange woken (Exchange._idle returns), a claim sent and its answer back
(queue.finish_and_claim, as the lanes call it, and queue.claim_alone, as the idle claim on
the LISTEN connection calls it), and the agent's first line. Written
to $BENCH_RECORD.trace.json at exit; latency_trace.py reads it.
The wrapping costs a few microseconds a step; it is for the breakdown, not for the figures
bench_queue.py reports.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path
from typing import Any

from timing import ENV_RECORD, dump_at_exit, record

from conveyor import App, Task, listener, queue
from conveyor.worker import exchange

app = App()

heard: list[tuple[float, list[int]]] = []  # (time, task ids) of NOTIFYs of enqueued tasks
woken: list[float] = []  # when an idle lane of the exchange woke
claims: list[tuple[float, float, list[int]]] = []  # (sent, answered, task ids claimed)
started: dict[int, float] = {}  # task id -> the agent's first line


@app.agent("noop")
async def noop(task: Task) -> None:
    started[task.id] = time.time()
    record(task.payload)


_dispatch = listener.Listener._dispatch


def _traced_dispatch(self: listener.Listener, payload: str) -> None:
    if '"enqueued"' in payload:
        ids = json.loads(payload).get("ids") or []
        heard.append((time.time(), ids))
    _dispatch(self, payload)


_finish_and_claim = exchange.queue.finish_and_claim


async def _traced_finish_and_claim(*args: Any, **kwargs: Any) -> Any:
    sent = time.time()
    finished, claimed = await _finish_and_claim(*args, **kwargs)
    if claimed:
        claims.append((sent, time.time(), [c.id for c in claimed]))
    return finished, claimed


_idle = exchange.Exchange._idle


async def _traced_idle(self: exchange.Exchange, stopping: bool, free: int) -> None:
    await _idle(self, stopping, free)
    woken.append(time.time())


exchange.Exchange._idle = _traced_idle  # type: ignore[method-assign]
_claim_alone = queue.claim_alone


async def _traced_claim_alone(*args: Any, **kwargs: Any) -> Any:
    sent = time.time()
    claimed = await _claim_alone(*args, **kwargs)
    if claimed:
        claims.append((sent, time.time(), [c.id for c in claimed]))
    return claimed


listener.Listener._dispatch = _traced_dispatch
queue.claim_alone = _traced_claim_alone  # type: ignore[assignment]  (the LISTEN connection's)  # type: ignore[method-assign]
exchange.queue.finish_and_claim = _traced_finish_and_claim  # type: ignore[attr-defined]


def _dump() -> None:
    path = os.environ.get(ENV_RECORD)
    if path:
        trace = {"heard": heard, "woken": woken, "claims": claims, "started": started}
        Path(path + ".trace.json").write_text(json.dumps(trace))


atexit.register(_dump)
dump_at_exit()
