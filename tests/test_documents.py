"""Documents: uploads over real HTTP to a real server, stored on disk, recorded in a real
PostgreSQL, each made a task; and `submit_files`, the same without HTTP."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import struct
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pytest

from conveyor import App
from conveyor.documents import (
    DocumentStore,
    UnsupportedMediaType,
    submit_files,
)
from conveyor.documents.multipart import (
    MalformedMultipart,
    MultipartReader,
    PartEnd,
    PartStart,
    boundary_of,
    parse_header,
)
from conveyor.documents.pdf import PDFIUM_LOCK
from conveyor.documents.sniff import sniff
from conveyor.documents.storage import MAX_BYTES_VARIABLE
from conveyor.errors import UnknownAgent
from conveyor.settings import Settings
from tests.web import serving

GIF = bytes.fromhex(
    "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b"
)


def pdf(pages: int) -> bytes:
    with PDFIUM_LOCK:  # the server, in this process, counts pages in threads
        document = pdfium.PdfDocument.new()
        for _ in range(pages):
            document.new_page(200, 300)
        out = io.BytesIO()
        document.save(out)
        document.close()
    return out.getvalue()


def png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _noop(task: Any) -> None:
    return None


def declared_app(settings: Settings) -> App:
    app = App(settings=settings)
    app.agent("reader")(_noop)
    app.agent("summary")(_noop)
    return app


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """These tests look at the files: the folder store (PostgreSQL and S3 are covered by
    test_document_store.py, through the same upload code)."""
    return dataclasses.replace(settings, documents_url=f"file://{settings.home / 'documents'}")


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(declared_app(settings)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        yield client


@pytest.fixture
def store(settings: Settings) -> DocumentStore:
    return DocumentStore(settings.home / "documents")


def stored_files(store: DocumentStore) -> list[Path]:
    return sorted(p for p in store.root.rglob("*") if p.is_file())


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    error: dict[str, str] = body["error"]
    return error


async def upload(
    client: httpx.AsyncClient, *files: tuple[str, bytes], **fields: str
) -> httpx.Response:
    parts = [("files", (name, data, "application/octet-stream")) for name, data in files]
    return await client.post("/api/documents", data=fields, files=parts)


# ---------------------------------------------------------------------------------------
# Over HTTP


async def test_a_pdf_and_two_images_in_one_request(
    client: httpx.AsyncClient, store: DocumentStore, conn: Any
) -> None:
    contract, scan = pdf(3), png()
    response = await upload(
        client,
        ("contract.pdf", contract),
        ("scan.png", scan),
        ("photo.gif", GIF),
        agent="reader",
        priority="5",
    )
    assert response.status_code == 201, response.text
    items = response.json()
    assert [(i["document"]["media_type"], i["document"]["page_count"]) for i in items] == [
        ("application/pdf", 3),
        ("image/png", 1),
        ("image/gif", 1),
    ]
    for item, (name, data) in zip(
        items, [("contract.pdf", contract), ("scan.png", scan), ("photo.gif", GIF)], strict=True
    ):
        document, task = item["document"], item["task"]
        assert (document["sha256"], document["size_bytes"], document["name"]) == (
            sha(data),
            len(data),
            name,
        )
        assert item["duplicate"] is False and item["name"] == name
        assert (task["agent"], task["status"], task["priority"]) == ("reader", "enqueued", 5)
        assert task["payload"] == {
            "document_id": document["id"],
            "sha256": sha(data),
            "name": name,
            "media_type": document["media_type"],
            "pages": document["page_count"],
        }
        assert task["idempotency_key"] == f"doc:{sha(data)}"
        # Content-addressed: the path is the hash, and the bytes are the upload's.
        path = store.path_of(sha(data))
        assert path.relative_to(store.root).parts == (sha(data)[:2], sha(data)[2:4], sha(data))
        assert path.read_bytes() == data
    assert len(stored_files(store)) == 3, "no temp file is left"
    cur = await conn.execute("SELECT sha256, media_type, page_count FROM documents ORDER BY id")
    assert [(r["sha256"], r["page_count"]) for r in await cur.fetchall()] == [
        (sha(contract), 3),
        (sha(scan), 1),
        (sha(GIF), 1),
    ]
    read = await client.get(f"/api/tasks/{items[0]['task']['id']}")
    assert read.json()["payload"]["sha256"] == sha(contract)

    # A large file, streamed without Content-Length, in pieces that split the boundary.
    data = png() + bytes(range(256)) * (8 * 4096)  # 8 MiB
    request = client.build_request(
        "POST", "/api/documents", data={"agent": "reader"}, files={"files": ("big.png", data)}
    )
    body = request.read()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 100_003):
            yield body[start : start + 100_003]

    response = await client.post(
        "/api/documents",
        content=chunks(),
        headers={"content-type": request.headers["content-type"]},
    )
    assert response.status_code == 201, response.text
    assert store.path_of(sha(data)).read_bytes() == data


async def test_the_same_bytes_are_stored_once_and_make_one_task_unless_rerun(
    client: httpx.AsyncClient, store: DocumentStore
) -> None:
    data = pdf(2)
    (first,) = (await upload(client, ("a.pdf", data), agent="reader")).json()
    again = await upload(client, ("renamed.pdf", data), agent="reader")
    assert again.status_code == 201
    (second,) = again.json()
    assert second["duplicate"] is True
    assert second["task"]["id"] == first["task"]["id"]
    assert second["document"] == first["document"], "the document keeps its first name"
    assert second["name"] == "renamed.pdf"
    assert stored_files(store) == [store.path_of(sha(data))]

    # Another agent: the same document, a task of its own.
    (other,) = (await upload(client, ("a.pdf", data), agent="summary")).json()
    assert other["document"]["id"] == first["document"]["id"]
    assert other["task"]["id"] != first["task"]["id"] and other["duplicate"] is False

    # A re-run makes a new task; with a key, retrying the re-run returns it.
    (rerun,) = (await upload(client, ("a.pdf", data), agent="reader", rerun="true")).json()
    assert rerun["task"]["id"] != first["task"]["id"] and rerun["duplicate"] is False
    assert rerun["task"]["idempotency_key"] is None
    keyed = [
        (await upload(client, ("a.pdf", data), agent="reader", rerun="1", idempotency_key="k1"))
        for _ in range(2)
    ]
    assert [r.json()[0]["duplicate"] for r in keyed] == [False, True]
    assert keyed[0].json()[0]["task"]["id"] == keyed[1].json()[0]["task"]["id"]
    assert keyed[0].json()[0]["task"]["id"] not in {first["task"]["id"], rerun["task"]["id"]}

    # Several files with a key: <key>:<index>. The same bytes twice in one request: one
    # file, one task, the second a duplicate of the first.
    many = await upload(
        client,
        ("x.png", png(3, 3)),
        ("y.png", png(3, 3)),
        agent="reader",
        rerun="yes",
        idempotency_key="batch",
    )
    assert [i["task"]["idempotency_key"] for i in many.json()] == ["batch:0", "batch:1"]
    same = (await upload(client, ("x.png", png(4, 4)), ("y.png", png(4, 4)), agent="reader")).json()
    assert same[0]["task"]["id"] == same[1]["task"]["id"]
    assert [i["duplicate"] for i in same] == [False, True]

    # A key already used for other bytes is a conflict, not someone else's task.
    conflict = await upload(
        client, ("z.gif", GIF), agent="reader", rerun="true", idempotency_key="k1"
    )
    assert conflict.status_code == 409 and error_of(conflict)["code"] == "conflict"


async def test_file_names_are_labels_never_paths(
    client: httpx.AsyncClient, store: DocumentStore, settings: Settings
) -> None:
    data = pdf(1)
    before = set(settings.home.parent.rglob("*"))
    response = await upload(client, ("../../etc/passwd.pdf", data), agent="reader")
    assert response.status_code == 201
    assert response.json()[0]["document"]["name"] == "passwd.pdf"
    assert stored_files(store) == [store.path_of(sha(data))]
    created = set(settings.home.parent.rglob("*")) - before
    assert created and all(p.is_relative_to(store.root) for p in created), created

    weird = await upload(
        client, ("C:\\Users\\me\\\u202eevil" + "n" * 1000 + ".png", png()), agent="reader"
    )
    name = weird.json()[0]["name"]
    assert name.startswith("eviln") and len(name) == 255, name

    # Raw bytes as a client may send them: NUL (which PostgreSQL text cannot hold) and
    # other control characters are dropped, invalid UTF-8 is replaced.
    raw = (
        b'--B\r\nContent-Disposition: form-data; name="agent"\r\n\r\nreader\r\n'
        b'--B\r\nContent-Disposition: form-data; name="files"; filename="a\x00b\x1b\xff.gif"'
        b"\r\n\r\n" + GIF + b"\r\n--B--\r\n"
    )
    response = await client.post(
        "/api/documents", content=raw, headers={"content-type": "multipart/form-data; boundary=B"}
    )
    assert response.status_code == 201, response.text
    assert response.json()[0]["name"] == "ab\ufffd.gif"


async def test_the_media_type_is_sniffed_from_the_bytes(
    client: httpx.AsyncClient, store: DocumentStore, conn: Any
) -> None:
    text = await upload(client, ("x.pdf", b"hello, this is not a PDF\n" * 40), agent="reader")
    assert text.status_code == 415, text.text
    error = error_of(text)
    assert error["code"] == "unsupported_media_type" and "text/plain" in error["message"]
    zipped = await upload(client, ("y.png", b"PK\x03\x04" + bytes(600)), agent="reader")
    assert zipped.status_code == 415 and "application/zip" in error_of(zipped)["message"]
    empty = await upload(client, ("e.pdf", b""), agent="reader")
    assert empty.status_code == 415 and "empty" in error_of(empty)["message"]
    # A good file before a bad one in the same request is not kept either.
    mixed = await upload(client, ("ok.png", png()), ("bad.pdf", b"%PDF-1.7 junk"), agent="reader")
    assert mixed.status_code == 422 and error_of(mixed)["code"] == "unreadable_document"
    assert stored_files(store) == []
    cur = await conn.execute("SELECT count(*) AS n FROM documents")
    assert (await cur.fetchone())["n"] == 0


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv(MAX_BYTES_VARIABLE, str(64 * 1024))
    return 64 * 1024


async def test_oversized_uploads_are_refused_while_streaming(
    small_limit: int, settings: Settings, store: DocumentStore
) -> None:
    async with (
        serving(declared_app(settings)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        big = png() + bytes(1 << 20)
        declared = await upload(client, ("big.png", big), agent="reader")
        assert declared.status_code == 413 and error_of(declared)["code"] == "too_large"

        request = client.build_request(
            "POST", "/api/documents", data={"agent": "reader"}, files={"files": ("b.png", big)}
        )
        body = request.read()

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            for start in range(0, len(body), 16 * 1024):
                yield body[start : start + 16 * 1024]

        streamed = await client.post(
            "/api/documents",
            content=chunks(),
            headers={"content-type": request.headers["content-type"]},
        )
        assert streamed.status_code == 413 and error_of(streamed)["code"] == "too_large"
        assert "content-length" not in streamed.request.headers
        assert stored_files(store) == [], "the temp file is gone"

        # Just under the limit is fine.
        fits = png() + bytes(small_limit - len(png()))
        response = await upload(client, ("fits.png", fits), agent="reader")
        assert response.status_code == 201, response.text
        assert stored_files(store) == [store.path_of(sha(fits))]


BAD_FORMS: list[tuple[dict[str, str], int, str, str]] = [
    ({}, 422, "invalid_request", "agent"),
    ({"agent": ""}, 422, "invalid_request", "agent"),
    ({"agent": "nobody"}, 422, "unknown_agent", "nobody"),
    ({"agent": "reader", "priority": "high"}, 422, "invalid_request", "priority"),
    ({"agent": "reader", "priority": "99999"}, 422, "invalid_request", "priority"),
    ({"agent": "reader", "rerun": "maybe"}, 422, "invalid_request", "rerun"),
    ({"agent": "reader", "colour": "red"}, 422, "invalid_request", "colour"),
    ({"agent": "reader", "idempotency_key": "k" * 201}, 422, "invalid_request", "idempotency_key"),
]


async def test_bad_forms_and_bodies_get_a_4xx_that_names_the_problem(
    client: httpx.AsyncClient, store: DocumentStore
) -> None:
    for fields, status, code, names in BAD_FORMS:  # one server for all: each costs a database
        response = await upload(client, ("a.png", png()), **fields)
        assert response.status_code == status, (fields, response.text)
        error = error_of(response)
        assert error["code"] == code and names in error["message"], (fields, error)
    # The agent after the file: checked at the end, and the file is not kept.
    late_agent = await client.post(
        "/api/documents",
        content=(
            b'--B\r\nContent-Disposition: form-data; name="files"; filename="a.gif"\r\n\r\n'
            + GIF
            + b'\r\n--B\r\nContent-Disposition: form-data; name="agent"\r\n\r\nnobody'
            + b"\r\n--B--\r\n"
        ),
        headers={"content-type": "multipart/form-data; boundary=B"},
    )
    assert late_agent.status_code == 422 and error_of(late_agent)["code"] == "unknown_agent"
    no_files = await client.post("/api/documents", data={"agent": "reader"})
    assert no_files.status_code == 422 and "files" in error_of(no_files)["message"]

    as_json = await client.post("/api/documents", json={"agent": "reader"})
    assert as_json.status_code == 415 and error_of(as_json)["code"] == "unsupported_media_type"
    no_boundary = await client.post(
        "/api/documents", content=b"x", headers={"content-type": "multipart/form-data"}
    )
    assert no_boundary.status_code == 400 and error_of(no_boundary)["code"] == "malformed_multipart"
    request = client.build_request(
        "POST", "/api/documents", data={"agent": "reader"}, files={"files": ("a.png", png())}
    )
    truncated = await client.post(
        "/api/documents",
        content=request.read()[:-20],
        headers={"content-type": request.headers["content-type"]},
    )
    assert truncated.status_code == 400 and "closing boundary" in error_of(truncated)["message"]
    fields_only = await client.post(
        "/api/documents",
        content=b'--B\r\nContent-Disposition: form-data; name="agent"\r\n\r\nreader\r\n--B--',
        headers={"content-type": 'multipart/form-data; boundary="B"'},
    )
    assert fields_only.status_code == 422 and "files" in error_of(fields_only)["message"]
    # What a browser sends for an empty file input is no file.
    empty_input = await client.post(
        "/api/documents", data={"agent": "reader"}, files={"files": ("", b"")}
    )
    assert empty_input.status_code == 422 and "files" in error_of(empty_input)["message"]
    assert stored_files(store) == []

    spec = (await client.get("/openapi.json")).json()
    form = spec["paths"]["/api/documents"]["post"]["requestBody"]["content"]
    assert set(form["multipart/form-data"]["schema"]["properties"]) == {
        "files",
        "agent",
        "priority",
        "idempotency_key",
        "rerun",
    }


# ---------------------------------------------------------------------------------------
# Without HTTP


async def test_submit_files_without_http(
    settings: Settings, store: DocumentStore, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(pdf(4))
    (folder / "b.png").write_bytes(png())
    (folder / "notes.pdf").write_text("just text")
    app = declared_app(settings)
    async with app:
        submitted = await submit_files(
            app, [folder / "a.pdf", folder / "b.png"], agent="reader", priority=-3
        )
        assert [(s.name, s.document.page_count, s.duplicate) for s in submitted] == [
            ("a.pdf", 4, False),
            ("b.png", 1, False),
        ]
        task = await app.get_task_async(submitted[0].task_id)
        assert task.priority == -3 and task.payload["document_id"] == submitted[0].document.id
        assert (
            store.path_of(submitted[0].document.sha256).read_bytes()
            == (folder / "a.pdf").read_bytes()
        )

        again = await submit_files(app, [str(folder / "a.pdf")], agent="reader")
        assert again[0].task_id == submitted[0].task_id and again[0].duplicate

        with pytest.raises(UnsupportedMediaType, match="text/plain"):
            await submit_files(app, [folder / "b.png", folder / "notes.pdf"], agent="summary")
        with pytest.raises(UnknownAgent):
            await submit_files(app, [folder / "missing.pdf"], agent="nobody")
    assert len(stored_files(store)) == 2


# ---------------------------------------------------------------------------------------
# The pieces


@pytest.mark.parametrize(
    ("head", "media_type"),
    [
        (b"%PDF-1.7\n", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n\x00", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF87a\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "application/octet-stream"),
        (b"II*\x00\x08\x00\x00\x00", "image/tiff"),
        (b"MM\x00*\x00\x00\x00\x08", "image/tiff"),
        (b"\x00\x00\x00\x18ftypheic", "image/heic"),
        (b"<!DOCTYPE html><html>", "text/html"),
        (b"<?xml version='1.0'?><svg/>", "image/svg+xml"),
        ("caf\u00e9 %PDF-".encode(), "text/plain"),
        (b"\x00\x01\x02\x03", "application/octet-stream"),
        (b"", "inode/x-empty"),
    ],
)
def test_sniffing(head: bytes, media_type: str) -> None:
    assert sniff(head) == media_type


def _form_body() -> tuple[str, bytes]:
    request = httpx.Request(
        "POST",
        "http://x/",
        data={"agent": "reader"},
        files=[
            ("files", ('a "quoted" name.pdf', b"%PDF-1.7\r\n--not-a-boundary\r\n" * 3)),
            ("files", ("b.png", b"\r\n" * 5)),
        ],
    )
    return request.headers["content-type"], request.read()


def _parse(boundary: str, pieces: Iterator[bytes]) -> list[Any]:
    reader = MultipartReader(boundary)
    events: list[Any] = []
    for piece in pieces:
        for event in reader.feed(piece):
            if isinstance(event, bytes) and events and isinstance(events[-1], bytes):
                events[-1] += event
            else:
                events.append(event)
    reader.close()
    return events


def test_part_headers() -> None:
    disposition = (
        'form-data; name="files"; filename="a \\"b\\"; c.pdf"; filename*=UTF-8\'\'%E2%82%AC.pdf'
    )
    assert parse_header(disposition) == ("form-data", {"name": "files", "filename": "\u20ac.pdf"})
    assert parse_header('form-data; name="x"; filename="a \\"b\\"; c.pdf"')[1] == {
        "name": "x",
        "filename": 'a "b"; c.pdf',
    }
    assert boundary_of('Multipart/Form-Data; charset=utf-8; boundary="a b:c"') == "a b:c"
    for bad in ("multipart/form-data", "multipart/form-data; boundary=", "text/plain; boundary=x"):
        with pytest.raises(MalformedMultipart):
            boundary_of(bad)


def test_the_multipart_reader_at_every_split() -> None:
    content_type, body = _form_body()
    boundary = boundary_of(content_type)
    expected = [
        PartStart("agent", None, None),
        b"reader",
        PartEnd(),
        # Quotes travel as %22 (HTML's form encoding): names are kept as they came.
        PartStart("files", "a %22quoted%22 name.pdf", "application/pdf"),
        b"%PDF-1.7\r\n--not-a-boundary\r\n" * 3,
        PartEnd(),
        PartStart("files", "b.png", "image/png"),
        b"\r\n" * 5,
        PartEnd(),
    ]
    for size in range(1, len(body) + 1):
        pieces = (body[i : i + size] for i in range(0, len(body), size))
        assert _parse(boundary, pieces) == expected, size
    with pytest.raises(MalformedMultipart):
        _parse(boundary, iter([body[:-3]]))
    with pytest.raises(MalformedMultipart):
        _parse(boundary, iter([body.replace(b"--\r\n", b"xx\r\n")]))
    with pytest.raises(MalformedMultipart):
        _parse(boundary, iter([body.replace(b"Content-Disposition", b"Content-Dispositio")]))
