"""A worker opens a document by its sha256, from the store its row names.

The PDF and OCR readers take a path, so a document comes out as a local file: a folder
store's own file, or a copy fetched from PostgreSQL or an object store into this
machine's cache (CONVEYOR_HOME/cache/documents, content-addressed like a folder store).
A copy is fetched to a temp file, checked against its size and sha256, and only then
renamed into the cache: a reader never opens part of a document, and one that was
damaged in the store is refused for what it is. The cache keeps the most recently used
copies up to CACHE_BYTES (a retried attempt, or another agent on the same document,
fetches nothing).

What it raises: DocumentMissing when the store answers and the document is not there,
or not whole (retrying reads the same nothing); StoreUnavailable or DatabaseUnavailable
when it cannot answer (worth a retry).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
from pathlib import Path

from conveyor.db.pool import Database
from conveyor.documents.storage import DocumentStore, fsync_dir
from conveyor.documents.stores import legacy_folder, open_store
from conveyor.documents.stores.base import CHUNK_BYTES, DocumentMissing
from conveyor.settings import Settings
from conveyor.sql import documents as Q

CACHE_BYTES = 2 << 30
IN_USE_SECONDS = 3600.0  # a copy used this recently may be open by an attempt: kept
_swept: set[Path] = set()


async def document_file(db: Database, settings: Settings, sha256: str) -> Path:
    """A local file with the bytes of the document `sha256` (64 lowercase hex digits)."""
    async with db.connection() as conn:
        cur = await conn.execute(Q.documents_find, {"sha256": sha256})
        row = await cur.fetchone()
    if row is None or row["store"] is None:
        # Stored before stores had names (or put there by hand): the folder under
        # CONVEYOR_HOME, which is only there on the machine that received it.
        path = DocumentStore(legacy_folder(settings)).path_of(sha256)
        if await asyncio.to_thread(path.is_file):
            return path
        raise DocumentMissing(
            f"document {sha256[:12]}... is not in the document store at "
            f"{legacy_folder(settings)} (was it stored under another CONVEYOR_HOME?)"
        )
    store = open_store(row["store"])
    local = store.local_path(sha256)
    if local is not None:
        if await asyncio.to_thread(local.is_file):
            return local
        raise DocumentMissing(f"document {sha256[:12]}... is not in the document store {store.url}")
    cache = DocumentStore(settings.home / "cache" / "documents")
    cached = cache.path_of(sha256)
    if await asyncio.to_thread(_touch, cached):
        return cached
    if cache.root not in _swept:  # once per process: fetches that died with theirs
        _swept.add(cache.root)
        await asyncio.to_thread(cache.remove_stale_temp)
    await asyncio.to_thread(cache.temp.mkdir, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=cache.temp, prefix="fetch-")
    os.close(fd)
    temp = Path(name)
    try:
        await store.fetch(db, sha256, row["id"], temp)
        size, digest = await asyncio.to_thread(_measure, temp)
        if size != row["size_bytes"] or digest != sha256:
            raise DocumentMissing(
                f"document {sha256[:12]}... in {store.url} is damaged: {size} bytes with "
                f"sha256 {digest[:12]}..., expected {row['size_bytes']} bytes"
            )
        await asyncio.to_thread(_install, temp, cached)
    finally:
        await asyncio.to_thread(temp.unlink, missing_ok=True)
    await asyncio.to_thread(_trim, cache.root, CACHE_BYTES)
    return cached


def _touch(path: Path) -> bool:
    """Whether the cache holds it (marking it recently used)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


def _measure(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while data := file.read(CHUNK_BYTES):
            digest.update(data)
            size += len(data)
    return size, digest.hexdigest()


def _install(temp: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temp, final)
    fsync_dir(final.parent)


def _trim(root: Path, limit: int) -> None:
    """Delete the least recently used copies beyond `limit` bytes, except those an
    attempt may still be reading (readers open a path more than once)."""
    files = []
    for folder, _, names in os.walk(root):
        if Path(folder).name == "tmp":
            continue
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                stat = os.stat(os.path.join(folder, name))
                files.append((stat.st_mtime, stat.st_size, os.path.join(folder, name)))
    total = sum(size for _, size, _ in files)
    recent = time.time() - IN_USE_SECONDS
    for used, size, path in sorted(files):
        if total <= limit or used > recent:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        total -= size
