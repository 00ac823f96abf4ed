"""What an agent function receives: the task, and a way to report what it spent."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conveyor.queue.records import ChildResult


@dataclass
class Usage:
    model: str | None = None  # the last one reported
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    # model -> [input, output] tokens: an attempt that calls several models is priced
    # model by model (see conveyor.llm.pricing).
    by_model: dict[str, list[int]] = field(default_factory=dict)
    # time.monotonic() of the latest call reported (when its request was sent, if the caller
    # said so): the worker turns it into how long before the attempt's end that was, for the
    # token window (task_attempts.last_call_at). Meaningful only in the process that took it.
    last_call: float | None = None


@dataclass
class Task:
    """One attempt at one task, as handed to an agent.

    `payload` is the JSON the task was enqueued with. Call `report_usage` after each model
    call; the sums are stored on the attempt when it ends, whatever way it ends.
    """

    id: int
    agent: str
    payload: Any
    attempt: int
    max_attempts: int
    priority: int
    created_at: datetime
    tenant: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    estimated_tokens: int | None = None
    usage: Usage = field(default_factory=Usage)
    trace_id: str | None = None  # the attempt's trace, when tracing is on
    # The worker's reader of a task's children, called with this task's id
    # (docs/children.md); None: no database. One reader for all tasks, not one per task.
    children_reader: Callable[[int], Awaitable[list[ChildResult]]] | None = field(
        default=None, repr=False
    )
    children_reader_sync: Callable[[int], list[ChildResult]] | None = field(
        default=None, repr=False
    )

    async def children(self) -> list[ChildResult]:
        """The children this task spawned (conveyor.queue.ChildResult), in spawn order:
        empty on its first run. From a plain `def` agent, use children_sync()."""
        return [] if self.children_reader is None else await self.children_reader(self.id)

    def children_sync(self) -> list[ChildResult]:
        """children() for a plain `def` agent, which runs in a thread of the worker."""
        return [] if self.children_reader_sync is None else self.children_reader_sync(self.id)

    def report_usage(
        self,
        *,
        model: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        sent_at: float | None = None,
    ) -> None:
        """Add one model call's tokens to the attempt. `sent_at`: the time.monotonic() at
        which its request was sent, if known; otherwise the call counts as made now, which
        is never earlier than it was. The agent's token window counts an attempt's tokens
        until a window after its last call (docs/limits.md)."""
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        if model is not None:
            self.usage.model = model
            spent = self.usage.by_model.setdefault(model, [0, 0])
            spent[0] += input_tokens
            spent[1] += output_tokens
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.calls += 1
        made = time.monotonic() if sent_at is None else min(sent_at, time.monotonic())
        if self.usage.last_call is None or made > self.usage.last_call:
            self.usage.last_call = made
