"""How an attempt ended, as the outcome the exchange writes: the one place where what an
executor returned or raised becomes a kind (succeeded, failed, throttled, cancelled,
released), an error text and a retry delay."""

from __future__ import annotations

import json
import traceback
from typing import Any

from conveyor.app import AgentSpec
from conveyor.errors import PermanentFailure, Throttled
from conveyor.executors import JobFailed
from conveyor.policy import backoff
from conveyor.queue import AttemptOutcome, Outcome

MAX_ERROR_CHARS = 4000
RELEASED = "handed back by a worker shutting down"
STOPPED = "the agent was stopped: the task was cancelled or its lease lost"


class NotJson(Exception):
    pass


def _not_json(value: Any) -> Any:
    raise NotJson(f"{type(value).__name__} is not serializable")


# One encoder for every result: json.dumps() with options builds a new JSONEncoder per call.
_encode = json.JSONEncoder(allow_nan=False, default=_not_json).encode


def result_json(value: Any) -> str:
    """The agent's return value as the task's result; NotJson if it is not JSON."""
    return "null" if value is None else _encode(value)


def stopped(reason: str | None) -> tuple[AttemptOutcome, str]:
    """(kind, error) of an attempt whose run was cancelled: handed back by a shutdown, or
    stopped because the task was cancelled or taken away."""
    if reason == "shutdown":
        return AttemptOutcome.RELEASED, RELEASED
    return AttemptOutcome.CANCELLED, STOPPED


def failure(
    exc: Exception, spec: AgentSpec, charged_attempts: int
) -> tuple[AttemptOutcome, str, float | None]:
    """(kind, error, retry_delay) of an attempt that raised `exc`. The retry delay is a
    wish: the database retries only while attempts are left (conveyor.policy)."""
    if isinstance(exc, Throttled):
        delay = exc.retry_after if exc.retry_after is not None else spec.backoff_base
        return AttemptOutcome.THROTTLED, f"throttled: {exc}", delay
    if isinstance(exc, PermanentFailure):
        return AttemptOutcome.FAILED, describe(exc), None
    if isinstance(exc, JobFailed):
        return (
            AttemptOutcome.FAILED,
            str(exc),
            backoff(charged_attempts, spec.backoff_base, spec.backoff_max),
        )
    if isinstance(exc, NotJson):
        # Not retried: the same code will return the same thing again.
        return AttemptOutcome.FAILED, f"the agent's return value is not JSON: {exc}", None
    return (
        AttemptOutcome.FAILED,
        describe(exc),
        backoff(charged_attempts, spec.backoff_base, spec.backoff_max),
    )


def describe(exc: BaseException) -> str:
    """An exception as an attempt's error: its type and message, then its traceback, cut
    in the middle to MAX_ERROR_CHARS."""
    text = "".join(traceback.format_exception(exc))
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS // 4] + "\n...\n" + text[-3 * MAX_ERROR_CHARS // 4 :]
    return f"{type(exc).__name__}: {exc}\n{text}".strip()


def line(exc: BaseException) -> str:
    """The first line of an exception's message (its type if it has none), for logs."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def unstorable(outcome: Outcome, exc: BaseException) -> Outcome:
    """The outcome that replaces one the database refused: the attempt failed, saying why.
    Only what cannot be at fault is kept. A failure keeps its retry; a result that cannot
    be stored would be returned again by the same code, so it is not retried."""
    return Outcome(
        task_id=outcome.task_id,
        attempt=outcome.attempt,
        outcome=AttemptOutcome.FAILED,
        error=f"the attempt's outcome ({outcome.outcome}) could not be stored: {line(exc)}",
        retry_delay=outcome.retry_delay if outcome.outcome == AttemptOutcome.FAILED else None,
        started_after=outcome.started_after,
        compute_usd_per_hour=outcome.compute_usd_per_hour,
        agent=outcome.agent,
        claim_token=outcome.claim_token,
    )
