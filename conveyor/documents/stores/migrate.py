"""`conveyor documents migrate --to URL`: every stored document copied to another store,
verified by its sha256, and switched to it, one document at a time.

For each document not yet in the target (in id order), the bytes are read from the
store its row names (or CONVEYOR_HOME/documents for rows from before stores had names)
into a local temp file and checked against the row's size and sha256; written to the
target; read back from there and checked again; then, in one transaction with the row
locked, the row is switched to the target (PostgreSQL: the chunks are written, and read
back, in that same transaction). Readers follow the row, so workers keep working
throughout. Stopped at any point, running it again carries on where it was: switched
documents are skipped, a half-copied one is copied again (the target's names are
content addresses, so nothing is duplicated).

The source keeps its copy unless `remove_source` is given; a document whose bytes are
missing or damaged at the source is reported and left where it is.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conveyor.db.pool import Database
from conveyor.documents.stores import Store, legacy_folder, open_store
from conveyor.documents.stores.base import CHUNK_BYTES, DocumentMissing
from conveyor.documents.stores.folder import FolderStore
from conveyor.documents.stores.postgres import PostgresStore
from conveyor.settings import Settings
from conveyor.sql import documents as Q

BATCH = 100


@dataclass
class Migration:
    target: str
    moved: int = 0
    already: int = 0  # in the target before this run
    failed: list[str] = field(default_factory=list)  # "sha256: why", left where they are


async def migrate_documents(
    db: Database,
    settings: Settings,
    target_url: str,
    *,
    remove_source: bool = False,
    progress: Callable[[Migration], None] | None = None,
) -> Migration:
    target = open_store(target_url)
    await target.check(db)  # before the first copy: a target that cannot be written stops it
    result = Migration(target.url)
    async with db.connection() as conn:
        cur = await conn.execute(Q.documents_in_store, {"store": target.url})
        row = await cur.fetchone()
        result.already = row["n"] if row else 0
    spool = settings.home / "documents" / "tmp"
    await asyncio.to_thread(spool.mkdir, parents=True, exist_ok=True)
    after = 0
    while True:
        async with db.connection() as conn:
            cur = await conn.execute(
                Q.documents_to_move, {"target": target.url, "after": after, "limit": BATCH}
            )
            rows = await cur.fetchall()
        if not rows:
            return result
        for row in rows:
            after = row["id"]
            try:
                await _move(db, settings, target, row, spool, remove_source)
                result.moved += 1
            except DocumentMissing as exc:
                result.failed.append(f"{row['sha256']}: {exc}")
            if progress is not None:
                progress(result)


async def _move(
    db: Database,
    settings: Settings,
    target: Store,
    row: dict[str, object],
    spool: Path,
    remove_source: bool,
) -> None:
    sha256, size, document_id = str(row["sha256"]), int(str(row["size_bytes"])), int(str(row["id"]))
    source_url = row["store"]
    source = (
        open_store(str(source_url))
        if source_url is not None
        else FolderStore(legacy_folder(settings))
    )
    with tempfile.TemporaryDirectory(dir=spool, prefix="migrate-") as folder:
        copy = Path(folder) / "copy"
        await source.fetch(db, sha256, document_id, copy)
        await _verify(copy, size, sha256, f"at the source {source.url}")
        await target.publish(copy, sha256)
        if not isinstance(target, PostgresStore):
            back = Path(folder) / "back"
            await target.fetch(db, sha256, document_id, back)
            await _verify(back, size, sha256, f"read back from {target.url}")
        async with db.connection() as conn, conn.transaction():
            cur = await conn.execute(Q.documents_lock, {"id": document_id})
            if await cur.fetchone() is None:
                return  # pruned meanwhile: nothing to move
            await target.settle(conn, copy, sha256, document_id)
            if isinstance(target, PostgresStore):
                written = await target.digest(conn, document_id)
                if written != (size, sha256):
                    raise DocumentMissing(f"the copy in PostgreSQL reads back as {written}")
            cur = await conn.execute(
                Q.documents_move, {"id": document_id, "target": target.url, "source": source_url}
            )
            switched = await cur.fetchone() is not None
            if switched and remove_source and source.url != target.url:
                await source.delete(conn, sha256, document_id)


async def _verify(path: Path, size: int, sha256: str, where: str) -> None:
    def measure() -> tuple[int, str]:
        digest = hashlib.sha256()
        total = 0
        with path.open("rb") as file:
            while data := file.read(CHUNK_BYTES):
                digest.update(data)
                total += len(data)
        return total, digest.hexdigest()

    got_size, got = await asyncio.to_thread(measure)
    if (got_size, got) != (size, sha256):
        raise DocumentMissing(
            f"{where}: {got_size} bytes with sha256 {got[:12]}..., expected {size} bytes "
            f"with {sha256[:12]}...; left where it is"
        )
