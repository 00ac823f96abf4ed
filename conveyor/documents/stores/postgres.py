"""Documents in the Conveyor database itself (the default): `document_chunks`, 1 MiB rows.

The chunks are inserted in the upload's transaction, after its document row and before
its task, so the three commit together or not at all: no reader sees part of a
document, and a web app killed mid-upload leaves nothing in the database (its spool
file is swept later). Every worker that can reach the database can read every document:
PostgreSQL stays the only infrastructure, on one machine or many.

Writing and reading go one chunk at a time, so neither side holds more than a MiB of a
document (results in binary: a bytea in text format would be twice its size, in hex).
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from conveyor.db.pool import Connection, Database
from conveyor.document_urls import POSTGRESQL
from conveyor.documents.stores.base import CHUNK_BYTES, DocumentMissing, Store
from conveyor.sql import documents as Q


class PostgresStore(Store):
    url = POSTGRESQL

    async def check(self, db: Database | None) -> None:
        if db is not None:  # the table comes with the migrations; this says they ran
            async with db.connection() as conn:
                await conn.execute("SELECT 1 FROM document_chunks LIMIT 0")

    async def publish(self, path: Path, sha256: str) -> None:
        """Nothing before the transaction: the bytes go in with the row (`settle`)."""

    async def settle(self, conn: Connection, path: Path, sha256: str, document_id: int) -> None:
        cur = await conn.execute(Q.chunks_present, {"document_id": document_id})
        row = await cur.fetchone()
        if row is not None and row["present"]:
            return  # the same bytes, stored by an earlier upload
        file = await asyncio.to_thread(path.open, "rb")
        try:
            seq = 0
            while data := await asyncio.to_thread(file.read, CHUNK_BYTES):
                await conn.execute(
                    Q.chunks_insert, {"document_id": document_id, "seq": seq, "data": data}
                )
                seq += 1
        finally:
            file.close()

    async def fetch(self, db: Database, sha256: str, document_id: int, out: Path) -> None:
        target = await asyncio.to_thread(out.open, "wb")
        try:
            async with db.connection() as conn, conn.transaction():
                # One snapshot for all the chunks: a prune or a migration that removes
                # them meanwhile cannot leave this reader with half a document.
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                seq = 0
                while True:
                    cur = await conn.execute(
                        Q.chunks_read, {"document_id": document_id, "seq": seq}, binary=True
                    )
                    row = await cur.fetchone()
                    if row is None:
                        break
                    await asyncio.to_thread(target.write, row["data"])
                    seq += 1
        finally:
            target.close()
        if seq == 0:
            raise DocumentMissing(f"document {sha256[:12]}... has no bytes in the database")

    async def digest(self, conn: Connection, document_id: int) -> tuple[int, str]:
        """Size and sha256 of the chunks as `conn` sees them (its own uncommitted ones
        included): a migration checks what it wrote before it commits."""
        digest = hashlib.sha256()
        size = seq = 0
        while True:
            cur = await conn.execute(
                Q.chunks_read, {"document_id": document_id, "seq": seq}, binary=True
            )
            row = await cur.fetchone()
            if row is None:
                return size, digest.hexdigest()
            digest.update(row["data"])
            size += len(row["data"])
            seq += 1

    async def delete(self, conn: Connection, sha256: str, document_id: int) -> None:
        await conn.execute(Q.chunks_delete, {"document_id": document_id})
