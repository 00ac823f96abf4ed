"""Pruning documents: a document no task refers to any more is deleted, bytes and row.

Tasks go first (`conveyor prune`, CONVEYOR_PRUNE_AFTER); their documents follow here, a
batch per transaction. Each batch locks its rows (SKIP LOCKED: an upload of the same
bytes recording its task holds the row and is left alone), removes the bytes from their
store, then deletes the rows (PostgreSQL's chunks go with them, ON DELETE CASCADE). The
bytes go before the rows commit: an upload that arrives meanwhile waits on the row lock,
finds the row gone, and stores its bytes afresh. A batch whose store cannot be reached
is rolled back whole and tried again at the next run.

Documents from before stores had names (store NULL, a file on one machine's disk) are
left alone: this process may not be on that machine. `conveyor documents migrate`
gives them a store first.
"""

from __future__ import annotations

from conveyor.db.pool import Database
from conveyor.documents.stores import open_store
from conveyor.sql import documents as Q

BATCH = 100


async def prune_documents(db: Database, *, batch: int = BATCH) -> int:
    """Delete every document no task refers to; return how many."""
    total = 0
    while True:
        async with db.connection() as conn, conn.transaction():
            cur = await conn.execute(Q.documents_unreferenced, {"limit": batch})
            rows = await cur.fetchall()
            for row in rows:
                await open_store(row["store"]).delete(conn, row["sha256"], row["id"])
            if rows:
                await conn.execute(Q.documents_delete, {"ids": [row["id"] for row in rows]})
        total += len(rows)
        if len(rows) < batch:
            return total
