"""What the benchmark's agents record, and the statistics computed from it.

Every library's no-op agent calls `record(payload)` when it starts. The recorder keeps the
wall-clock start time (time.time(), which is the same clock in every process on this
machine) and, for latency runs, the time the harness stamped into the payload just before
it called enqueue. A worker process writes what it recorded to the file named by
BENCH_RECORD when it exits, so the harness reads one file per process.

Measuring in the agent, not in each library's tables, gives the three libraries the very
same yardstick: none of them is timed by columns the others do not have.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_RECORD = "BENCH_RECORD"

_starts: list[float] = []
_sent: list[float | None] = []


def record(payload: Any) -> None:
    """Called first thing by every benchmark agent."""
    _starts.append(time.time())
    _sent.append(payload.get("t") if isinstance(payload, dict) else None)


def dump() -> None:
    """Write what this process recorded to $BENCH_RECORD (if set)."""
    path = os.environ.get(ENV_RECORD)
    if path:
        Path(path).write_text(json.dumps({"starts": _starts, "sent": _sent}))


def dump_at_exit() -> None:
    """For worker processes whose main loop we do not own (conveyor's CLI)."""
    atexit.register(dump)


@dataclass(frozen=True)
class ProcessRecord:
    starts: list[float]
    sent: list[float | None]

    @classmethod
    def load(cls, path: Path) -> ProcessRecord:
        data = json.loads(path.read_text())
        return cls(starts=data["starts"], sent=data["sent"])


def drain_rate(records: list[ProcessRecord]) -> float:
    """Tasks started per second while every process was working.

    The window opens when the last process started its first task (so process start-up
    and a late sibling do not count) and closes at the last task start. At a steady state
    starts and completions go at the same rate; using starts keeps the libraries that
    write completions in delayed batches on the same footing as the others.
    """
    working = [r.starts for r in records if r.starts]
    opened = max(min(s) for s in working)
    everything = sorted(t for s in working for t in s if t >= opened)
    if len(everything) < 2:
        raise RuntimeError("too few tasks started inside the measuring window")
    return (len(everything) - 1) / (everything[-1] - everything[0])


def latencies_ms(records: list[ProcessRecord]) -> list[float]:
    """Enqueue-to-start of every task that carried a send time, in milliseconds."""
    return [
        (start - sent) * 1000
        for r in records
        for start, sent in zip(r.starts, r.sent, strict=True)
        if sent is not None
    ]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), interpolated between the two nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
