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

Then the temp files (a folder's `tmp/`) and temp keys (an object store's `<prefix>/tmp/`)
of uploads that died mid-write are deleted once a day old: a live upload is minutes old.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from conveyor.db.pool import Database
from conveyor.documents.storage import STALE_TEMP_SECONDS
from conveyor.documents.stores import Store, open_store
from conveyor.log import fields
from conveyor.sql import documents as Q

log = logging.getLogger(__name__)

BATCH = 100


async def prune_documents(
    db: Database, *, batch: int = BATCH, now: float | None = None, stores: Iterable[Store] = ()
) -> int:
    """Delete every document no task refers to; return how many. Then sweep the temp files
    or keys of uploads that died mid-write, STALE_TEMP_SECONDS old at `now`, from every
    store a document is in and from `stores` (a process's own)."""
    total = await _prune(db, batch)
    before = (time.time() if now is None else now) - STALE_TEMP_SECONDS
    async with db.connection() as conn:
        cur = await conn.execute(Q.documents_stores)
        named = [open_store(row["store"]) for row in await cur.fetchall()]
    for store in dict.fromkeys([*named, *stores]):  # open_store gives one per URL
        swept = await store.sweep_temp(before)
        if swept:
            log.info("swept temp files of dead uploads", extra=fields(store=store.url, files=swept))
    return total


async def _prune(db: Database, batch: int) -> int:
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
