"""The simulator's state: the rolling window, and a record of every request and decision.

One lock guards it all, because a simulator served from a background thread is read (and
its limits changed) from the test's thread. The clock is read under the lock too, so the
window sees time move forward only.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, computed_field

from conveyor.testing.window import Decision, LimitName, Limits, RollingWindow

Outcome = Literal["admitted", "refused", "invalid"]


class LogEntry(BaseModel):
    seq: int  # 1, 2, ... in the order of the decisions
    request_id: str
    outcome: Outcome
    status: int  # the HTTP status answered: 200, 429 or 400
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0  # what the request cost against tpm
    at: float  # monotonic seconds at the decision, the instant the window counts from
    wall_time: float  # time.time() at the same instant
    finished_at: float | None = None  # monotonic seconds when an admitted answer was ready
    limit: LimitName | None = None  # the limit that refused it
    retry_after: float | None = None  # seconds, as computed (the headers round it up)
    oversized: bool = False
    error: str | None = None  # why an invalid request was refused


class Period(BaseModel):
    """A stretch of time under one set of limits, with the fullest its window ever got.

    The window is fullest right after an admission, so the peaks are taken there: they are
    the most requests and tokens any window held, and never exceed the limits (except for
    an oversized request, admitted alone: see `conveyor.testing.window`).
    """

    limits: Limits
    started_at: float  # monotonic seconds
    admitted: int = 0
    peak_requests: int = 0
    peak_tokens: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def within_limits(self) -> bool:
        rpm, tpm = self.limits.rpm, self.limits.tpm
        return (rpm is None or self.peak_requests <= rpm) and (
            tpm is None or self.peak_tokens <= tpm
        )


class WindowTotal(BaseModel):
    """What was admitted in one fixed slice [start, start + window_seconds) of the run."""

    start: float  # seconds since the run started (or was reset)
    requests: int
    tokens: int


class Stats(BaseModel):
    limits: Limits
    admitted: int
    refused: int
    refused_by_requests: int
    refused_by_tokens: int
    invalid: int
    oversized_admitted: int
    prompt_tokens: int  # admitted requests only, as are the next two
    completion_tokens: int
    total_tokens: int
    in_flight: int  # admitted requests still waiting out their latency
    peak_in_flight: int
    window_requests: int  # what the rolling window holds now
    window_tokens: int
    periods: list[Period]  # one per set of limits, the current one last
    windows: list[WindowTotal]  # admissions per fixed window-length slice, from the start

    @computed_field  # type: ignore[prop-decorator]
    @property
    def within_limits(self) -> bool:
        return all(period.within_limits for period in self.periods)


class Recorder:
    """The window and the log, safe to use from several threads."""

    def __init__(
        self,
        limits: Limits,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._window = RollingWindow(limits)
        self._start(limits)

    def _start(self, limits: Limits) -> None:
        self._started_at = self._clock()
        self._entries: list[LogEntry] = []
        self._in_flight: set[str] = set()  # request ids: unique across resets, unlike seq
        self._peak_in_flight = 0
        self._periods = [Period(limits=limits, started_at=self._started_at)]

    @property
    def limits(self) -> Limits:
        return self._window.limits

    def change_limits(self, changes: Mapping[str, object]) -> Limits:
        """Change some of the limits from now on. What the window holds keeps counting."""
        with self._lock:
            limits = Limits.model_validate({**self._window.limits.model_dump(), **changes})
            self._window.limits = limits
            self._periods.append(Period(limits=limits, started_at=self._clock()))
            return limits

    def reset(self) -> None:
        """Forget everything but the limits: an empty window, log and stats."""
        with self._lock:
            self._window.clear()
            self._start(self._window.limits)

    def admit(
        self, *, request_id: str, model: str, prompt_tokens: int, completion_tokens: int
    ) -> tuple[Decision, LogEntry]:
        """Decide on a request, and log the decision. Call `finish` once an admitted one is."""
        total = prompt_tokens + completion_tokens
        with self._lock:
            now = self._clock()
            decision = self._window.try_admit(total, now)
            entry = self._append(
                LogEntry(
                    seq=len(self._entries) + 1,
                    wall_time=self._wall_clock(),
                    request_id=request_id,
                    outcome="admitted" if decision.admitted else "refused",
                    status=200 if decision.admitted else 429,
                    model=model,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    total_tokens=total,
                    at=now,
                    limit=decision.limit,
                    retry_after=None if decision.admitted else decision.retry_after,
                    oversized=decision.oversized,
                )
            )
            if decision.admitted:
                self._count_admission(decision, entry)
        return decision, entry

    def finish(self, entry: LogEntry) -> None:
        with self._lock:
            entry.finished_at = self._clock()
            self._in_flight.discard(entry.request_id)

    def invalid(self, *, request_id: str, error: str) -> LogEntry:
        with self._lock:
            return self._append(
                LogEntry(
                    seq=len(self._entries) + 1,
                    wall_time=self._wall_clock(),
                    request_id=request_id,
                    outcome="invalid",
                    status=400,
                    at=self._clock(),
                    error=error,
                )
            )

    def log(self) -> list[LogEntry]:
        """A copy of the log, oldest first."""
        with self._lock:
            return [entry.model_copy() for entry in self._entries]

    def stats(self) -> Stats:
        with self._lock:
            now = self._clock()
            usage = self._window.usage(now)
            admitted = [e for e in self._entries if e.outcome == "admitted"]
            refused = [e for e in self._entries if e.outcome == "refused"]
            return Stats(
                limits=self._window.limits,
                admitted=len(admitted),
                refused=len(refused),
                refused_by_requests=sum(e.limit == "requests" for e in refused),
                refused_by_tokens=sum(e.limit == "tokens" for e in refused),
                invalid=sum(e.outcome == "invalid" for e in self._entries),
                oversized_admitted=sum(e.oversized for e in admitted),
                prompt_tokens=sum(e.prompt_tokens for e in admitted),
                completion_tokens=sum(e.completion_tokens for e in admitted),
                total_tokens=sum(e.total_tokens for e in admitted),
                in_flight=len(self._in_flight),
                peak_in_flight=self._peak_in_flight,
                window_requests=usage.requests,
                window_tokens=usage.tokens,
                periods=[period.model_copy() for period in self._periods],
                windows=self._window_totals(admitted, now),
            )

    def _append(self, entry: LogEntry) -> LogEntry:
        self._entries.append(entry)
        return entry

    def _count_admission(self, decision: Decision, entry: LogEntry) -> None:
        period = self._periods[-1]
        period.admitted += 1
        period.peak_requests = max(period.peak_requests, decision.usage.requests)
        period.peak_tokens = max(period.peak_tokens, decision.usage.tokens)
        self._in_flight.add(entry.request_id)
        self._peak_in_flight = max(self._peak_in_flight, len(self._in_flight))

    def _window_totals(self, admitted: list[LogEntry], now: float) -> list[WindowTotal]:
        length = self._window.limits.window_seconds
        count = max(1, math.ceil((now - self._started_at) / length))
        totals = [WindowTotal(start=i * length, requests=0, tokens=0) for i in range(count)]
        for entry in admitted:
            # min(): an entry at the very instant of `now` belongs to the last slice
            total = totals[min(count - 1, int((entry.at - self._started_at) // length))]
            total.requests += 1
            total.tokens += entry.total_tokens
        return totals
