"""Content-addressed files in a folder: the spool every upload goes through, and the
folder store (`conveyor.documents.stores.folder`) and the documents of before stores had
names (CONVEYOR_HOME/documents) are laid out by it.

A file is streamed to `tmp/` while it is counted and hashed, and its media type is sniffed
from its first bytes; once complete (and flushed to disk) it is renamed to
`aa/bb/<sha256>`. So the same bytes are stored once, a reader never sees a partial file
(a rename within one filesystem is atomic), and a refused file leaves nothing behind. The
client's file name never reaches a path: it is only recorded, in the database.

A folder that cannot take the file (full, read-only, not ours) raises StorageUnavailable
(StorageFull, StorageNotWritable), never a bare OSError, and the temp file is removed.

    store = DocumentStore(settings.home / "documents")
    stored = await store.put(chunks)              # an async iterable of bytes
    store.path_of(stored.sha256)                  # where it is

An upload for another store (`conveyor.documents.submit`) is only spooled here: once
`finish()`ed, `file()` describes the complete temp file the store takes it from.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import io
import os
import re
import tempfile
import threading
import time
from collections.abc import AsyncIterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from conveyor.documents.errors import (
    StorageFull,
    StorageNotWritable,
    StorageUnavailable,
    TooLarge,
    UnreadableDocument,
    UnsupportedMediaType,
)
from conveyor.documents.pdf import page_count
from conveyor.documents.sniff import ACCEPTED_TYPES, PDF, SNIFF_BYTES, accepted, sniff
from conveyor.settings import Settings, SettingsError

MAX_BYTES_VARIABLE = "CONVEYOR_MAX_UPLOAD_BYTES"
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
STALE_TEMP_SECONDS = 86400.0  # a temp file this old belongs to an upload that died

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def max_upload_bytes() -> int:
    """CONVEYOR_MAX_UPLOAD_BYTES: the largest file (and upload request) accepted, in bytes."""
    raw = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise SettingsError(f"{MAX_BYTES_VARIABLE}={raw!r}: expected a positive number of bytes")
    return int(raw)


@dataclass(frozen=True, slots=True)
class StoredFile:
    sha256: str
    size_bytes: int
    media_type: str
    page_count: int | None
    path: Path


class DocumentStore:
    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.temp = root / "tmp"  # same filesystem as the store, so that rename is atomic
        self.max_bytes = max_bytes

    @classmethod
    def for_settings(cls, settings: Settings) -> DocumentStore:
        return cls(settings.home / "documents", max_bytes=max_upload_bytes())

    def path_of(self, sha256: str) -> Path:
        """Where the document with this sha256 (64 lowercase hex digits) is stored."""
        if not _SHA256.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def upload(self, name: str | None = None) -> Upload:
        """A file to write piece by piece; `name` only appears in error messages."""
        return Upload(self, name)

    async def put(self, chunks: AsyncIterable[bytes], name: str | None = None) -> StoredFile:
        """Store a whole file at once."""
        async with self.upload(name) as upload:
            async for chunk in chunks:
                await upload.write(chunk)
            await upload.finish()
            return await upload.commit()

    def remove_stale_temp(self, older_than: float = STALE_TEMP_SECONDS) -> int:
        """Delete the temp files of uploads that died with their process (a live upload
        writes to its file all the time, so an old one is nobody's)."""
        removed = 0
        cutoff = time.time() - older_than
        # A sweep, not a request's own work: a folder that cannot be read or written
        # (gone, read-only) skips it, and the upload itself says what is wrong.
        try:
            entries = list(os.scandir(self.temp))
        except OSError:
            return 0
        for entry in entries:
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
        return removed


class Upload:
    """One file on its way into the store: `write()` its bytes in order, then `finish()`
    (the checks that need the whole file), then `commit()` (into the store). Leaving
    `async with` without committing, or any refusal, deletes the temp file.

    `write()` refuses the file (TooLarge, UnsupportedMediaType) as soon as it can tell,
    before the rest of it is read. Disk work runs in threads, off the event loop.
    """

    def __init__(self, store: DocumentStore, name: str | None) -> None:
        self.store = store
        self.name = name
        self.size = 0
        self.media_type: str | None = None
        self.sha256: str | None = None
        self.page_count: int | None = None
        self._state: Literal["receiving", "finished", "committed", "discarded"] = "receiving"
        self._head = bytearray()  # the first bytes, kept until the type is known
        self._hash = hashlib.sha256()
        self._file: io.BufferedWriter | None = None
        self._temp: Path | None = None
        # Writes run in a thread; the lock keeps a discard (a cancelled request) from
        # racing one, which could otherwise create the temp file after it was cleaned up.
        self._lock = threading.Lock()

    async def __aenter__(self) -> Upload:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.discard()

    @property
    def temp_path(self) -> Path | None:
        return self._temp

    async def write(self, data: bytes) -> None:
        self._expect("receiving")
        if not data:
            return
        self.size += len(data)
        if self.size > self.store.max_bytes:
            self.discard()
            raise TooLarge(self.store.max_bytes, f"{self.name!r}" if self.name else "the file")
        if self.media_type is None:
            self._head += data
            if len(self._head) < SNIFF_BYTES:
                return
            data = self._sniffed()
        await asyncio.to_thread(self._write, data)

    async def finish(self) -> None:
        """The file is complete: flush it to disk, hash it, count its pages."""
        self._expect("receiving")
        if self.media_type is None:  # shorter than SNIFF_BYTES
            await asyncio.to_thread(self._write, self._sniffed())
        await asyncio.to_thread(self._close)
        self.sha256 = self._hash.hexdigest()
        self._state = "finished"
        if self.media_type != PDF:
            self.page_count = 1  # an image is a page (a multi-frame TIFF or GIF counts once)
            return
        assert self._temp is not None
        try:
            self.page_count = await asyncio.to_thread(page_count, self._temp, self.name)
        except UnreadableDocument:
            self.discard()
            raise

    def file(self) -> StoredFile:
        """The finished file, still in its temp path (for a store to take it from)."""
        self._expect("finished")
        assert self.sha256 is not None and self.media_type is not None
        assert self._temp is not None
        return StoredFile(self.sha256, self.size, self.media_type, self.page_count, self._temp)

    async def commit(self) -> StoredFile:
        """Move the finished file into the store (or drop it: those bytes are there)."""
        self._expect("finished")
        path = await asyncio.to_thread(self._move)
        assert self.sha256 is not None and self.media_type is not None
        return StoredFile(self.sha256, self.size, self.media_type, self.page_count, path)

    def discard(self) -> None:
        """Forget the file (no-op once committed); safe to call any number of times."""
        with self._lock:
            if self._state in ("committed", "discarded"):
                return
            self._state = "discarded"
            if self._file is not None:
                # Closing flushes what is buffered, which fails again on a full disk; the
                # file is being thrown away, so that error is not this one's to raise.
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None
            if self._temp is not None:
                self._temp.unlink(missing_ok=True)

    # -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _disk(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise storage_error(exc, self.store.root) from exc

    def _expect(self, state: str) -> None:
        if self._state != state:
            raise RuntimeError(f"this upload is {self._state}, not {state}")

    def _sniffed(self) -> bytes:
        head = bytes(self._head)
        self._head.clear()
        media_type = sniff(head)
        if not accepted(media_type):
            self.discard()
            raise UnsupportedMediaType(media_type, ACCEPTED_TYPES, self.name)
        self.media_type = media_type
        return head

    def _write(self, data: bytes) -> None:
        with self._lock, self._disk():
            if self._state == "discarded":
                return
            if self._file is None:
                self.store.temp.mkdir(parents=True, exist_ok=True)
                # A random name of our own: the client's name is never part of a path.
                fd, name = tempfile.mkstemp(dir=self.store.temp, prefix="upload-")
                self._temp = Path(name)
                self._file = open(fd, "wb")  # noqa: SIM115 (closed by _close or discard)
            self._hash.update(data)
            self._file.write(data)

    def _close(self) -> None:
        with self._lock, self._disk():
            if self._file is not None:
                self._file.flush()
                # On disk before any database row names it: a crash after the row is
                # committed must not leave it pointing at a truncated file.
                os.fsync(self._file.fileno())
                self._file.close()
                self._file = None

    def _move(self) -> Path:
        with self._lock, self._disk():
            assert self.sha256 is not None and self._temp is not None
            final = self.store.path_of(self.sha256)
            if final.exists():
                # Only complete files are ever renamed there: the same bytes are stored.
                self._temp.unlink()
            else:
                final.parent.mkdir(parents=True, exist_ok=True)
                # Two uploads of the same new bytes may both get here; either rename
                # leaves the same complete file in place.
                os.replace(self._temp, final)
                fsync_dir(final.parent)
            self._state = "committed"
            return final


_FULL = {errno.ENOSPC, errno.EDQUOT}
_NOT_WRITABLE = {errno.EROFS: "is read-only", errno.EACCES: "is not writable by this process"}
_NOT_WRITABLE[errno.EPERM] = _NOT_WRITABLE[errno.EACCES]


def storage_error(exc: OSError, root: Path) -> StorageUnavailable:
    """What an OS error from writing into the store means for the operator."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in _FULL:
        return StorageFull(
            root, f"is full ({reason})", "free space there, or point CONVEYOR_HOME elsewhere"
        )
    if exc.errno in _NOT_WRITABLE:
        return StorageNotWritable(
            root,
            f"{_NOT_WRITABLE[exc.errno]} ({reason})",
            "make it writable by the user Conveyor runs as, or point CONVEYOR_HOME elsewhere",
        )
    return StorageUnavailable(root, f"failed ({reason})", "check the disk it is on")


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
