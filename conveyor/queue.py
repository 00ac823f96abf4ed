"""The queue's operations: enqueue, claim, finish, renew, sweep, cancel, retry, prune.

Plain async functions over a connection; each is one statement of `sql/queue.sql` (the
sweeper's lock and its sweep share one transaction). Everything the worker writes is
fenced by (task id, attempt number), so repeating a write after a lost connection, or
arriving late after the task was taken over, changes nothing it should not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import DictRow

from conveyor import policy
from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, InvalidTransition, TaskNotFound, UnknownAgent
from conveyor.sql import queue as Q
from conveyor.states import AttemptStatus, TaskStatus

PRIORITY_MIN, PRIORITY_MAX = -32768, 32767
MAX_PAYLOAD_BYTES = 1 << 20  # large inputs belong in documents, referenced from the payload
INT32_MAX = 2**31 - 1
COPY_THRESHOLD = 200  # unkeyed batches this large go by COPY
COPY_CHUNK = 1000  # rows prepared and sent at a time, while the server inserts the last


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

    @property
    def charged_attempts(self) -> int:
        """Attempts that spent a retry, this one included."""
        return policy.charged_attempts(self.attempt, self.free_attempts)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt ended, as the worker reports it."""

    task_id: int
    attempt: int
    outcome: str  # succeeded | failed | throttled | released | cancelled
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
    agent: str | None = None  # for the worker's own bookkeeping (throttling); not written


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


# ---------------------------------------------------------------------------------------
# Agents


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


async def register_agents(conn: Connection, agents: Sequence[AgentRegistration]) -> None:
    """Upsert the agents an App declares, in name order (the order claims lock them in)."""
    if not agents:
        return
    ordered = sorted(agents, key=lambda a: a.name)
    await conn.execute(
        Q.agents_register,
        {
            "names": [a.name for a in ordered],
            "max_attempts": [a.max_attempts for a in ordered],
            "lease_seconds": [a.lease_seconds for a in ordered],
            "max_concurrent": [a.max_concurrent for a in ordered],
            "max_tpm": [a.max_tpm for a in ordered],
            "max_rpm": [a.max_rpm for a in ordered],
            "window_seconds": [a.window_seconds for a in ordered],
            "compute_usd_per_hour": [a.compute_usd_per_hour for a in ordered],
        },
    )


async def set_limits(
    conn: Connection,
    agent: str,
    *,
    max_concurrent: int | None = None,
    max_tpm: int | None = None,
    max_rpm: int | None = None,
    window_seconds: float | None = None,
) -> None:
    """Set an agent's limits as an operator: None keeps a value, 0 removes that limit."""
    for name, value in (
        ("max_concurrent", max_concurrent),
        ("max_tpm", max_tpm),
        ("max_rpm", max_rpm),
    ):
        if value is not None:
            _check_int(name, value, 0, INT32_MAX)
    if window_seconds is not None and not 0 < window_seconds <= 86400:
        raise InvalidTask("the window must be between 0 and 86400 seconds")
    cur = await conn.execute(
        Q.agents_set_limits,
        {
            "name": agent,
            "max_concurrent": max_concurrent,
            "max_tpm": max_tpm,
            "max_rpm": max_rpm,
            "window_seconds": window_seconds,
        },
    )
    if await cur.fetchone() is None:
        raise UnknownAgent([agent])


async def reset_limits(conn: Connection, agent: str) -> None:
    """Back to the limits declared in code; forget what throttling taught."""
    cur = await conn.execute(Q.agents_reset_limits, {"name": agent})
    if await cur.fetchone() is None:
        raise UnknownAgent([agent])


async def agent_limits(conn: Connection) -> list[DictRow]:
    """Every agent's limits, the throttling state, and the current window's usage."""
    cur = await conn.execute(Q.agents_limits)
    return await cur.fetchall()


async def report_throttled(conn: Connection, retry_after: Mapping[str, float]) -> list[DictRow]:
    """The endpoint throttled these agents, and said when to come back (seconds): learn
    their token budgets from what their windows hold, pause them until then, and shrink
    their other limits (once per cooldown: the rows say `shrunk`)."""
    agents = sorted(retry_after)
    cur = await conn.execute(
        Q.agents_throttled,
        {"agents": agents, "retry_after": [max(0.0, retry_after[a]) for a in agents]},
    )
    return await cur.fetchall()


