"""A documents folder that cannot take a file: a real full tmpfs and a real read-only mount
under the store, uploads over real HTTP. The answer is a JSON error that says what is wrong
with the folder (507 when it is full, 503 when it cannot be written), and nothing of the
upload is kept: no row, no temp file.

Mounting needs root (these tests run as root in CI, like the embedded server's tests).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from conveyor.documents.errors import StorageFull, StorageNotWritable, StorageUnavailable
from conveyor.documents.storage import DocumentStore, storage_error
from conveyor.documents.stores import StoreUnavailable
from conveyor.settings import Settings
from conveyor.web.documents import check_store
from conveyor.web.errors import storage_response
from tests.test_documents import declared_app, error_of, png, upload
from tests.web import serving


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The folder store, on the mounts below (uploads to any store are spooled to
    CONVEYOR_HOME/documents/tmp first, so a full disk there is the same 507)."""
    return dataclasses.replace(settings, documents_url=f"file://{settings.home / 'documents'}")


def _mount(folder: Path, options: str) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.fixture
def full_store(settings: Settings) -> Iterator[DocumentStore]:
    """The store's folder is a 1 MiB tmpfs."""
    root = settings.home / "documents"
    for _ in _mount(root, "size=1m,mode=0755"):
        yield DocumentStore(root)


STALE = "tmp/upload-stale"


@pytest.fixture
def read_only_store(settings: Settings) -> Iterator[DocumentStore]:
    """A mount that holds the temp file of an upload that died two days ago (the first
    upload's sweep cannot remove it once `make_read_only` made the mount read-only)."""
    root = settings.home / "documents"
    for _ in _mount(root, "size=1m"):
        stale = root / STALE
        stale.parent.mkdir()
        stale.write_bytes(b"partial")
        os.utime(stale, (time.time() - 2 * 86400,) * 2)
        yield DocumentStore(root)


def make_read_only(store: DocumentStore) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(store.root)], check=True)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


async def document_rows(conn: psycopg.AsyncConnection[Any]) -> tuple[int, int]:
    cur = await conn.execute(
        "SELECT (SELECT count(*) FROM documents) AS d, (SELECT count(*) FROM tasks) AS t"
    )
    row = await cur.fetchone()
    assert row is not None
    return row["d"], row["t"]


async def test_a_full_documents_folder_is_a_507_and_keeps_nothing(
    settings: Settings, full_store: DocumentStore, conn: psycopg.AsyncConnection[Any]
) -> None:
    async with (
        serving(declared_app(settings)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        big = png() + bytes(3 << 20)  # three times what the folder holds
        response = await upload(client, ("big.png", big), agent="reader")
        assert response.status_code == 507, response.text
        assert response.headers["content-type"] == "application/json"
        error = error_of(response)
        assert error["code"] == "storage_full"
        assert "full" in error["message"] and "documents" in error["message"]
        assert files_under(full_store.root) == [], "the temp file is gone"
        assert await document_rows(conn) == (0, 0)

        # The folder still works for what fits: the failure left nothing in the way.
        small = await upload(client, ("small.png", png()), agent="reader")
        assert small.status_code == 201, small.text
        assert files_under(full_store.root) == [
            full_store.path_of(small.json()[0]["document"]["sha256"])
        ]


async def test_a_read_only_documents_folder_stops_start_up(
    settings: Settings, read_only_store: DocumentStore
) -> None:
    """The web app's lifespan runs this check (a failed lifespan ends uvicorn with a
    SystemExit, which asyncio will not hand to a test)."""
    make_read_only(read_only_store)
    app = declared_app(settings)
    try:
        with pytest.raises(StoreUnavailable, match=r"(?i)read-only") as raised:
            await check_store(app)
        assert str(read_only_store.root) in str(raised.value)
    finally:
        await app.aclose()


async def test_a_documents_folder_that_turns_read_only_is_a_503_and_keeps_nothing(
    settings: Settings, read_only_store: DocumentStore, conn: psycopg.AsyncConnection[Any]
) -> None:
    async with (
        serving(declared_app(settings)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        make_read_only(read_only_store)
        response = await upload(client, ("a.png", png()), ("b.png", png(3, 3)), agent="reader")
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/json"
        error = error_of(response)
        assert error["code"] == "storage_unavailable"
        assert "read-only" in error["message"] and str(read_only_store.root) in error["message"]
        assert files_under(read_only_store.root) == [read_only_store.root / STALE]
        assert await document_rows(conn) == (0, 0)


async def test_a_store_that_fills_while_committing_keeps_nothing(full_store: DocumentStore) -> None:
    """Without HTTP: the error is typed, and the upload's temp file is removed even when
    closing it fails too (its buffered bytes cannot be written either)."""

    async def chunks() -> Any:
        yield png()
        for _ in range(40):
            yield bytes(100_000)

    with pytest.raises(StorageFull):
        await full_store.put(chunks(), name="big.png")
    assert files_under(full_store.root) == []


@pytest.mark.parametrize(
    ("code", "kind", "status"),
    [
        (errno.ENOSPC, StorageFull, 507),
        (errno.EDQUOT, StorageFull, 507),
        (errno.EROFS, StorageNotWritable, 503),
        (errno.EACCES, StorageNotWritable, 503),
        (errno.EPERM, StorageNotWritable, 503),
        (errno.EIO, StorageUnavailable, 503),
    ],
)
def test_each_os_error_has_its_kind_and_status(
    code: int, kind: type[StorageUnavailable], status: int
) -> None:
    # EACCES and EDQUOT cannot be produced as root on a tmpfs; the mapping is the same code.
    error = storage_error(OSError(code, os.strerror(code)), Path("/srv/documents"))
    assert type(error) is kind and "/srv/documents" in str(error)
    assert storage_response(error).status_code == status
