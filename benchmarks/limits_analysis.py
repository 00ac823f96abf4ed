"""The numbers bench_limits.py reports, computed from what one scenario left behind: the
simulator's stats and log, the database's tasks and attempts, and samples of the agent's
throttling state. Pure functions of those records, so they can be recomputed from the
JSON the harness saves.

Times: the simulator's `at` are monotonic seconds (CLOCK_MONOTONIC, the same clock in every
process of the machine), its slices start when it was reset just before the enqueue; the
database's are epoch seconds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), interpolated between the two nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Slice:
    """One fixed window-length slice of the run, as the simulator admitted it."""

    index: int
    start: float  # seconds since the simulator's reset
    tokens: int
    requests: int
    refused: int
    tpm: int | None  # the simulator's limit in force for most of the slice
    backlogged: bool  # at least a whole TPM of work still waited when it ended

    @property
    def ratio(self) -> float | None:
        return None if not self.tpm else self.tokens / self.tpm


@dataclass
class QueueTimes:
    count: int
    p50: float
    p99: float
    max: float


@dataclass
class Result:
    scenario: str
    completed: int
    failed: int
    tasks: int
    requests: int  # as the simulator saw them: admitted + refused
    refused: int  # 429s, as the simulator counted them
    refused_by_tokens: int
    refused_by_requests: int
    throttled_attempts: int  # 429s, as Conveyor recorded them ('throttled' attempts)
    requests_after_first_window: int
    refused_after_first_window: int
    slices: list[Slice]
    peak_ratio: float | None  # the fullest slice ÷ its TPM
    backlogged_mean_ratio: float | None  # mean over the backlogged slices after the first
    backlogged_slices: int
    queue_times: dict[int, QueueTimes]  # by priority: created -> succeeded attempt started
    wall_time: float  # first task created -> last task finished
    sim_peak_in_flight: int
    db_peak_running: int  # attempts open at once, from the attempts' own times
    within_limits: bool  # the simulator's own check: no window ever held more than allowed
    tokens_admitted: int
    tokens_expected: int
    min_throttle_factor: float | None
    min_learned_concurrency: int | None
    final_learned_concurrency: int | None
    limit_changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def refused_share_after_first_window(self) -> float:
        if not self.requests_after_first_window:
            return 0.0
        return self.refused_after_first_window / self.requests_after_first_window

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["refused_share_after_first_window"] = self.refused_share_after_first_window
        values["slices"] = [{**asdict(s), "ratio": s.ratio} for s in self.slices]
        return values


def analyse(
    scenario: str,
    *,
    window: float,
    tasks: list[dict[str, Any]],
    stats: dict[str, Any],
    log: list[dict[str, Any]],
    db_tasks: list[dict[str, Any]],
    db_attempts: list[dict[str, Any]],
    samples: list[dict[str, Any]],
) -> Result:
    periods = stats["periods"]
    origin = periods[0]["started_at"]  # the reset just before the enqueue
    changes = [
        {"at": p["started_at"] - origin, "tpm": p["limits"]["tpm"], "rpm": p["limits"]["rpm"]}
        for p in periods
    ]
    slices = _slices(window, tasks, log, origin, changes)
    after = [e for e in log if e["outcome"] != "invalid" and e["at"] - origin >= window]
    measured = [s for s in slices if s.index >= 1 and s.backlogged and s.ratio is not None]
    ratios = [s.ratio for s in slices if s.ratio is not None]
    factors = [s["throttle_factor"] for s in samples if s.get("throttle_factor") is not None]
    learned = [
        s["learned_concurrency"] for s in samples if s.get("learned_concurrency") is not None
    ]
    created = [t["created_at"] for t in db_tasks]
    finished = [t["finished_at"] for t in db_tasks if t["finished_at"] is not None]
    return Result(
        scenario=scenario,
        completed=sum(t["status"] == "completed" for t in db_tasks),
        failed=sum(t["status"] == "failed" for t in db_tasks),
        tasks=len(db_tasks),
        requests=stats["admitted"] + stats["refused"],
        refused=stats["refused"],
        refused_by_tokens=stats["refused_by_tokens"],
        refused_by_requests=stats["refused_by_requests"],
        throttled_attempts=sum(a["status"] == "throttled" for a in db_attempts),
        requests_after_first_window=len(after),
        refused_after_first_window=sum(e["outcome"] == "refused" for e in after),
        slices=slices,
        peak_ratio=max((r for r in ratios if r is not None), default=None),
        backlogged_mean_ratio=(
            sum(s.ratio for s in measured if s.ratio is not None) / len(measured)
            if measured
            else None
        ),
        backlogged_slices=len(measured),
        queue_times=_queue_times(db_tasks, db_attempts),
        wall_time=(max(finished) - min(created)) if finished and created else math.nan,
        sim_peak_in_flight=stats["peak_in_flight"],
        db_peak_running=peak_open(
            (a["started_at"], a["finished_at"]) for a in db_attempts if a["finished_at"] is not None
        ),
        within_limits=stats["within_limits"],
        tokens_admitted=stats["total_tokens"],
        tokens_expected=sum(t["tokens"] for t in tasks),
        min_throttle_factor=min(factors) if factors else None,
        min_learned_concurrency=min(learned) if learned else None,
        final_learned_concurrency=learned[-1] if learned else None,
        limit_changes=changes,
    )


def _slices(
    window: float,
    tasks: list[dict[str, Any]],
    log: list[dict[str, Any]],
    origin: float,
    changes: list[dict[str, Any]],
) -> list[Slice]:
    admitted = [e for e in log if e["outcome"] == "admitted"]
    refused = [e for e in log if e["outcome"] == "refused"]
    if not admitted:
        return []
    last = max(e["at"] - origin for e in admitted)
    count = int(last // window) + 1
    tokens = [0] * count
    requests = [0] * count
    refusals = [0] * count
    for e in admitted:
        k = int((e["at"] - origin) // window)
        tokens[k] += e["total_tokens"]
        requests[k] += 1
    for e in refused:
        k = int((e["at"] - origin) // window)
        if k < count:
            refusals[k] += 1
    remaining = sum(t["tokens"] for t in tasks)
    slices = []
    for k in range(count):
        remaining -= tokens[k]
        tpm = _limit_at(changes, (k + 0.5) * window)
        slices.append(
            Slice(
                index=k,
                start=k * window,
                tokens=tokens[k],
                requests=requests[k],
                refused=refusals[k],
                tpm=tpm,
                backlogged=tpm is not None and remaining >= tpm,
            )
        )
    return slices


def _limit_at(changes: list[dict[str, Any]], at: float) -> int | None:
    tpm: int | None = changes[0]["tpm"]
    for change in changes:
        if change["at"] <= at:
            tpm = change["tpm"]
    return tpm


def _queue_times(
    db_tasks: list[dict[str, Any]], db_attempts: list[dict[str, Any]]
) -> dict[int, QueueTimes]:
    """Created -> start of the attempt that succeeded, per priority."""
    started = {a["task_id"]: a["started_at"] for a in db_attempts if a["status"] == "succeeded"}
    by_priority: dict[int, list[float]] = {}
    for t in db_tasks:
        if t["id"] in started:
            by_priority.setdefault(t["priority"], []).append(started[t["id"]] - t["created_at"])
    return {
        p: QueueTimes(count=len(v), p50=percentile(v, 50), p99=percentile(v, 99), max=max(v))
        for p, v in sorted(by_priority.items(), reverse=True)
    }


def peak_open(intervals: Any) -> int:
    """The most intervals open at one instant (an end before a start at the same instant)."""
    events = sorted(e for start, end in intervals for e in ((start, 1), (end, -1)))
    peak = current = 0
    for _, change in events:
        current += change
        peak = max(peak, current)
    return peak