async def check_agents(conn: Connection, names: Iterable[str], known: set[str]) -> None:
    """Raise UnknownAgent unless every name is registered; remember the ones that are."""
    wanted = set(names) - known
    if not wanted:
        return
    cur = await conn.execute(Q.agents_known, {"names": sorted(wanted)})
    found = {row["name"] for row in await cur.fetchall()}
    known |= found
    missing = sorted(wanted - found)
    if missing:
        raise UnknownAgent(missing)


# ---------------------------------------------------------------------------------------
# Enqueue


# One encoder for all: json.dumps() with options builds a new encoder at every call.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def _json_text(value: Any, what: str) -> str:
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise InvalidTask(f"{what} is not JSON: {exc}") from None
    if _NUL in text:
        raise InvalidTask(f"{what} contains a NUL character, which PostgreSQL cannot store")
    return text


_NUL = "\\u0000"  # how the encoder writes a NUL character: jsonb refuses it


def _check_text(name: str, value: str | None) -> None:
    if value is not None and "\x00" in value:
        raise InvalidTask(f"{name} contains a NUL character, which PostgreSQL cannot store")


MAX_DELAY_SECONDS = 100 * 366 * 86400  # a century: further is a mistake, not a schedule


def _run_after(value: datetime | timedelta | float | None) -> tuple[datetime | None, float | None]:
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


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTask(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise InvalidTask(f"{name} must be between {low} and {high}, not {value}")


def _validate(task: NewTask) -> dict[str, Any]:
    """Check one task and return it as the JSON object the insert reads."""
    if not isinstance(task.agent, str) or not task.agent:
        raise InvalidTask(f"agent must be a non-empty string, not {task.agent!r}")
    if task.priority != 0:
        _check_int("priority", task.priority, PRIORITY_MIN, PRIORITY_MAX)
    if task.estimated_tokens is not None:
        _check_int("estimated_tokens", task.estimated_tokens, 0, INT32_MAX)
    if task.max_attempts is not None:
        _check_int("max_attempts", task.max_attempts, 1, 1000)
    key = task.idempotency_key
    if key is not None and (not isinstance(key, str) or not 1 <= len(key) <= 255):
        raise InvalidTask("idempotency_key must be a string of 1 to 255 characters")
    if task.tenant is not None and not isinstance(task.tenant, str):
        raise InvalidTask(f"tenant must be a string, not {task.tenant!r}")
    _check_text("agent", task.agent)
    _check_text("idempotency_key", key)
    _check_text("tenant", task.tenant)
    labels = task.labels
    if labels is not None and (
        not isinstance(labels, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
    ):
        raise InvalidTask("labels must be a mapping of strings to strings")
    for label, value in (labels or {}).items():
        _check_text(f"label {label!r}", label + value)
    run_after, run_in = _run_after(task.run_after)
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
        "labels": labels,
    }


def _batch_json(rows: list[dict[str, Any]]) -> str:
    """The whole batch as one JSON array: one encoder call in C instead of one per task,
    and one parameter for PostgreSQL to parse instead of nine long arrays."""
    rows = [
        r if r["run_after"] is None else {**r, "run_after": r["run_after"].isoformat()}
        for r in rows
    ]
    try:
        text = _ENCODER.encode(rows)
    except (TypeError, ValueError):
        text = ""
    if not text or len(text) > MAX_PAYLOAD_BYTES or _NUL in text:
        # Slow path, only for batches with a problem or large payloads: find the task.
        for n, row in enumerate(rows):
            what = "the payload" if len(rows) == 1 else f"the payload of task {n}"
            payload = _json_text(row["payload"], what)
            if len(payload) > MAX_PAYLOAD_BYTES:
                raise InvalidTask(
                    f"{what} is {len(payload)} bytes; the limit is "
                    f"{MAX_PAYLOAD_BYTES} (store large inputs as documents and reference them)"
                )
        text = text or _json_text(rows, "a task")
    return text


async def enqueue_many(
    conn: Connection, tasks: Sequence[NewTask], *, known_agents: set[str]
) -> list[int]:
    """Insert tasks in one statement; return their ids in input order.

    A task whose (agent, idempotency_key) exists already is not inserted again: its
    existing id is returned in its place. The NOTIFY that wakes workers is sent by the
    insert trigger, in the same transaction.
    """
    if not tasks:
        return []
    if len(tasks) >= COPY_THRESHOLD and all(t.idempotency_key is None for t in tasks):
        return await _copy(conn, tasks, known_agents)
    rows = [_validate(t) for t in tasks]
    batch = _batch_json(rows)
    await check_agents(conn, {r["agent"] for r in rows}, known_agents)
    cur = await conn.execute(Q.tasks_enqueue, {"tasks": batch})
    inserted = await cur.fetchall()
    if len(inserted) == len(rows):
        return [row["id"] for row in inserted]
    return await _ids_in_input_order(conn, rows, inserted)


async def _copy(conn: Connection, tasks: Sequence[NewTask], known_agents: set[str]) -> list[int]:
    """Insert a large batch without idempotency keys by COPY, in one transaction.

    The tasks are checked and formatted a chunk at a time, each chunk sent before the next
    is prepared, so that PostgreSQL inserts one while Python prepares the next; a bad task
    aborts the COPY, and the transaction with it, so nothing of the batch is written. The
    rows are written in COPY's text format by hand: JSON text needs only its backslashes
    doubled, and formatting a line is several times cheaper than passing each value
    through a dumper.
    """
    agents = {t.agent for t in tasks}
    if not all(isinstance(a, str) for a in agents):
        for task in tasks:
            _validate(task)  # raises the clear error for the task that has it
    async with conn.transaction():
        cur = await conn.execute(Q.tasks_reserve_ids, {"n": len(tasks), "agents": sorted(agents)})
        reserved = await cur.fetchone()
        assert reserved is not None
        defaults = reserved["max_attempts"] or {}
        missing = sorted(agents - defaults.keys())
        if missing:
            for task in tasks:
                _validate(task)  # a malformed name is a bad task before an unknown agent
            raise UnknownAgent(missing)
        ids, now = reserved["ids"], reserved["now"]
        async with conn.cursor().copy(Q.tasks_copy) as copy:
            lines = []
            for n, (task_id, task) in enumerate(zip(ids, tasks, strict=True)):
                row = _validate(task)
                payload = _json_text(
                    {} if row["payload"] is None else row["payload"], f"the payload of task {n}"
                )
                if len(payload) > MAX_PAYLOAD_BYTES:
                    raise InvalidTask(
                        f"the payload of task {n} is {len(payload)} bytes; the limit is "
                        f"{MAX_PAYLOAD_BYTES} (store large inputs as documents and reference them)"
                    )
                lines.append(_copy_line(task_id, row, payload, defaults, now))
                if len(lines) == COPY_CHUNK:
                    await copy.write("".join(lines))
                    lines.clear()
            await copy.write("".join(lines))
    known_agents.update(agents)
    return list(ids)


def _copy_line(
    task_id: int, row: dict[str, Any], payload: str, defaults: dict[str, int], now: datetime
) -> str:
    """One row of COPY text format: tab-separated, \\N for NULL, backslashes doubled.
    `now` is the database's clock (the transaction's now()), which delays count from."""
    run_after = row["run_after"] or now + timedelta(seconds=row["run_in"] or 0)
    labels = row["labels"]
    fields = (
        str(task_id),
        row["agent"],  # a registered agent name: letters, digits and _.:- only
        payload.replace("\\", "\\\\"),
        str(row["priority"]),
        _copy_opt(row["estimated_tokens"]),
        str(row["max_attempts"] or defaults[row["agent"]]),
        run_after.isoformat(),
        _copy_text(row["tenant"]),
        "{}" if labels is None else _json_text(labels, "labels").replace("\\", "\\\\"),
    )
    return "\t".join(fields) + "\n"


def _copy_opt(value: int | None) -> str:
    return "\\N" if value is None else str(value)


def _copy_text(value: str | None) -> str:
    if value is None:
        return "\\N"
    return value.translate(_COPY_ESCAPES)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


async def _ids_in_input_order(
    conn: Connection, rows: list[dict[str, Any]], inserted: Sequence[dict[str, Any]]
) -> list[int]:
    """Match returned ids to the input when some tasks were already there (same key)."""
    unkeyed = iter(r["id"] for r in inserted if r["idempotency_key"] is None)
    by_key = {(r["agent"], r["idempotency_key"]): r["id"] for r in inserted if r["idempotency_key"]}
    wanted = {(r["agent"], r["idempotency_key"]) for r in rows if r["idempotency_key"]}
    missing = sorted(wanted - by_key.keys())
    if missing:
        agents, keys = zip(*missing, strict=True)
        cur = await conn.execute(
            Q.tasks_by_idempotency_key, {"agents": list(agents), "idempotency_keys": list(keys)}
        )
        by_key |= {(r["agent"], r["idempotency_key"]): r["id"] for r in await cur.fetchall()}
    return [
        by_key[(r["agent"], r["idempotency_key"])] if r["idempotency_key"] else next(unkeyed)
        for r in rows
    ]


# ---------------------------------------------------------------------------------------
# The worker's side: claim, finish, renew


async def claim(
    conn: Connection,
    *,
    worker_id: str,
    agents: Sequence[str],
    limit: int,
    limited_limit: int | None = None,
) -> list[ClaimedTask]:
    _, claimed = await finish_and_claim(
        conn, [], worker_id=worker_id, agents=agents, limit=limit, limited_limit=limited_limit
    )
    return claimed


async def finish(conn: Connection, outcomes: Sequence[Outcome]) -> list[FinishResult]:
    """End attempts in one statement. An outcome missing from the answer was applied by an
    earlier try of the same call (after a connection lost in the middle of the commit)."""
    finished, _ = await finish_and_claim(conn, outcomes, worker_id="", agents=(), limit=0)
    return finished


async def finish_and_claim(
    conn: Connection,
    outcomes: Sequence[Outcome],
    *,
    worker_id: str,
    agents: Sequence[str],
    limit: int,
    limited_limit: int | None = None,
) -> tuple[list[FinishResult], list[ClaimedTask]]:
    """End attempts and claim new tasks in one transaction and one round trip.

    At most `limit` tasks are claimed, of which at most `limited_limit` (default: `limit`)
    of agents with limits.

    A busy worker swaps finished tasks for new ones at every exchange, so one commit (one
    WAL flush) serves both, and the batches are as large as what finished meanwhile.
    """
    if not outcomes and limit <= 0:
        return [], []
    async with conn.pipeline(), conn.transaction():
        finish_cur = claim_cur = None
        if outcomes:
            finish_cur = await conn.execute(Q.attempts_finish, _outcome_arrays(outcomes))
        if limit > 0:
            # The planner's row estimates for a queue table are often stale: a burst of
            # inserts lands between two autovacuum analyses, the estimate for status =
            # 'enqueued' stays tiny, and the planner then prefers to read every enqueued
            # row and sort them, so a claim costs O(queue length) instead of O(batch).
            # For this transaction only, bitmap and sequential scans are off, which leaves
            # the ordered walk of tasks_dequeue_idx.
            await conn.execute(Q.planner_index_only)
            claim_cur = await conn.execute(
                Q.tasks_claim,
                {
                    "worker_id": worker_id,
                    "agents": sorted(agents),  # the order agent rows are locked in
                    "limit": limit,
                    "limited_limit": limit if limited_limit is None else limited_limit,
                },
            )
    finished = [
        FinishResult(r["task_id"], r["attempt"], r["applied"])
        for r in (await finish_cur.fetchall() if finish_cur else ())
    ]
    claimed = [_claimed(r) for r in (await claim_cur.fetchall() if claim_cur else ())]
    return finished, claimed


# A NUL escape in JSON text that is not itself escaped (preceded by an even number of
# backslashes): jsonb refuses it, whereas an escaped backslash followed by "u0000" is fine.
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
UNSTORABLE_RESULT = (
    "the agent's result contains a NUL character (\\u0000), which PostgreSQL cannot store; "
    "remove it from the result (PDF text often holds some)"
)


def storable(outcome: Outcome) -> Outcome:
    """The outcome as PostgreSQL can store it. Text columns refuse the NUL character, and
    jsonb the JSON escape of it; one such value would fail the whole batch it is written
    with. An error message keeps its text, each NUL shown as \\x00 (an exception about a
    PDF quotes its text). A result is the agent's answer and is not altered: the attempt
    fails instead, saying why, without a retry (the same code would return the same)."""
    changes: dict[str, Any] = {}
    for name in ("error", "model", "trace_id"):
        value = getattr(outcome, name)
        if value is not None and "\x00" in value:
            changes[name] = value.replace("\x00", "\\x00")
    result = outcome.result
    if result is not None and (
        "\x00" in result or ("\\u0000" in result and _JSON_NUL.search(result))
    ):
        changes.update(outcome="failed", result=None, retry_delay=None, error=UNSTORABLE_RESULT)
    return replace(outcome, **changes) if changes else outcome


def _outcome_arrays(outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    arrays = _arrays(outcomes)
    if _may_hold_nul(arrays):  # rare: only then is each outcome looked at
        arrays = _arrays([storable(o) for o in outcomes])
    return arrays


def _may_hold_nul(arrays: dict[str, list[Any]]) -> bool:
    """Whether any text of the batch may hold what storable() changes: one scan in C of
    each column joined, instead of a check per outcome on the hot path (a false alarm
    only costs the exact check)."""
    text = "".join(filter(None, arrays["errors"] + arrays["models"] + arrays["trace_ids"]))
    results = "".join(filter(None, arrays["results"]))
    return "\x00" in text or "\x00" in results or "\\u0000" in results


def _arrays(outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    return {
        "task_ids": [o.task_id for o in outcomes],
        "attempts": [o.attempt for o in outcomes],
        "outcomes": [o.outcome for o in outcomes],
        "results": [o.result for o in outcomes],
        "errors": [o.error for o in outcomes],
        "retry_delays": [o.retry_delay for o in outcomes],
        "models": [o.model for o in outcomes],
        "input_tokens": [o.input_tokens for o in outcomes],
        "output_tokens": [o.output_tokens for o in outcomes],
        "started_after": [o.started_after for o in outcomes],
        "trace_ids": [o.trace_id for o in outcomes],
        "llm_costs": [o.llm_cost_usd for o in outcomes],
        "compute_rates": [o.compute_usd_per_hour for o in outcomes],
    }


def _claimed(r: DictRow) -> ClaimedTask:
    return ClaimedTask(
        id=r["id"],
        attempt_id=r["attempt_id"],
        agent=r["agent"],
        payload=r["payload"],
        priority=r["priority"],
        attempt=r["attempts"],
        max_attempts=r["max_attempts"],
        free_attempts=r["free_attempts"],
        estimated_tokens=r["estimated_tokens"],
        tenant=r["tenant"],
        labels=r["labels"],
        created_at=r["created_at"],
        lease_expires_at=r["lease_expires_at"],
        reserved_tokens=r["reserved"],
    )


async def renew_leases(conn: Connection, held: dict[int, int]) -> set[int]:
    """Extend the leases of {task_id: attempt}; return the ids still held."""
    if not held:
        return set()
    cur = await conn.execute(
        Q.tasks_renew_leases, {"task_ids": list(held), "attempts": list(held.values())}
    )
    return {r["id"] for r in await cur.fetchall()}


async def sweep(
    conn: Connection,
    *,
    limit: int = 500,
    orphans_of: str | None = None,
    keep: Iterable[int] = (),
) -> list[tuple[int, TaskStatus]]:
    """Take back tasks with an expired lease (and a worker's orphans); one batch."""
    cur = await conn.execute(
        Q.tasks_sweep, {"limit": limit, "orphans_of": orphans_of, "keep": list(keep)}
    )
    return [(r["id"], TaskStatus(r["status"])) for r in await cur.fetchall()]


async def sweep_expired(
    conn: Connection, *, batch: int = 500
) -> list[tuple[int, TaskStatus]] | None:
    """One sweeper pass, unless another sweeper holds the lock (then None)."""
    swept: list[tuple[int, TaskStatus]] = []
    async with conn.transaction():
        cur = await conn.execute(Q.sweeper_lock)
        row = await cur.fetchone()
        if not row or not row["locked"]:
            return None
        while True:
            done = await sweep(conn, limit=batch)
            swept += done
            if len(done) < batch:
                return swept


# ---------------------------------------------------------------------------------------
# Reading, cancelling, retrying, pruning


def _task_id(task_id: Any) -> int:
    if isinstance(task_id, bool) or not isinstance(task_id, int) or not 0 < task_id < 2**63:
        raise TaskNotFound(task_id)
    return task_id


async def get_task(conn: Connection, task_id: int, *, with_attempts: bool = True) -> TaskRecord:
    task_id = _task_id(task_id)
    cur = await conn.execute(Q.tasks_get, {"id": task_id})
    row = await cur.fetchone()
    if row is None:
        raise TaskNotFound(task_id)
    history: tuple[AttemptRecord, ...] = ()
    if with_attempts:
        cur = await conn.execute(Q.attempts_of_task, {"task_id": task_id})
        history = tuple(_attempt(r) for r in await cur.fetchall())
    return TaskRecord(**{**row, "status": TaskStatus(row["status"])}, attempt_history=history)


def _attempt(row: DictRow) -> AttemptRecord:
    values = dict(row)
    values["status"] = AttemptStatus(values["status"])
    for money in ("llm_cost_usd", "compute_cost_usd"):
        if values[money] is not None:
            values[money] = float(values[money])
    return AttemptRecord(**values)


async def cancel(conn: Connection, task_id: int) -> TaskRecord:
    """Cancel an enqueued or running task. Cancelling a finished task changes nothing and
    raises InvalidTransition unless it is already cancelled."""
    task_id = _task_id(task_id)
    cur = await conn.execute(Q.tasks_cancel, {"id": task_id})
    changed = await cur.fetchone()
    task = await get_task(conn, task_id)
    if changed is None and task.status != TaskStatus.CANCELLED:
        raise InvalidTransition(
            f"task {task_id} is {task.status}; only enqueued or processing tasks can be cancelled"
        )
    return task


async def retry(conn: Connection, task_id: int) -> TaskRecord:
    """Enqueue a failed or cancelled task again, with its full allowance of attempts."""
    task_id = _task_id(task_id)
    cur = await conn.execute(Q.tasks_retry, {"id": task_id})
    changed = await cur.fetchone()
    task = await get_task(conn, task_id)
    if changed is None:
        raise InvalidTransition(
            f"task {task_id} is {task.status}; only failed or cancelled tasks can be retried"
        )
    return task


async def prune(conn: Connection, *, older_than: float, batch: int = 1000) -> int:
    """Delete tasks (and their attempts) finished more than `older_than` seconds ago,
    one short transaction per batch. Returns how many tasks were deleted."""
    total = 0
    while True:
        cur = await conn.execute(Q.tasks_prune, {"older_than": older_than, "limit": batch})
        deleted = len(await cur.fetchall())
        total += deleted
        if deleted < batch:
            return total


async def list_tasks(
    conn: Connection,
    *,
    status: str | None = None,
    agent: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    before_id: int | None = None,
    limit: int = 50,
    tenant: str | None = None,
) -> list[DictRow]:
    cur = await conn.execute(
        Q.tasks_list,
        {
            "status": status,
            "agent": agent,
            "tenant": tenant,
            "since": since,
            "until": until,
            "before_id": before_id,
            "limit": limit,
        },
    )
    return await cur.fetchall()


# ---------------------------------------------------------------------------------------
# External jobs


async def callback_key(conn: Connection) -> str:
    """The database's key for callback secrets (created on first use)."""
    from conveyor.external import new_key

    cur = await conn.execute(Q.keys_callbacks, {"value": new_key()})
    row = await cur.fetchone()
    if row is None:  # the upsert returns its row whoever created it
        raise RuntimeError("the callback key could not be read back")
    return str(row["value"])


async def set_run_id(conn: Connection, attempt_id: int, run_id: str) -> None:
    await conn.execute(Q.attempts_set_run_id, {"attempt_id": attempt_id, "run_id": run_id})


async def attempt_for_callback(conn: Connection, attempt_id: int) -> DictRow | None:
    cur = await conn.execute(Q.attempts_for_callback, {"attempt_id": attempt_id})
    return await cur.fetchone()
