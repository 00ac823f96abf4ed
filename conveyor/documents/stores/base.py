"""What every document store does, and what can go wrong reading from one.

A store holds the bytes of documents by their sha256. Uploads are spooled to a local
temp file first (`conveyor.documents.storage.Upload`: sniffed, counted, hashed, pages
counted — PDFium needs a file), and only a complete, accepted file reaches a store:

* `publish(upload)` before the upload's transaction: the bytes under their final name
  (a folder: a rename; an object store: a temp key, then the final one). PostgreSQL
  does nothing here: its bytes go in with the row.
* `settle(conn, path, sha256, document_id)` inside that transaction, the document's row
  locked: make sure the bytes are there (PostgreSQL: the chunks; the others: the object,
  written again if a prune removed it a moment ago).
* `fetch(db, sha256, document_id, out)` writes a document to a local file, streaming.
* `delete(conn, sha256, document_id)` inside a prune's transaction.
* `sweep_temp(before)` after a prune: the temp files or keys of uploads that died.
"""

from __future__ import annotations

import abc
from pathlib import Path

from conveyor.db.pool import Connection, Database
from conveyor.documents.errors import StorageUnavailable
from conveyor.errors import ConveyorError

CHUNK_BYTES = 1 << 20  # what is read, written and held at a time, by every store


class StoreUnavailable(StorageUnavailable):
    """The store cannot be reached or refused the operation (credentials, network, a
    missing bucket): worth retrying once it is fixed. The web answers 503."""

    def __init__(self, message: str) -> None:
        self.root = None
        ConveyorError.__init__(self, message)


class DocumentMissing(ConveyorError):
    """The store answers, and the document is not in it (or not whole): retrying reads
    the same nothing."""


class Store(abc.ABC):
    url: str  # canonical, as documents.store records it

    @abc.abstractmethod
    async def check(self, db: Database | None) -> None:
        """Start-up: the store is reachable and writable (StoreUnavailable if not)."""

    @abc.abstractmethod
    async def publish(self, path: Path, sha256: str) -> None:
        """Put a complete local file in the store under its sha256 (before any row names
        it), unless those bytes are there already."""

    @abc.abstractmethod
    async def settle(self, conn: Connection, path: Path, sha256: str, document_id: int) -> None:
        """Inside the upload's transaction, with the document's row locked: the bytes are
        in the store when this returns."""

    @abc.abstractmethod
    async def fetch(self, db: Database, sha256: str, document_id: int, out: Path) -> None:
        """Write the document's bytes to the local file `out` (DocumentMissing if it is
        not there, StoreUnavailable if the store cannot be read)."""

    @abc.abstractmethod
    async def delete(self, conn: Connection, sha256: str, document_id: int) -> None:
        """Remove the document's bytes (a prune; missing bytes are not an error)."""

    async def sweep_temp(self, before: float) -> int:
        """Delete the temp files or keys of uploads that died mid-write, last written before
        `before` (seconds since the epoch); return how many. PostgreSQL has none: its
        chunks go with their transaction."""
        return 0

    def local_path(self, sha256: str) -> Path | None:
        """A path a reader on this machine may open directly, if the store has one."""
        return None
