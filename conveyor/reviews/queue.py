"""The review queue: the backlog, one task's review, and a reviewer's decision.

    backlog(conn)                       pending reviews by agent and tenant
    pending(conn, agent=, tenant=, ...) a page of the backlog, oldest first (keyset)
    get(conn, task_id)                  a review with its task's result and its versions
    decide(conn, task_id, ...)          accept, or correct fields: one transaction

A decision names the version it was based on. It is written by one guarded UPDATE
(reviews_decide in conveyor/sql/reviews.sql): a review still pending at that version. Two
reviewers of the same version race on that row; the first commits, the second finds
nothing to update and gets ReviewConflict, saying who decided and when. So a correction is
never applied twice and never silently overwritten; the machine's result is kept as
version 1 of result_versions, and the corrected one becomes tasks.result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, InvalidTransition, TaskNotFound
from conveyor.reviews import corrections as C
from conveyor.sql import Queries

Q = Queries("reviews")

Action = Literal["accept", "correct"]
MAX_PAGE = 500
NEG_INFINITY = "-infinity"


class NoReviewPending(InvalidTransition):
    """The task has no review, or its review was decided already."""


class ReviewConflict(InvalidTransition):
    """The version the reviewer read is not the current one, or another reviewer decided
    first."""


@dataclass(frozen=True)
class Cursor:
    """Where a page of the backlog ends: the last row's (created_at, task_id)."""

    created_at: datetime | str
    task_id: int

    def text(self) -> str:
        assert isinstance(self.created_at, datetime)
        return f"{self.created_at.isoformat()}~{self.task_id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        when, _, task_id = text.rpartition("~")
        try:
            at, number = datetime.fromisoformat(when), int(task_id)
        except ValueError:
            at, number = None, 0
        if at is None or at.tzinfo is None or not 0 < number < 2**63:
            raise InvalidTask(f"cursor: not a cursor this API gave: {text[:80]!r}")
        return cls(at, number)


async def backlog(conn: Connection) -> list[DictRow]:
    cur = await conn.execute(Q.reviews_backlog)
    return await cur.fetchall()


async def pending(
    conn: Connection,
    *,
    agent: str | None = None,
    tenant: str | None = None,
    after: Cursor | None = None,
    limit: int = 50,
) -> tuple[list[DictRow], Cursor | None]:
    """A page of pending reviews, oldest first, and the cursor of the next page (None:
    this was the last). `tenant=""` is the tasks without a tenant."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidTask(f"limit must be between 1 and {MAX_PAGE}")
    params: dict[str, Any] = {
        "agent": agent,
        "tenant": tenant,
        "after_at": after.created_at if after else NEG_INFINITY,
        "after_id": after.task_id if after else 0,
        "limit": limit + 1,
    }
    if agent is not None and tenant is not None:
        statement = Q.reviews_pending_agent_tenant
    elif agent is not None:
        statement = Q.reviews_pending_agent
    elif tenant is not None:
        statement = Q.reviews_pending_tenant
    else:
        statement = Q.reviews_pending
    cur = await conn.execute(statement, params)
    rows = await cur.fetchall()
    page = rows[:limit]
    more = len(rows) > limit
    last = page[-1] if page else None
    return page, Cursor(last["created_at"], last["task_id"]) if more and last else None


async def get(conn: Connection, task_id: int) -> tuple[DictRow, list[DictRow]]:
    """A task's review (with the task's result and payload) and its result's versions."""
    cur = await conn.execute(Q.reviews_get, {"task_id": task_id})
    review = await cur.fetchone()
    if review is None:
        await _no_review(conn, task_id)
    assert review is not None
    cur = await conn.execute(Q.result_versions_of, {"task_id": task_id})
    return review, await cur.fetchall()


async def _no_review(conn: Connection, task_id: int) -> None:
    cur = await conn.execute(Q.reviews_task_result, {"task_id": task_id})
    task = await cur.fetchone()
    if task is None:
        raise TaskNotFound(task_id)
    if task["status"] != "completed":
        raise NoReviewPending(
            f"task {task_id} is {task['status']}: only a completed task's result is reviewed"
        )
    raise NoReviewPending(
        f"task {task_id} has no review: its result was not below its agent's threshold"
    )


