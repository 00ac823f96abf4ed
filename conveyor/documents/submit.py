"""Documents into tasks: each stored file becomes a task for an agent, whose payload
references it. Shared by POST /api/documents and `conveyor submit` (through
`submit_files`, which reads local files without HTTP).

Idempotency. Without `rerun`, a task's idempotency key is `doc:<sha256>`: the same bytes
submitted to the same agent again (under any name, by the API or the CLI) return the task
they made the first time, `duplicate` set. With `rerun`, a new task is made; its key is
then the caller's `idempotency_key` if given (`<key>:<i>` for the i-th file, from 0, when
there are several), so that retrying the re-run request does not run it twice, and none
otherwise. Without `rerun`, the caller's key is not needed (the document is the key) and
is ignored.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from conveyor import queue
from conveyor.app import App
from conveyor.db.pool import Connection
from conveyor.documents.amounts import item_rows
from conveyor.documents.errors import DocumentError, IdempotencyConflict, UnreadableDocument
from conveyor.documents.sniff import PDF
from conveyor.documents.storage import StoredFile, Upload
from conveyor.documents.stores import Store, configured_store, spool_for
from conveyor.documents.text import extract_text
from conveyor.errors import InvalidTask, UnknownAgent
from conveyor.queue import PRIORITY_MAX, PRIORITY_MIN, NewTask
from conveyor.sql import documents as Q

MAX_NAME_CHARS = 255
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")  # as the agents table checks
MAX_KEY_CHARS = 200  # room for ":<index>" within the 255 of tasks.idempotency_key
MAX_FILES = 100  # per request or call
READ_CHUNK = 1 << 20
# PDFs up to this many pages have their text counted at upload, for the estimate; a longer
# one is read in page-range children, which count their own pages' text.
COUNT_PAGES = 50


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    id: int
    sha256: str
    size_bytes: int
    media_type: str
    page_count: int | None
    name: str | None  # of the first upload of these bytes
    created_at: datetime
    store: str | None  # where its bytes are (conveyor.documents.stores); None: legacy folder


@dataclass(frozen=True, slots=True)
class Submitted:
    document: DocumentRecord
    name: str | None  # the name this file was submitted under
    task_id: int
    duplicate: bool  # True: the task existed already, and is returned instead of a new one


def text_counts(file: StoredFile) -> dict[str, int]:
    """`chars` and `item_rows` of a PDF's text, for its task's token estimate
    (conveyor.agents.llm_budget.estimate_tokens: the answer restates the item rows). None for a
    picture, for a PDF with a scanned page (OCR or a vision model reads those, which the
    page count estimates) or with no text at all, and for one of more than COUNT_PAGES
    pages. A few ms of CPU a document (benchmarks/item_rows.py)."""
    if file.media_type != PDF or not file.page_count or file.page_count > COUNT_PAGES:
        return {}
    try:
        text = extract_text(file.path)
    except UnreadableDocument:
        return {}  # the agent's attempt says why; the upload stands as it did
    if text.scanned_pages or not text.text.strip():
        return {}  # nothing printed to count: the page count estimates it
    return {"chars": len(text.text), "item_rows": item_rows(text.text)}


def clean_name(name: str | None) -> str | None:
    """A client's file name as a label: its last path component, without control or
    format characters, at most 255 characters; None when nothing is left."""
    if name is None:
        return None
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    label = "".join(c for c in base if c.isprintable()).strip()[:MAX_NAME_CHARS]
    return None if label in ("", ".", "..") else label


def check_options(*, agent: str, priority: int, idempotency_key: str | None, files: int) -> None:
    """Refuse bad options before any byte is read (InvalidTask, UnknownAgent)."""
    if not isinstance(agent, str) or not AGENT_NAME.match(agent):
        raise UnknownAgent([agent])  # no agent can have that name
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidTask(f"priority must be an integer, not {priority!r}")
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise InvalidTask(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX}")
    if idempotency_key is not None and (
        not 1 <= len(idempotency_key) <= MAX_KEY_CHARS or "\x00" in idempotency_key
    ):
        raise InvalidTask(f"idempotency_key must be 1 to {MAX_KEY_CHARS} characters, no NUL")
    if files < 1:
        raise InvalidTask("no files: send at least one")
    if files > MAX_FILES:
        raise InvalidTask(f"{files} files: at most {MAX_FILES} at a time")


def task_key(
    sha256: str, *, rerun: bool, idempotency_key: str | None, index: int, count: int
) -> str | None:
    """The idempotency key of the task for the `index`-th of `count` files."""
    if not rerun:
        return f"doc:{sha256}"
    if idempotency_key is None:
        return None
    return idempotency_key if count == 1 else f"{idempotency_key}:{index}"


async def check_agent(app: App, agent: str, known: set[str]) -> None:
    """UnknownAgent unless an App declared `agent` in this database (`known` caches)."""
    db = await app.database()
    async with db.connection() as conn:
        await queue.check_agents(conn, [agent], known)


async def submit_uploads(
    app: App,
    uploads: Sequence[Upload],
    *,
    agent: str,
    priority: int = 0,
    idempotency_key: str | None = None,
    rerun: bool = False,
) -> list[Submitted]:
    """Commit finished uploads into the store, record them, and enqueue (or find) one
    task per file, in order. The files are in the store before any row names them."""
    check_options(
        agent=agent, priority=priority, idempotency_key=idempotency_key, files=len(uploads)
    )
    stored = [upload.file() for upload in uploads]
    names = [upload.name for upload in uploads]
    keys = [
        task_key(f.sha256, rerun=rerun, idempotency_key=idempotency_key, index=i, count=len(stored))
        for i, f in enumerate(stored)
    ]
    db = await app.database()
    async with db.connection() as conn:
        cur = await conn.execute(
            Q.documents_tasks_by_key, {"agent": agent, "keys": [k for k in keys if k]}
        )
        existing = {row["idempotency_key"]: row for row in await cur.fetchall()}
    for key, file in zip(keys, stored, strict=True):
        if key in existing and existing[key]["sha256"] != file.sha256:
            raise IdempotencyConflict(
                f"idempotency key {key!r} already names task {existing[key]['id']} of agent "
                f"{agent!r}, for other bytes; use a new key"
            )
    counts = await asyncio.gather(*(asyncio.to_thread(text_counts, f) for f in stored))
    store = configured_store(app.settings)
    files = {f.sha256: f for f in stored}
    for file in files.values():
        await store.publish(file.path, file.sha256)  # before any row names them
    async with db.connection() as conn, conn.transaction():
        # The rows, the bytes (PostgreSQL) and the tasks commit together or not at all.
        documents = await _record(conn, stored, names, store)
        for sha256, file in files.items():
            if documents[sha256].store == store.url:
                await store.settle(conn, file.path, sha256, documents[sha256].id)
        tasks = [
            app._estimated(
                NewTask(
                    agent,
                    {
                        "document_id": documents[f.sha256].id,
                        "sha256": f.sha256,
                        "name": name,
                        "media_type": f.media_type,
                        "pages": f.page_count,
                        **count,
                    },
                    priority,
                    key,
                )
            )
            for f, name, key, count in zip(stored, names, keys, counts, strict=True)
        ]
        ids = await queue.enqueue_many(conn, tasks, known_agents=set())
    seen: set[str] = set()
    submitted = []
    for f, name, key, task_id in zip(stored, names, keys, ids, strict=True):
        # A duplicate: the key named a task before this call, or an earlier file of it.
        duplicate = key is not None and (key in existing or key in seen)
        if key is not None:
            seen.add(key)
        submitted.append(Submitted(documents[f.sha256], name, task_id, duplicate))
    return submitted


async def submit_files(
    app: App,
    paths: Sequence[Path | str],
    *,
    agent: str,
    priority: int = 0,
    idempotency_key: str | None = None,
    rerun: bool = False,
) -> list[Submitted]:
    """Store local files (as the API would: sniffed, size-limited, content-addressed) and
    enqueue one task per file for `agent`, in order. All files are checked before any is
    stored or enqueued: a refused one (DocumentError, InvalidTask, UnknownAgent) leaves no
    task and nothing of the call in the store."""
    check_options(agent=agent, priority=priority, idempotency_key=idempotency_key, files=len(paths))
    await check_agent(app, agent, set())  # before reading a byte
    store = spool_for(configured_store(app.settings), app.settings)
    uploads: list[Upload] = []
    try:
        for path in map(Path, paths):
            upload = store.upload(clean_name(path.name))
            uploads.append(upload)
            async for chunk in _read(path):
                await upload.write(chunk)
            await upload.finish()
        return await submit_uploads(
            app,
            uploads,
            agent=agent,
            priority=priority,
            idempotency_key=idempotency_key,
            rerun=rerun,
        )
    finally:
        for upload in uploads:
            upload.discard()


async def _record(
    conn: Connection, stored: Sequence[StoredFile], names: Sequence[str | None], store: Store
) -> dict[str, DocumentRecord]:
    """The documents' rows by sha256, inserted where new (the first name wins), locked
    until the caller's transaction ends."""
    first: dict[str, tuple[StoredFile, str | None]] = {}
    for file, name in zip(stored, names, strict=True):
        first.setdefault(file.sha256, (file, name))
    files = [f for f, _ in first.values()]
    cur = await conn.execute(
        Q.documents_record,
        {
            "sha256": [f.sha256 for f in files],
            "size_bytes": [f.size_bytes for f in files],
            "media_type": [f.media_type for f in files],
            "page_count": [f.page_count for f in files],
            "name": [name for _, name in first.values()],
            "store": store.url,
        },
    )
    return {row["sha256"]: DocumentRecord(**row) for row in await cur.fetchall()}


async def _read(path: Path) -> AsyncIterator[bytes]:
    try:
        file = await asyncio.to_thread(path.open, "rb")
    except OSError as exc:
        raise DocumentError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    try:
        while chunk := await asyncio.to_thread(file.read, READ_CHUNK):
            yield chunk
    finally:
        file.close()
