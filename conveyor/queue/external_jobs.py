"""What the external-job executor and the callback route read and write: the callback
key, a job's run id, an attempt as a callback finds it."""

from __future__ import annotations

from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.sql import queue as Q


async def callback_key(conn: Connection) -> str:
    """The database's key for callback secrets (created on first use)."""
    from conveyor.external import new_key

    cur = await conn.execute(Q.keys_callbacks, {"value": new_key()})
    row = await cur.fetchone()
    if row is None:  # the upsert returns its row whoever created it
        raise RuntimeError("the callback key could not be read back")
    return str(row["value"])


async def set_run_id(
    conn: Connection, attempt_id: int, run_id: str, claim_token: str | None = None
) -> None:
    """Record the job's run id on the attempt of that claim (any, with no token)."""
    await conn.execute(
        Q.attempts_set_run_id,
        {"attempt_id": attempt_id, "run_id": run_id, "claim_token": claim_token},
    )


async def attempt_for_callback(conn: Connection, attempt_id: int) -> DictRow | None:
    cur = await conn.execute(Q.attempts_for_callback, {"attempt_id": attempt_id})
    return await cur.fetchone()
