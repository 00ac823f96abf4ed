"""An operator's side of tasks: read, list, cancel, retry, prune."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTransition, TaskNotFound
from conveyor.queue import children
from conveyor.queue.records import AttemptRecord, TaskRecord
from conveyor.sql import queue as Q
from conveyor.states import AttemptStatus, TaskStatus


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
    family = await children.summary(conn, task_id) if with_attempts else None
    return TaskRecord(
        **{**row, "status": TaskStatus(row["status"])}, attempt_history=history, children=family
    )


def _attempt(row: DictRow) -> AttemptRecord:
    values = dict(row)
    values["status"] = AttemptStatus(values["status"])
    for money in ("llm_cost_usd", "compute_cost_usd"):
        if values[money] is not None:
            values[money] = float(values[money])
    return AttemptRecord(**values)


async def cancel(conn: Connection, task_id: int) -> TaskRecord:
    """Cancel an enqueued, running or waiting task, and its unfinished descendants (child
    tasks) with it. Cancelling a finished task changes nothing and raises
    InvalidTransition unless it is already cancelled."""
    task_id = _task_id(task_id)
    changed = task_id in await children.cancel_tree(conn, task_id)
    task = await get_task(conn, task_id)
    if not changed and task.status != TaskStatus.CANCELLED:
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
    top_level: bool = False,
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
            "top_level": top_level,
        },
    )
    return await cur.fetchall()
