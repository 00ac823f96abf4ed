"""The admission rule for requests-per-window and tokens-per-window limits.

A request admitted at time `t` counts against the limits while `now < t + window_seconds`
(a rolling window, not fixed buckets: no burst of twice the limit across a bucket edge).
A request is admitted only if, counting it, the window holds at most `rpm` requests and
`tpm` tokens; otherwise it is refused with the delay after which it would be admitted, if
nothing else is admitted meanwhile.

A request costing more tokens than the whole `tpm` could never fit. Rather than refusing it
forever (a client that honours Retry-After would spin), it is admitted *alone*: only into an
empty window, after which nothing else fits until it ages out. So the window can hold more
than `tpm` tokens, but only that one request; its Decision says `oversized`.

Nothing here reads a clock: every call takes `now`, seconds on a monotonic clock, so the
rule is tested exactly and the caller decides which clock (and which lock) to use.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LimitName = Literal["requests", "tokens"]


class Limits(BaseModel):
    """Requests and tokens allowed per rolling window; None means unlimited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    window_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)


@dataclass(frozen=True)
class Usage:
    """What the window holds: admitted requests and their tokens."""

    requests: int
    tokens: int


@dataclass(frozen=True)
class Decision:
    admitted: bool
    limits: Limits  # the limits the decision was made under
    usage: Usage  # the window after the decision (with this request when admitted)
    retry_after: float = 0.0  # seconds until it would be admitted; 0 when admitted
    limit: LimitName | None = None  # the limit that refused it (the longer wait of the two)
    oversized: bool = False  # costs more than the whole tpm (see the module docstring)
    reset_after: float = 0.0  # seconds until the window is empty again

    @property
    def remaining_requests(self) -> int | None:
        """Requests still allowed in the window; None when unlimited."""
        rpm = self.limits.rpm
        return None if rpm is None else max(0, rpm - self.usage.requests)

    @property
    def remaining_tokens(self) -> int | None:
        """Tokens still allowed in the window (0, not negative, after an oversized request)."""
        tpm = self.limits.tpm
        return None if tpm is None else max(0, tpm - self.usage.tokens)


@dataclass(frozen=True)
class _Entry:
    at: float
    tokens: int


class RollingWindow:
    """Admits or refuses requests against `Limits` over a rolling window. Not thread-safe."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._entries: deque[_Entry] = deque()  # oldest first
        self._tokens = 0

    def usage(self, now: float) -> Usage:
        self._expire(now)
        return Usage(len(self._entries), self._tokens)

    def clear(self) -> None:
        self._entries.clear()
        self._tokens = 0

    def try_admit(self, tokens: int, now: float) -> Decision:
        """Admit a request costing `tokens` at `now`, or say how long until it would fit."""
        if tokens < 0:
            raise ValueError(f"a request cannot cost {tokens} tokens")
        self._expire(now)
        oversized = self.limits.tpm is not None and tokens > self.limits.tpm
        waits: dict[LimitName, float] = {
            "requests": self._request_wait(now),
            "tokens": self._token_wait(tokens, now),
        }
        limit: LimitName = max(waits, key=waits.__getitem__)
        if waits[limit] > 0:
            return self._decision(False, now, oversized, retry_after=waits[limit], limit=limit)
        self._entries.append(_Entry(now, tokens))
        self._tokens += tokens
        return self._decision(True, now, oversized)

    def seconds_until_empty(self, now: float) -> float:
        self._expire(now)
        return self._expiry(self._entries[-1], now) if self._entries else 0.0

    def _decision(
        self,
        admitted: bool,
        now: float,
        oversized: bool,
        retry_after: float = 0.0,
        limit: LimitName | None = None,
    ) -> Decision:
        return Decision(
            admitted=admitted,
            limits=self.limits,
            usage=Usage(len(self._entries), self._tokens),
            retry_after=retry_after,
            limit=limit,
            oversized=oversized,
            reset_after=self.seconds_until_empty(now),
        )

    def _expiry(self, entry: _Entry, now: float) -> float:
        return entry.at + self.limits.window_seconds - now

    def _expire(self, now: float) -> None:
        while self._entries and self._expiry(self._entries[0], now) <= 0:
            self._tokens -= self._entries.popleft().tokens

    def _request_wait(self, now: float) -> float:
        rpm = self.limits.rpm
        if rpm is None or len(self._entries) < rpm:
            return 0.0
        # One more fits once all but rpm - 1 of the entries have aged out.
        return self._expiry(self._entries[len(self._entries) - rpm], now)

    def _token_wait(self, tokens: int, now: float) -> float:
        tpm = self.limits.tpm
        if tpm is None or not self._entries:
            return 0.0  # an empty window takes any request, even an oversized one
        excess = self._tokens + tokens - tpm
        if excess <= 0:
            return 0.0
        freed = 0
        for entry in self._entries:
            freed += entry.tokens
            if freed >= excess:
                return self._expiry(entry, now)
        return self._expiry(self._entries[-1], now)  # oversized: wait for an empty window
