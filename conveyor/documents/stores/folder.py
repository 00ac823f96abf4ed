"""A local or shared folder (`file:///…`): `aa/bb/<sha256>` under it, as before stores had
names. NFS, a mounted bucket or `/Volumes/catalog/schema/volume/…` on Databricks compute
work the same, as long as every worker mounts it at the same path.

A file arrives by a hard link (or, where the file system has none, a copy to `tmp/`
flushed to disk) and is published by a rename: a reader never sees part of one."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import tempfile
import time
from pathlib import Path

from conveyor.db.pool import Connection, Database
from conveyor.documents.storage import DocumentStore, fsync_dir, storage_error
from conveyor.documents.stores.base import CHUNK_BYTES, DocumentMissing, Store, StoreUnavailable


class FolderStore(Store):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"file://{root}"
        self.files = DocumentStore(root)

    def local_path(self, sha256: str) -> Path:
        return self.files.path_of(sha256)

    async def check(self, db: Database | None) -> None:
        await asyncio.to_thread(self._check)

    def _check(self) -> None:
        try:
            self.files.temp.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.files.temp, prefix="check-"):
                pass
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot write to the documents folder {self.root} "
                f"({exc.strerror or type(exc).__name__}): create it and make it writable by "
                "the user Conveyor runs as, or correct CONVEYOR_DOCUMENTS_URL"
            ) from exc

    async def publish(self, path: Path, sha256: str) -> None:
        await asyncio.to_thread(self._publish, path, sha256)

    async def settle(self, conn: Connection, path: Path, sha256: str, document_id: int) -> None:
        await asyncio.to_thread(self._publish, path, sha256)  # a no-op unless pruned meanwhile

    async def fetch(self, db: Database, sha256: str, document_id: int, out: Path) -> None:
        await asyncio.to_thread(self._copy_out, sha256, out)

    async def delete(self, conn: Connection, sha256: str, document_id: int) -> None:
        await asyncio.to_thread(self.local_path(sha256).unlink, missing_ok=True)

    async def sweep_temp(self, before: float) -> int:
        # tmp/ holds the spool of uploads in progress too: a live one writes all the time.
        return await asyncio.to_thread(self.files.remove_stale_temp, time.time() - before)

    def _publish(self, path: Path, sha256: str) -> None:
        final = self.local_path(sha256)
        try:
            if final.exists():
                return  # only complete files are ever given that name: the same bytes
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, final)
            except FileExistsError:
                return  # a concurrent upload of the same bytes got there first
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                self._copy_in(path, final)
            fsync_dir(final.parent)
        except OSError as exc:
            raise storage_error(exc, self.root) from exc

    def _copy_in(self, path: Path, final: Path) -> None:
        self.files.temp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.files.temp, prefix="copy-")
        try:
            with open(fd, "wb") as out, path.open("rb") as source:
                shutil.copyfileobj(source, out, CHUNK_BYTES)
                out.flush()
                os.fsync(out.fileno())
            os.replace(name, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)

    def _copy_out(self, sha256: str, out: Path) -> None:
        source = self.local_path(sha256)
        try:
            with source.open("rb") as file, out.open("wb") as target:
                shutil.copyfileobj(file, target, CHUNK_BYTES)
        except FileNotFoundError:
            raise DocumentMissing(
                f"document {sha256[:12]}... is not in the folder {self.root}"
            ) from None
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot read document {sha256[:12]}... from the folder {self.root}: "
                f"{exc.strerror or exc}"
            ) from exc