@dataclass(frozen=True)
class Decision:
    task_id: int
    agent: str
    tenant: str
    status: str  # accepted | corrected
    version: int  # the result's version now
    reviewed_by: str
    reviewed_at: datetime
    changes: dict[str, dict[str, Any]]


async def _decide(
    conn: Connection,
    task_id: int,
    *,
    action: Action,
    version: int,
    who: str,
    corrections: dict[str, Any] | None,
) -> Decision:
    if action not in ("accept", "correct"):
        raise InvalidTask(f"action must be 'accept' or 'correct', not {action!r}")
    if action == "accept" and corrections:
        raise InvalidTask("an accepted result has no corrections: use action 'correct'")
    review, _ = await get(conn, task_id)
    _check_pending(review, version)
    result = review["result"]
    fields = C.reviewed_fields(result)
    changes: dict[str, dict[str, Any]] = {}
    new_result: dict[str, Any] | None = None
    if action == "correct":
        corrected = C.apply(result, corrections or {})
        changes, new_result = corrected.changes, corrected.result
    async with conn.transaction():
        cur = await conn.execute(
            Q.reviews_decide,
            {
                "task_id": task_id,
                "version": version,
                "status": "corrected" if new_result is not None else "accepted",
                "new_versions": 1 if new_result is not None else 0,
                "who": who,
                "fields_corrected": len(changes),
            },
        )
        row = await cur.fetchone()
        if row is None:
            # Decided by someone else since it was read: say by whom (read after the
            # rollback below, which the exception triggers).
            raise _Lost()
        if new_result is not None:
            await conn.execute(Q.result_versions_keep_machine, {"task_id": task_id})
            await conn.execute(
                Q.result_versions_add,
                {
                    "task_id": task_id,
                    "version": row["version"],
                    "result": Jsonb(new_result),
                    "who": who,
                    "action": "corrected",
                    "corrections": Jsonb(changes),
                },
            )
            await conn.execute(
                Q.tasks_set_reviewed_result, {"task_id": task_id, "result": Jsonb(new_result)}
            )
        names = sorted(set(fields) | set(changes))
        await conn.execute(
            Q.review_fields_add,
            {
                "task_id": task_id,
                "agent": row["agent"],
                "fields": names,
                "confidences": [fields.get(n) for n in names],
                "corrected": [n in changes for n in names],
            },
        )
        event = {
            "event": "review",
            "id": task_id,
            "agent": row["agent"],
            "tenant": row["tenant"],
            "review": row["status"],
            "version": row["version"],
            "by": who,
        }
        await conn.execute(Q.reviews_notify, {"payload": json.dumps(event)})
    return Decision(
        task_id=task_id,
        agent=row["agent"],
        tenant=row["tenant"],
        status=row["status"],
        version=row["version"],
        reviewed_by=row["reviewed_by"],
        reviewed_at=row["reviewed_at"],
        changes=changes,
    )


class _Lost(Exception):
    """The guarded update found no pending review of that version (raised inside the
    transaction to roll it back; decide() turns it into ReviewConflict)."""


def _check_pending(review: DictRow, version: int) -> None:
    if review["status"] != "pending":
        raise ReviewConflict(
            f"task {review['task_id']} was reviewed already: {review['status']} by "
            f"{review['reviewed_by']} at {review['reviewed_at']:%Y-%m-%d %H:%M:%S %Z} "
            f"(now version {review['version']})"
        )
    if version != review["version"]:
        raise ReviewConflict(
            f"task {review['task_id']}: you reviewed version {version}, the current one is "
            f"{review['version']}; reload it"
        )


async def decide(
    conn: Connection,
    task_id: int,
    *,
    action: Action,
    version: int,
    who: str,
    corrections: dict[str, Any] | None = None,
) -> Decision:
    """Accept the result, or correct fields of it, as `who`, based on `version`. Raises
    NoReviewPending, ReviewConflict (stale version, or another reviewer decided first),
    InvalidCorrection; nothing is written then."""
    try:
        return await _decide(
            conn, task_id, action=action, version=version, who=who, corrections=corrections
        )
    except _Lost:
        review, _ = await get(conn, task_id)
        _check_pending(review, version)
        raise ReviewConflict(f"task {task_id}: the review changed while it was decided") from None
