"""Object stores through fsspec: `s3://` (s3fs), `gs://` (gcsfs), `abfs://`/`az://`
(adlfs) — one code path for all three, the one the S3 tests run against a real S3 API.

Keys are `<prefix>/aa/bb/<sha256>`. A file is written to `<prefix>/tmp/upload-<random>`
in parts (a few MiB held at a time, never the whole file) and published by its final
name only once complete (a copy to the final key, then the temp key is deleted): a
reader never sees part of a document, and a failed upload leaves at most a temp key
(which a bucket lifecycle rule on `tmp/` can expire).

Credentials, regions and endpoints come from each SDK's usual chain (environment,
config files, instance roles, `AWS_ENDPOINT_URL` for an S3-compatible server); the URL
names only the bucket and prefix. fsspec's caches of instances and listings are off:
every worker must see what another just published.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from conveyor.db.pool import Connection, Database
from conveyor.document_urls import StoreUrl
from conveyor.documents.stores.base import CHUNK_BYTES, DocumentMissing, Store, StoreUnavailable

PART_BYTES = 8 << 20  # what the SDK buffers before sending a part (S3's minimum is 5 MiB)
# adlfs and gcsfs hand each part to aiohttp as bytes, which warns of a body over 1 MiB
# ("might lock the event loop"): their parts are 1 MiB (Azure takes blocks of any size,
# GCS multiples of 256 KiB).
_PART_BYTES = dict.fromkeys(("abfs", "abfss", "az", "gs", "gcs"), CHUNK_BYTES)

# Bounds on every request, so that a store that stopped answering fails the upload or
# the attempt instead of hanging it.
_OPTIONS: dict[str, dict[str, Any]] = {
    "s3": {
        "config_kwargs": {
            "connect_timeout": 10,
            "read_timeout": 60,
            "retries": {"max_attempts": 3, "mode": "standard"},
        },
    },
    # adlfs: seconds to connect and between bytes read (the SDK's own default is minutes).
    **{azure: {"connection_timeout": 10, "read_timeout": 60} for azure in ("abfs", "abfss", "az")},
}


class ObjectStore(Store):
    def __init__(self, where: StoreUrl) -> None:
        import fsspec  # type: ignore[import-untyped]

        self.url = where.url
        self.prefix = where.path
        options = {"skip_instance_cache": True, "use_listings_cache": False}
        options |= _OPTIONS.get(where.scheme, {})
        self.fs = fsspec.filesystem(where.scheme, **options)
        self.part_bytes = _PART_BYTES.get(where.scheme, PART_BYTES)

    def key(self, sha256: str) -> str:
        return f"{self.prefix}/{sha256[:2]}/{sha256[2:4]}/{sha256}"

    async def check(self, db: Database | None) -> None:
        await asyncio.to_thread(self._check)

    async def publish(self, path: Path, sha256: str) -> None:
        await asyncio.to_thread(self._publish, path, sha256)

    async def settle(self, conn: Connection, path: Path, sha256: str, document_id: int) -> None:
        await asyncio.to_thread(self._publish, path, sha256)  # a no-op unless pruned meanwhile

    async def fetch(self, db: Database, sha256: str, document_id: int, out: Path) -> None:
        await asyncio.to_thread(self._fetch, sha256, out)

    async def delete(self, conn: Connection, sha256: str, document_id: int) -> None:
        await asyncio.to_thread(self._delete, sha256)

    async def sweep_temp(self, before: float) -> int:
        return await asyncio.to_thread(self._sweep_temp, before)

    # -----------------------------------------------------------------------------------

    def _check(self) -> None:
        probe = f"{self.prefix}/tmp/check-{uuid.uuid4().hex}"
        with self._errors("cannot write to"):
            self.fs.pipe_file(probe, b"conveyor")
            self.fs.rm_file(probe)

    def _sweep_temp(self, before: float) -> int:
        """Temp keys are written whole (a part at a time, visible once complete) and moved
        at once, so one last written before `before` (a day ago) is an upload's that died
        between the two. Parts of a multipart upload that never completed are not keys:
        the bucket's own rule expires those (S3: AbortIncompleteMultipartUpload)."""
        try:
            with self._errors("cannot list the temp keys of", reading=True):
                entries = self.fs.ls(f"{self.prefix}/tmp", detail=True)
        except _Missing:
            return 0  # no upload has died here yet
        removed = 0
        for entry in entries:
            written = _written(entry)
            if entry.get("type") != "file" or written is None or written >= before:
                continue
            with contextlib.suppress(_Missing), self._errors("cannot delete from", reading=True):
                self.fs.rm_file(entry["name"])
                removed += 1
        return removed

    def _publish(self, path: Path, sha256: str) -> None:
        final = self.key(sha256)
        with self._errors("cannot store a document in"):
            if self.fs.exists(final):
                return  # only complete files are ever given that name: the same bytes
            temp = f"{self.prefix}/tmp/upload-{uuid.uuid4().hex}"
            try:
                with (
                    path.open("rb") as source,
                    self.fs.open(temp, "wb", block_size=self.part_bytes) as target,
                ):
                    while data := source.read(CHUNK_BYTES):
                        target.write(data)
                self.fs.mv(temp, final)
            finally:
                with contextlib.suppress(FileNotFoundError, OSError):
                    if self.fs.exists(temp):
                        self.fs.rm_file(temp)

    def _fetch(self, sha256: str, out: Path) -> None:
        try:
            with (
                self._errors("cannot read a document from", reading=True),
                self.fs.open(self.key(sha256), "rb", block_size=CHUNK_BYTES) as source,
                out.open("wb") as target,
            ):
                while data := source.read(CHUNK_BYTES):
                    target.write(data)
        except _Missing:
            raise DocumentMissing(f"document {sha256[:12]}... is not in {self.url}") from None

    def _delete(self, sha256: str) -> None:
        with contextlib.suppress(_Missing), self._errors("cannot delete from", reading=True):
            self.fs.rm_file(self.key(sha256))

    @contextlib.contextmanager
    def _errors(self, doing: str, *, reading: bool = False) -> Any:
        """What the SDK raised, as StoreUnavailable saying which store and why. A missing
        key is _Missing when `reading` (the document is gone); when writing, it means
        the bucket or container is (StoreUnavailable)."""
        try:
            yield
        except FileNotFoundError as exc:
            if reading:
                raise _Missing(str(exc)) from exc
            raise StoreUnavailable(
                f"{doing} the document store {self.url}: it does not exist ({exc}); "
                "create the bucket, or correct CONVEYOR_DOCUMENTS_URL"
            ) from exc
        except (StoreUnavailable, DocumentMissing, _Missing):
            raise
        except Exception as exc:  # the SDKs raise many kinds; all mean the same here
            # The first line: Azure's messages go on with a request id and the XML answer.
            reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
            raise StoreUnavailable(f"{doing} the document store {self.url}: {reason}") from exc


class _Missing(Exception):
    pass


def _written(entry: dict[str, Any]) -> float | None:
    """When a listed key was last written, as each SDK names it (None: not known, kept)."""
    for name in ("LastModified", "last_modified", "updated", "mtime"):
        value = entry.get(name)
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, int | float):
            return float(value)
    return None
