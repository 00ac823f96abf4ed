"""Child tasks: what an agent returns to fan out (`Spawn` of `Child`), what a parent reads
back (`ChildResult`), and the queue's statements about families (sql/children.sql).

The spawn itself is written by conveyor_end_attempts() with the outcome that ends the
parent's attempt (conveyor/sql/functions/attempts.sql); the fan-in by the trigger of
conveyor/sql/functions/children.sql. docs/children.md explains the design.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, PermanentFailure
from conveyor.queue.records import ChildrenSummary, ChildResult
from conveyor.queue.validation import (
    INT32_MAX,
    MAX_PAYLOAD_BYTES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    check_int,
    check_labels,
    check_text,
    json_text,
)
from conveyor.sql import Queries
from conveyor.states import TaskStatus

Q = Queries("children")
log = logging.getLogger(__name__)

#: How deep a tree may grow: a task nobody spawned is at depth 0 (tasks.depth's check).
MAX_DEPTH = 8
#: Children one attempt may spawn (a 200-page document in 1-page chunks is 200).
MAX_CHILDREN = 10_000
#: Times a cancel starts over after PostgreSQL broke a deadlock by aborting it
#: (cancel_tree says when one can happen): the other side has gone on by then.
CANCEL_DEADLOCK_RETRIES = 3

OnFailure = Literal["fail", "collect"]


class InvalidSpawn(InvalidTask, PermanentFailure):
    """A Spawn that cannot be written: the attempt fails for good (the same code would
    spawn the same again), and no child is inserted."""


@dataclass(frozen=True, slots=True)
class Child:
    """One child to spawn. `key` names it within its parent (idempotent per parent and
    key); priority defaults to the parent's, tenant is the parent's, labels are the
    parent's updated with these."""

    agent: str
    payload: Any = None
    key: str = ""
    priority: int | None = None
    estimated_tokens: int | None = None
    max_attempts: int | None = None
    labels: dict[str, str] | None = None


@dataclass(frozen=True)
class Spawn:
    """What an agent returns to end its attempt by spawning `children`; it is run again
    once they have all ended (or failed, with on_failure="fail", if one of them failed)."""

    children: Sequence[Child]
    on_failure: OnFailure = "fail"

    def __post_init__(self) -> None:
        # Checked where the agent builds it, so that the traceback points at its line.
        spawn_json(self)


def spawn_json(spawn: Spawn) -> str:
    """The Spawn as the JSON the outcome carries (conveyor_end_attempts() reads it), or
    InvalidSpawn naming what is wrong."""
    if spawn.on_failure not in ("fail", "collect"):
        raise InvalidSpawn(f"on_failure must be 'fail' or 'collect', not {spawn.on_failure!r}")
    children = spawn.children
    if isinstance(children, str | bytes) or not isinstance(children, Sequence):
        raise InvalidSpawn("Spawn takes a list of Child")
    if not children:
        raise InvalidSpawn("Spawn needs at least one child")
    if len(children) > MAX_CHILDREN:
        raise InvalidSpawn(f"at most {MAX_CHILDREN} children per spawn, not {len(children)}")
    keys: set[str] = set()
    rows = []
    for n, child in enumerate(children):
        if not isinstance(child, Child):
            raise InvalidSpawn(f"child {n} is a {type(child).__name__}, not a Child")
        try:
            rows.append(_child_row(child))
        except InvalidTask as exc:
            raise InvalidSpawn(f"child {n} ({child.key!r}): {exc}") from None
        if child.key in keys:
            raise InvalidSpawn(f"two children with the key {child.key!r}")
        keys.add(child.key)
    text = json.dumps({"on_failure": spawn.on_failure, "children": rows})
    return text


