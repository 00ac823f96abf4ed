"""Document stores: where uploaded documents' bytes live, so that every worker can read
them (issue #17). Chosen by CONVEYOR_DOCUMENTS_URL (its grammar: `conveyor.document_urls`):

    base.py      Store: publish, settle, fetch, delete; StoreUnavailable, DocumentMissing
    postgres.py  in the database, 1 MiB chunks written with the row and its task (default)
    folder.py    a local or shared folder, file:///…
    objects.py   s3://, gs://, abfs:// through fsspec, temp key then final key
    reader.py    a worker opens a document by its sha256: a local file, fetched and verified
    prune.py     documents no task refers to are deleted
    migrate.py   `conveyor documents migrate --to URL`

Each document's row names the store that holds it (`documents.store`), and readers go by
that, not by their own setting: a worker reads what any web app stored, wherever.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from conveyor.document_urls import POSTGRESQL, VARIABLE, BadStoreUrl, StoreUrl, parse
from conveyor.documents.storage import DocumentStore, max_upload_bytes
from conveyor.documents.stores.base import DocumentMissing, Store, StoreUnavailable
from conveyor.settings import Settings

__all__ = [
    "POSTGRESQL",
    "VARIABLE",
    "BadStoreUrl",
    "DocumentMissing",
    "Store",
    "StoreUnavailable",
    "StoreUrl",
    "configured_store",
    "legacy_folder",
    "open_store",
    "spool_for",
]


def open_store(url: str | None) -> Store:
    """The store a URL (as CONVEYOR_DOCUMENTS_URL or documents.store write it) names."""
    return _open(parse(url).url)


@lru_cache(maxsize=32)
def _open(url: str) -> Store:
    where = parse(url)
    if where.kind == "folder":
        from conveyor.documents.stores.folder import FolderStore

        return FolderStore(Path(where.path))
    if where.kind == "objects":
        from conveyor.documents.stores.objects import ObjectStore

        return ObjectStore(where)
    from conveyor.documents.stores.postgres import PostgresStore

    return PostgresStore()


def configured_store(settings: Settings) -> Store:
    """Where this process stores new uploads: CONVEYOR_DOCUMENTS_URL (PostgreSQL if unset)."""
    return open_store(settings.documents_url)


def legacy_folder(settings: Settings) -> Path:
    """Where documents stored before stores had names are: CONVEYOR_HOME/documents."""
    return settings.home / "documents"


def spool_for(store: Store, settings: Settings) -> DocumentStore:
    """Where uploads are spooled while they arrive: a folder store's own `tmp/` (so that
    publishing is a link within one file system), otherwise CONVEYOR_HOME/documents/tmp."""
    from conveyor.documents.stores.folder import FolderStore

    root = store.root if isinstance(store, FolderStore) else legacy_folder(settings)
    return DocumentStore(root, max_bytes=max_upload_bytes())
