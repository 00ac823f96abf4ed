"""Checks of what callers pass in, with a clear InvalidTask for each mistake: tasks to
enqueue, limits, JSON that PostgreSQL can store."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

from conveyor.errors import InvalidTask
from conveyor.queue.records import NewTask

PRIORITY_MIN, PRIORITY_MAX = -32768, 32767
MAX_PAYLOAD_BYTES = 1 << 20  # large inputs belong in documents, referenced from the payload
INT32_MAX = 2**31 - 1


# One encoder for all: json.dumps() with options builds a new encoder at every call.
ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def json_text(value: Any, what: str) -> str:
    try:
        text = ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise InvalidTask(f"{what} is not JSON: {exc}") from None
    if NUL in text:
        raise InvalidTask(f"{what} contains a NUL character, which PostgreSQL cannot store")
    return text


NUL = "\\u0000"  # how the encoder writes a NUL character: jsonb refuses it


def check_text(name: str, value: str | None) -> None:
    if value is not None and "\x00" in value:
        raise InvalidTask(f"{name} contains a NUL character, which PostgreSQL cannot store")


MAX_DELAY_SECONDS = 100 * 366 * 86400  # a century: further is a mistake, not a schedule


def when_to_run(value: datetime | timedelta | float | None) -> tuple[datetime | None, float | None]:
    """(a moment, or a delay in seconds). A delay is added to the database's clock by the
    insert, never to this process's: time comes from the database."""
    if value is None:
        return None, None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidTask("run_after must be timezone-aware (e.g. datetime.now(UTC))")
        return value, None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
    ):
        raise InvalidTask(f"run_after must be a datetime, a timedelta or seconds, not {value!r}")
    if abs(seconds) > MAX_DELAY_SECONDS:
        raise InvalidTask(f"run_after must be within a century from now, not {seconds:g} seconds")
    return None, float(seconds)


def check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTask(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise InvalidTask(f"{name} must be between {low} and {high}, not {value}")


def validate(task: NewTask) -> dict[str, Any]:
    """Check one task and return it as the JSON object the insert reads."""
    if not isinstance(task.agent, str) or not task.agent:
        raise InvalidTask(f"agent must be a non-empty string, not {task.agent!r}")
    if task.priority != 0:
        check_int("priority", task.priority, PRIORITY_MIN, PRIORITY_MAX)
    if task.estimated_tokens is not None:
        check_int("estimated_tokens", task.estimated_tokens, 0, INT32_MAX)
    if task.max_attempts is not None:
        check_int("max_attempts", task.max_attempts, 1, 1000)
    key = task.idempotency_key
    if key is not None and (not isinstance(key, str) or not 1 <= len(key) <= 255):
        raise InvalidTask("idempotency_key must be a string of 1 to 255 characters")
    if task.tenant is not None and not isinstance(task.tenant, str):
        raise InvalidTask(f"tenant must be a string, not {task.tenant!r}")
    check_text("agent", task.agent)
    check_text("idempotency_key", key)
    check_text("tenant", task.tenant)
    check_labels(task.labels)
    run_after, run_in = when_to_run(task.run_after)
    return {
        "agent": task.agent,
        "payload": task.payload,
        "priority": task.priority,
        "idempotency_key": key,
        "estimated_tokens": task.estimated_tokens,
        "max_attempts": task.max_attempts,
        "run_after": run_after,
        "run_in": run_in,
        "tenant": task.tenant,
        "labels": task.labels,
    }


def check_labels(labels: object) -> None:
    """Labels are a mapping of strings to strings that PostgreSQL can store (or None)."""
    if labels is not None and (
        not isinstance(labels, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
    ):
        raise InvalidTask("labels must be a mapping of strings to strings")
    for label, value in (labels or {}).items():
        check_text(f"label {label!r}", label + value)