def _child_row(child: Child) -> dict[str, Any]:
    if not isinstance(child.agent, str) or not child.agent:
        raise InvalidTask(f"agent must be a non-empty string, not {child.agent!r}")
    if not isinstance(child.key, str) or not 1 <= len(child.key) <= 255:
        raise InvalidTask("key must be a string of 1 to 255 characters")
    check_text("agent", child.agent)
    check_text("key", child.key)
    if child.priority is not None:
        check_int("priority", child.priority, PRIORITY_MIN, PRIORITY_MAX)
    if child.estimated_tokens is not None:
        check_int("estimated_tokens", child.estimated_tokens, 0, INT32_MAX)
    if child.max_attempts is not None:
        check_int("max_attempts", child.max_attempts, 1, 1000)
    check_labels(child.labels)
    payload = json_text(child.payload if child.payload is not None else {}, "payload")
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise InvalidTask(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
    return {
        "agent": child.agent,
        "key": child.key,
        "payload": json.loads(payload),
        "priority": child.priority,
        "estimated_tokens": child.estimated_tokens,
        "max_attempts": child.max_attempts,
        "labels": child.labels,
    }


async def check_spawn(conn: Connection, task_id: int, spawn: Spawn) -> None:
    """What only the database knows: the children's agents are registered, the tree stays
    within MAX_DEPTH, and no child repeats an ancestor (same agent and key). InvalidSpawn
    otherwise. (Whether the attempt still holds its task is the outcome's fence.)"""
    agents = [c.agent for c in spawn.children]
    cur = await conn.execute(
        Q.children_check,
        {"id": task_id, "agents": agents, "keys": [c.key for c in spawn.children]},
    )
    row = await cur.fetchone()
    if row is None:
        raise InvalidSpawn(f"no task with id {task_id}")
    if row["unknown"]:
        listed = ", ".join(repr(a) for a in row["unknown"])
        raise InvalidSpawn(f"children of unknown agent {listed}: no App declares it")
    if row["depth"] + 1 > MAX_DEPTH:
        raise InvalidSpawn(
            f"task {task_id} is at depth {row['depth']}: its children would be deeper "
            f"than {MAX_DEPTH} levels"
        )
    if row["cycles"]:
        agent, key = row["cycles"][0]
        raise InvalidSpawn(
            f"a cycle: the child {key!r} of agent {agent!r} repeats an ancestor of task {task_id}"
        )


async def children_of(conn: Connection, task_id: int) -> list[ChildResult]:
    """A parent's children, in the order they were first spawned."""
    cur = await conn.execute(Q.children_of_task, {"id": task_id})
    return [_child(r) for r in await cur.fetchall()]


def _child(r: DictRow) -> ChildResult:
    return ChildResult(
        id=r["id"],
        key=r["child_key"],
        agent=r["agent"],
        status=TaskStatus(r["status"]),
        result=r["result"],
        error=r["error"],
    )


async def summary(conn: Connection, task_id: int) -> ChildrenSummary | None:
    cur = await conn.execute(Q.children_summary, {"id": task_id})
    row = await cur.fetchone()
    if row is None:
        return None
    values = dict(row)
    for money in ("llm_cost_usd", "compute_cost_usd"):
        values[money] = float(values[money])
    return ChildrenSummary(**values)


async def cancel_tree(conn: Connection, task_id: int) -> set[int]:
    """Cancel a task and every unfinished descendant, in one transaction: queued and
    waiting ones at once, running ones by ending their attempts (the NOTIFY stops their
    agents). Returns the ids that this cancelled.

    The tree is walked again until a walk finds nothing left to cancel. A walk sees the
    tree as its statement's snapshot has it, and a spawn can commit while the walk waits
    for the row of the task spawning (the spawn holds it): that task is then cancelled as
    waiting, and its new children, absent from the snapshot, would stay runnable. The next
    walk, with a snapshot taken after those locks, sees them. No spawn can commit later in
    the tree: every task a walk found unfinished is locked until this commits, and once
    cancelled, what it reports is fenced off (conveyor_end_attempts). (A child that the
    first walk missed and that a worker ends before the next walk locks it waits for its
    parent's row, held here, while this waits for the child's: PostgreSQL aborts one of
    the two as a deadlock. That child would have to be claimed, run and ended within the
    cancel's few milliseconds. When the cancel is the one aborted, it starts over: its
    rollback releases the rows it held, the worker's end goes on, and the next try waits
    for it and then cancels what is left.)"""
    retries = 0
    while True:
        try:
            return await _cancel_tree_once(conn, task_id)
        except psycopg.errors.DeadlockDetected:
            if retries == CANCEL_DEADLOCK_RETRIES:
                raise
            retries += 1
            log.info("cancel of task %s was a deadlock's victim; starting it over", task_id)


async def _cancel_tree_once(conn: Connection, task_id: int) -> set[int]:
    cancelled: set[int] = set()
    async with conn.transaction():
        while True:
            cur = await conn.execute(Q.tasks_cancel_tree_waiting, {"id": task_id})
            found = {r["id"] for r in await cur.fetchall()}
            cur = await conn.execute(Q.tasks_cancel_tree_running, {"id": task_id})
            found |= {r["id"] for r in await cur.fetchall()}
            if not found:
                return cancelled
            cancelled |= found
