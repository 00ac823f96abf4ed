"""Enqueue: a batch of tasks in one statement, or by COPY when it is large and unkeyed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, UnknownAgent
from conveyor.queue.agents import check_agents
from conveyor.queue.records import NewTask
from conveyor.queue.validation import ENCODER, MAX_PAYLOAD_BYTES, NUL, json_text, validate
from conveyor.sql import queue as Q

COPY_THRESHOLD = 200  # unkeyed batches this large go by COPY
COPY_CHUNK = 1000  # rows prepared and sent at a time, while the server inserts the last


def _batch_json(rows: list[dict[str, Any]]) -> str:
    """The whole batch as one JSON array: one encoder call in C instead of one per task,
    and one parameter for PostgreSQL to parse instead of nine long arrays."""
    rows = [
        r if r["run_after"] is None else {**r, "run_after": r["run_after"].isoformat()}
        for r in rows
    ]
    try:
        text = ENCODER.encode(rows)
    except (TypeError, ValueError):
        text = ""
    if not text or len(text) > MAX_PAYLOAD_BYTES or NUL in text:
        # Slow path, only for batches with a problem or large payloads: find the task.
        for n, row in enumerate(rows):
            what = "the payload" if len(rows) == 1 else f"the payload of task {n}"
            payload = json_text(row["payload"], what)
            if len(payload) > MAX_PAYLOAD_BYTES:
                raise InvalidTask(
                    f"{what} is {len(payload)} bytes; the limit is "
                    f"{MAX_PAYLOAD_BYTES} (store large inputs as documents and reference them)"
                )
        text = text or json_text(rows, "a task")
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
    rows = [validate(t) for t in tasks]
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
            validate(task)  # raises the clear error for the task that has it
    async with conn.transaction():
        cur = await conn.execute(Q.tasks_reserve_ids, {"n": len(tasks), "agents": sorted(agents)})
        reserved = await cur.fetchone()
        assert reserved is not None
        defaults = reserved["max_attempts"] or {}
        missing = sorted(agents - defaults.keys())
        if missing:
            for task in tasks:
                validate(task)  # a malformed name is a bad task before an unknown agent
            raise UnknownAgent(missing)
        ids, now = reserved["ids"], reserved["now"]
        async with conn.cursor().copy(Q.tasks_copy) as copy:
            lines = []
            for n, (task_id, task) in enumerate(zip(ids, tasks, strict=True)):
                row = validate(task)
                payload = json_text(
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
        "{}" if labels is None else json_text(labels, "labels").replace("\\", "\\\\"),
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
