"""The worker's side: claim, finish (ending attempts), renew leases, sweep expired ones.

Everything the worker writes is fenced by (task id, attempt number, claim token), so
repeating a write after a lost connection, or arriving late after the task was taken over
(or after a crash undid the claim, which an idle worker's claim committed asynchronously
allows), changes nothing it should not. Every end of an attempt (these outcomes, the
sweep, a cancel, a callback) goes through one SQL function, conveyor_end_attempts().
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.queue.literals import number_array, text_array
from conveyor.queue.records import OUTCOMES, Claim, ClaimedTask, FinishResult, Outcome
from conveyor.sql import queue as Q
from conveyor.states import TaskStatus


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
    if not outcomes:
        # Nothing to write: the claim alone, one statement in autocommit (its settings are
        # the function's), instead of a transaction of four statements. An idle worker
        # woken by a NOTIFY starts its task that much sooner.
        return [], await claim_alone(
            conn, worker_id=worker_id, agents=agents, limit=limit, limited_limit=limited_limit
        )
    async with conn.pipeline(), conn.transaction():
        finish_cur = await conn.execute(Q.attempts_finish, _outcome_arrays(outcomes))
        claim_cur = None
        if limit > 0:
            # The planner's row estimates for a queue table are often stale: a burst of
            # inserts lands between two autovacuum analyses, the estimate for status =
            # 'enqueued' stays tiny, and the planner then prefers to read every enqueued
            # row and sort them, so a claim costs O(queue length) instead of O(batch).
            # For this transaction only, bitmap and sequential scans are off, which leaves
            # the ordered walk of tasks_dequeue_idx.
            # And the claim runs from the plan cached for its text (planner_index_only).
            await conn.execute(Q.planner_index_only)
            claim_cur = await conn.execute(
                claim_statement(limit), _claim_params(worker_id, agents, limit, limited_limit)
            )
    finished = [
        FinishResult(r["task_id"], r["attempt"], r["applied"]) for r in await finish_cur.fetchall()
    ]
    claimed = [_claimed(r) for r in (await claim_cur.fetchall() if claim_cur else ())]
    return finished, claimed


async def claim_alone(
    conn: Connection,
    *,
    worker_id: str,
    agents: Sequence[str],
    limit: int,
    limited_limit: int | None = None,
) -> list[ClaimedTask]:
    """The claim as one statement, conveyor_claim() (conveyor/sql/functions/claim.sql):
    the claim of finish_and_claim's transaction, its settings and plan its own.

    In autocommit the claim is its own transaction, and that commits asynchronously (no
    wait for the WAL flush; claim.sql says what a crash can then undo, and the claim token
    what fences it). In a caller's transaction, the caller's commit is left as it is."""
    params = {**_claim_params(worker_id, agents, limit, limited_limit), "limit": limit}
    alone = conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
    params["commit_async"] = alone
    if alone:
        cur = await conn.execute(Q.tasks_claim_alone, params)  # its own transaction
    else:  # a caller's transaction, or a connection that would leave one open
        async with conn.transaction():
            cur = await conn.execute(Q.tasks_claim_alone, params)
    return [_claimed(r) for r in await cur.fetchall()]


def _claim_params(
    worker_id: str, agents: Sequence[str], limit: int, limited_limit: int | None
) -> dict[str, Any]:
    """The parameters both claims take (the busy claim has its limit in its text)."""
    return {
        "worker_id": worker_id,
        "agents": sorted(agents),  # the order agent rows are locked in
        "limited_limit": limit if limited_limit is None else limited_limit,
    }


@functools.cache
def claim_statement(limit: int) -> sql.Composed:
    """The claim with `limit` written into its text as a number, not sent as a parameter:
    the generic plan that a prepared claim runs from is then made knowing how many rows
    `picked` holds (queue.sql, planner_index_only and tasks_claim)."""
    if limit < 1:
        raise ValueError(f"a claim's limit is at least 1, not {limit}")
    template = sql.SQL(Q.tasks_claim.replace("%(limit)s", "{limit}"))
    return template.format(limit=sql.Literal(limit))


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
    for name in ("error", "model", "trace_id", "run_id"):
        value = getattr(outcome, name)
        if value is not None and "\x00" in value:
            changes[name] = value.replace("\x00", "\\x00")
    result = outcome.result
    if result is not None and (
        "\x00" in result or ("\\u0000" in result and _JSON_NUL.search(result))
    ):
        changes.update(outcome="failed", result=None, retry_delay=None, error=UNSTORABLE_RESULT)
    return replace(outcome, **changes) if changes else outcome


def _outcome_arrays(outcomes: Sequence[Outcome]) -> dict[str, str]:
    """The finish's parameters: each of _arrays' columns as an array literal (literals.py
    says why), which the statement casts to its type."""
    arrays = _arrays(outcomes)
    if not OUTCOMES.issuperset(arrays["outcomes"]):  # a bug of the caller, said clearly
        unknown = sorted(set(map(str, arrays["outcomes"])) - OUTCOMES)
        raise ValueError(f"unknown outcome {unknown}; an outcome is one of {sorted(OUTCOMES)}")
    if _may_hold_nul(arrays):  # rare: only then is each outcome looked at
        arrays = _arrays([storable(o) for o in outcomes])
    return {
        name: text_array(values) if name in _TEXT_COLUMNS else number_array(values)
        for name, values in arrays.items()
    }


#: The columns of _arrays that hold text (the others hold numbers).
_TEXT_COLUMNS = frozenset(
    ("outcomes", "results", "errors", "models", "trace_ids", "run_ids", "claim_tokens")
)


def _may_hold_nul(arrays: dict[str, list[Any]]) -> bool:
    """Whether any text of the batch may hold what storable() changes: one scan in C of
    each column joined, instead of a check per outcome on the hot path (a false alarm
    only costs the exact check)."""
    text = "".join(
        filter(None, arrays["errors"] + arrays["models"] + arrays["trace_ids"] + arrays["run_ids"])
    )
    results = "".join(filter(None, arrays["results"]))
    return "\x00" in text or "\x00" in results or "\\u0000" in results


def _arrays(outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
    return {
        "task_ids": [o.task_id for o in outcomes],
        "attempts": [o.attempt for o in outcomes],
        # str(): an AttemptOutcome as its value, whatever psycopg would make of an Enum.
        "outcomes": [str(o.outcome) for o in outcomes],
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
        "run_ids": [o.run_id for o in outcomes],
        "since_last_call": [o.since_last_call for o in outcomes],
        "claim_tokens": [o.claim_token for o in outcomes],
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
        claim_token=str(r["claim_token"]),
    )


async def renew_leases(conn: Connection, held: Mapping[int, Claim]) -> set[int]:
    """Extend the leases of {task_id: claim}; return the ids still held."""
    if not held:
        return set()
    claims = list(held.values())
    cur = await conn.execute(
        Q.tasks_renew_leases,
        {
            "task_ids": list(held),
            "attempts": [c.attempt for c in claims],
            "claim_tokens": [c.token for c in claims],
        },
    )
    return {r["id"] for r in await cur.fetchall()}


async def sweep(
    conn: Connection,
    *,
    limit: int = 500,
    orphans_of: str | None = None,
    keep: Iterable[str] = (),
) -> list[tuple[int, TaskStatus]]:
    """Take back tasks with an expired lease (and the orphans of worker `orphans_of`: the
    tasks it holds by a claim whose token is not in `keep`); one batch."""
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
