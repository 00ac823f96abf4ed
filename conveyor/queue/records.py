"""What the queue takes and gives: tasks to enqueue, claimed tasks, outcomes, records.

`AttemptOutcome` names every way an attempt ends; `conveyor_end_attempts()` in
conveyor/sql/functions/attempts.sql is the one write that applies them, and says what
each does to the attempt and its task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from conveyor import policy
from conveyor.states import AttemptStatus, TaskStatus


class AttemptOutcome(StrEnum):
    """How an attempt ends, as whoever ends it reports it (the table of what each does is
    in conveyor/sql/functions/attempts.sql)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a retry after `retry_delay` if one is left; None = no retry
    THROTTLED = "throttled"  # the endpoint said 429: back in the queue, no retry spent
    RELEASED = "released"  # a worker shutting down hands it back: no retry spent
    CANCELLED = "cancelled"  # the agent stopped (the task was cancelled), or a cancel
    LOST = "lost"  # the sweeper: the lease expired
    SPAWNED = "spawned"  # the agent returned a Spawn: its task waits for the children


#: What Outcome.outcome may be: checked once per batch before it is written.
OUTCOMES: frozenset[str] = frozenset(AttemptOutcome)


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task to enqueue. `run_after` delays it (a datetime, or seconds from now)."""

    agent: str
    payload: Any = None
    priority: int = 0
    idempotency_key: str | None = None
    estimated_tokens: int | None = None
    max_attempts: int | None = None
    run_after: datetime | timedelta | float | None = None
    tenant: str | None = None
    labels: dict[str, str] | None = None


class Claim(NamedTuple):
    """One claim of a task: its attempt number and its claim token (tasks.claim_token, a
    random uuid as text), what every later write of that claim is fenced by. The number
    alone does not name a claim: one that a crash undid has the same as the next
    (conveyor/sql/functions/attempts.sql). A None token: the attempt number alone."""

    attempt: int
    token: str | None


@dataclass(frozen=True, slots=True)
class ClaimedTask:
    """A task a worker claimed, in the attempt it claimed it for."""

    id: int
    attempt_id: int
    agent: str
    payload: Any
    priority: int
    attempt: int
    max_attempts: int
    free_attempts: int
    estimated_tokens: int | None
    tenant: str | None
    labels: dict[str, str]
    created_at: datetime
    lease_expires_at: datetime
    reserved_tokens: int = 0
    claim_token: str | None = None  # the claim's own name (Claim)

    @property
    def claim(self) -> Claim:
        return Claim(self.attempt, self.claim_token)

    @property
    def charged_attempts(self) -> int:
        """Attempts that spent a retry, this one included."""
        return policy.charged_attempts(self.attempt, self.free_attempts)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt ended, as the worker reports it."""

    task_id: int
    attempt: int
    outcome: str  # an AttemptOutcome (a plain string is accepted)
    result: str | None = None  # JSON text
    error: str | None = None
    retry_delay: float | None = None  # failed: seconds before the retry; None = no retry
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    started_after: float = 0.0  # seconds the claimed task waited in the worker's buffer
    trace_id: str | None = None
    llm_cost_usd: float | None = None
    compute_usd_per_hour: float | None = None  # None: the rate on the agent's row
    run_id: str | None = None  # where it ran, if not recorded yet (a run id is written once)
    # Seconds from the attempt's last model call to this outcome, by the worker's clock
    # (task_attempts.last_call_at); None: unknown, the window counts from the attempt's end.
    since_last_call: float | None = None
    agent: str | None = None  # for the worker's own bookkeeping (throttling); not written
    # The claim this outcome ends (ClaimedTask.claim_token): a claim a crash undid is then
    # told apart from the task's next claim of the same attempt number. None: fenced by
    # the attempt number alone.
    claim_token: str | None = None

    @property
    def claim(self) -> Claim:
        return Claim(self.attempt, self.claim_token)


@dataclass(frozen=True, slots=True)
class FinishResult:
    task_id: int
    attempt: int
    applied: bool  # False: the attempt had already ended; the outcome was recorded as late


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    id: int
    task_id: int
    attempt: int
    worker_id: str | None
    run_id: str | None
    trace_id: str | None
    status: AttemptStatus
    started_at: datetime
    finished_at: datetime | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    llm_cost_usd: float | None
    compute_cost_usd: float | None
    error: str | None
    late_outcome: str | None


@dataclass(frozen=True, slots=True)
class ChildResult:
    """A child as its parent sees it when it runs again."""

    id: int
    key: str
    agent: str
    status: TaskStatus
    result: Any
    error: str | None

    @property
    def succeeded(self) -> bool:
        return self.status == TaskStatus.COMPLETED


@dataclass(frozen=True, slots=True)
class ChildrenSummary:
    """A task's place in its family and its children's progress, for the API and the task
    page. The usage and cost are those of the whole tree: the task's own attempts plus
    all its descendants'."""

    parent_id: int | None
    key: str | None
    depth: int
    waiting: bool
    total: int
    done: int
    failed: int
    running: int
    queued: int
    input_tokens: int
    output_tokens: int
    llm_cost_usd: float
    compute_cost_usd: float


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: int
    agent: str
    status: TaskStatus
    priority: int
    payload: Any
    result: Any
    error: str | None
    idempotency_key: str | None
    estimated_tokens: int | None
    attempts: int
    max_attempts: int
    run_after: datetime
    lease_expires_at: datetime | None
    locked_by: str | None
    tenant: str | None
    labels: dict[str, str]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempt_history: tuple[AttemptRecord, ...] = field(default=())
    # Its family: parent, progress of its children, usage and cost of its tree (None when
    # read without it).
    children: ChildrenSummary | None = None


@dataclass(frozen=True, slots=True)
class AgentRegistration:
    """What an App tells the database about an agent it declares."""

    name: str
    max_attempts: int = 3
    lease_seconds: float = 60.0
    max_concurrent: int | None = None
    max_tpm: int | None = None
    max_rpm: int | None = None
    window_seconds: float = 60.0
    compute_usd_per_hour: float | None = None
