"""Document upload: POST /api/documents.

The multipart body is read as a stream (conveyor.documents.multipart), never parsed into
memory by the framework: each file goes to a local spool file as it arrives, so a
100 MB upload never sits in memory, and a file that is too large, or not of an accepted
type, is refused as soon as that is known, before the rest of it is read. Nothing of a
refused request is kept: files reach the document store (CONVEYOR_DOCUMENTS_URL:
PostgreSQL, a folder, an object store) only once the whole request is accepted.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.requests import ClientDisconnect

from conveyor.app import App
from conveyor.documents import multipart
from conveyor.documents.errors import (
    DocumentError,
    IdempotencyConflict,
    TooLarge,
    UnreadableDocument,
    UnsupportedMediaType,
)
from conveyor.documents.multipart import MalformedMultipart, MultipartReader, PartEnd, PartStart
from conveyor.documents.storage import MAX_BYTES_VARIABLE, DocumentStore, Upload
from conveyor.documents.stores import configured_store, spool_for
from conveyor.documents.submit import (
    AGENT_NAME,
    MAX_FILES,
    MAX_KEY_CHARS,
    Submitted,
    check_agent,
    clean_name,
    submit_uploads,
)
from conveyor.errors import UnknownAgent
from conveyor.queue import PRIORITY_MAX, PRIORITY_MIN
from conveyor.sql import documents as Q
from conveyor.states import TaskStatus
from conveyor.web.errors import ApiError
from conveyor.web.models import ErrorOut

FORM_OVERHEAD = 64 * 1024  # a request may exceed the file limit by this: headers, fields
MAX_FIELD_BYTES = 1024
FIELDS = ("agent", "priority", "idempotency_key", "rerun")
_INTEGER = re.compile(r"^-?[0-9]{1,6}$")
_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True}
_BOOLEANS |= {"false": False, "0": False, "no": False, "off": False}


class DocumentOut(BaseModel):
    id: int
    sha256: str
    size_bytes: int
    media_type: str = Field(description="sniffed from the bytes")
    page_count: int | None
    name: str | None = Field(description="the file name the bytes were first uploaded under")
    created_at: datetime


class DocumentTaskOut(BaseModel):
    id: int
    agent: str
    status: TaskStatus
    priority: int
    payload: Any
    idempotency_key: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None


class UploadOut(BaseModel):
    document: DocumentOut
    name: str | None = Field(description="the file name of this upload, cleaned")
    task: DocumentTaskOut
    duplicate: bool = Field(
        description="the task existed already (these bytes were submitted to this agent "
        "before, or the idempotency key was used) and is returned instead of a new one"
    )


_FORM_SCHEMA = {
    "type": "object",
    "required": ["files", "agent"],
    "properties": {
        "files": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": "one part per file: PDF, PNG, JPEG, GIF, WebP or TIFF",
        },
        "agent": {"type": "string", "maxLength": 100},
        "priority": {
            "type": "integer",
            "minimum": PRIORITY_MIN,
            "maximum": PRIORITY_MAX,
            "default": 0,
        },
        "idempotency_key": {
            "type": "string",
            "maxLength": MAX_KEY_CHARS,
            "description": "with rerun: the key of the new task (`<key>:<i>` for the i-th "
            "file, from 0, when there are several); ignored without rerun",
        },
        "rerun": {
            "type": "boolean",
            "default": False,
            "description": "make a new task even if these bytes were submitted before",
        },
    },
}


async def check_store(app: App) -> None:
    """At start-up: the store uploads go to can be written (StoreUnavailable saying why
    not), so that a wrong bucket or credentials stop the web app, not the first upload."""
    await configured_store(app.settings).check(await app.database())


def router(app: App) -> APIRouter:
    store = spool_for(configured_store(app.settings), app.settings)
    known_agents: set[str] = set()
    swept = False
    routes = APIRouter(tags=["documents"])

    @routes.post(
        "/api/documents",
        status_code=201,
        response_model=list[UploadOut],
        responses={code: {"model": ErrorOut} for code in (409, 413, 415, 503, 507)},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"multipart/form-data": {"schema": _FORM_SCHEMA}},
            }
        },
    )
    async def upload_documents(request: Request) -> list[UploadOut]:
        """Upload documents (multipart: `files` parts, and the form fields) and make each a
        task for `agent` whose payload references it.

        The media type is sniffed from the bytes (415 for anything but PDF and common
        images), a PDF that cannot be opened is refused (422 `unreadable_document`), and
        a request larger than the limit is refused with 413 as soon as that is known. The
        same bytes are stored once; sent to the same agent again they return the task
        they made the first time (`duplicate`), unless `rerun` is true; then
        `idempotency_key` makes retrying the re-run safe (`<key>:<i>` for the i-th file,
        from 0, when there are several).

        A documents folder (or spool) that is full answers 507 `storage_full`; a store
        that cannot be written (read-only, permissions, an object store that cannot be
        reached) 503 `storage_unavailable`; nothing is kept.
        """
        nonlocal swept
        if not swept:  # at the first upload, not in create_app: no disk work at import
            swept = True
            await asyncio.to_thread(store.remove_stale_temp)
        form = _Form(app, store, known_agents)
        try:
            await form.receive(request)
            submitted = await submit_uploads(
                app,
                form.uploads,
                agent=form.agent,
                priority=form.priority,
                idempotency_key=form.idempotency_key,
                rerun=form.rerun,
            )
        except DocumentError as exc:
            raise _api_error(exc) from None
        finally:
            form.discard()
        return await _answer(app, submitted)

    return routes


class _Form:
    """The form as it streams in: fields are checked as they end (the agent against the
    database, before the bytes of any file that follows it); files go to the store."""

    def __init__(self, app: App, store: DocumentStore, known_agents: set[str]) -> None:
        self.app, self.store, self.known_agents = app, store, known_agents
        self.uploads: list[Upload] = []
        self.agent = ""
        self.priority = 0
        self.idempotency_key: str | None = None
        self.rerun = False
        self._given: set[str] = set()
        self._agent_checked = False
        self._part: PartStart | None = None
        self._upload: Upload | None = None
        self._value = bytearray()

    async def receive(self, request: Request) -> None:
        limit = self.store.max_bytes + FORM_OVERHEAD
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _body_too_large(limit)
        content_type = request.headers.get("content-type", "")
        kind = multipart.parse_header(content_type)[0]
        if kind == "application/x-www-form-urlencoded":  # a form without a file input
            raise _invalid("files: no file in the request (files are sent as multipart/form-data)")
        if kind != "multipart/form-data":
            raise ApiError(
                415,
                "unsupported_media_type",
                f"send multipart/form-data (files and form fields), not {content_type!r}",
            )
        reader = MultipartReader(multipart.boundary_of(content_type))
        received = 0
        try:
            async for chunk in request.stream():
                received += len(chunk)
                if received > limit:
                    raise _body_too_large(limit)
                for event in reader.feed(chunk):
                    await self._handle(event)
            reader.close()
        except ClientDisconnect:
            raise ApiError(400, "incomplete_body", "the body ended early") from None
        if "agent" not in self._given:
            raise _invalid("agent: field required")
        if not self.uploads:
            raise _invalid("files: no file in the request")
        await self._check_agent()

    def discard(self) -> None:
        for upload in self.uploads:
            upload.discard()

    async def _handle(self, event: multipart.Event) -> None:
        if isinstance(event, PartStart):
            await self._start(event)
        elif isinstance(event, PartEnd):
            await self._end()
        elif self._upload is not None:
            await self._upload.write(event)
        else:
            self._value += event
            if len(self._value) > MAX_FIELD_BYTES:
                assert self._part is not None
                raise _invalid(f"{self._part.name}: longer than {MAX_FIELD_BYTES} bytes")

    async def _start(self, part: PartStart) -> None:
        self._part = part
        if part.name == "files":
            if len(self.uploads) == MAX_FILES:
                raise _invalid(f"files: at most {MAX_FILES} per request")
            await self._check_agent()
            self._upload = self.store.upload(clean_name(part.filename))
            self.uploads.append(self._upload)
        elif part.name in FIELDS:
            if part.name in self._given:
                raise _invalid(f"{part.name}: given twice")
            self._given.add(part.name)
            self._upload = None
            self._value.clear()
        else:
            raise _invalid(f"{part.name[:100]}: not a field of this form ({', '.join(FIELDS)})")

    async def _end(self) -> None:
        part, upload = self._part, self._upload
        assert part is not None
        if upload is not None:
            if not part.filename and upload.size == 0:
                # What a browser sends for a file input left empty: no file.
                upload.discard()
                self.uploads.remove(upload)
            else:
                await upload.finish()
            return
        try:
            text = self._value.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid(f"{part.name}: not UTF-8 text") from None
        await self._field(part.name, text)

    async def _field(self, name: str, text: str) -> None:
        if name == "agent":
            if not text:
                raise _invalid("agent: a name of 1 to 100 characters")
            if not AGENT_NAME.match(text):
                raise UnknownAgent([text])  # no agent can have that name: 422 unknown_agent
            self.agent = text
            await self._check_agent()
        elif name == "priority":
            if not _INTEGER.match(text) or not PRIORITY_MIN <= int(text) <= PRIORITY_MAX:
                raise _invalid(
                    f"priority: an integer from {PRIORITY_MIN} to {PRIORITY_MAX}, not {text[:40]!r}"
                )
            self.priority = int(text)
        elif name == "idempotency_key":
            if not 1 <= len(text) <= MAX_KEY_CHARS or "\x00" in text:
                raise _invalid(f"idempotency_key: 1 to {MAX_KEY_CHARS} characters, no NUL")
            self.idempotency_key = text
        elif name == "rerun":
            if text.strip().lower() not in _BOOLEANS:
                raise _invalid(f"rerun: true or false, not {text[:40]!r}")
            self.rerun = _BOOLEANS[text.strip().lower()]

    async def _check_agent(self) -> None:
        """Once the agent is known, and before storing any file for it (UnknownAgent is
        answered 422 by the app's handler)."""
        if self.agent and not self._agent_checked:
            await check_agent(self.app, self.agent, self.known_agents)
            self._agent_checked = True


async def _answer(app: App, submitted: list[Submitted]) -> list[UploadOut]:
    async with app.connection() as conn:
        cur = await conn.execute(Q.documents_tasks, {"ids": [s.task_id for s in submitted]})
        tasks = {row["id"]: DocumentTaskOut.model_validate(row) for row in await cur.fetchall()}
    return [
        UploadOut(
            document=DocumentOut.model_validate(s.document, from_attributes=True),
            name=s.name,
            task=tasks[s.task_id],
            duplicate=s.duplicate,
        )
        for s in submitted
    ]


def _invalid(message: str) -> ApiError:
    return ApiError(422, "invalid_request", message)


def _body_too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "too_large",
        f"the request body is larger than {limit} bytes ({MAX_BYTES_VARIABLE} and "
        f"{FORM_OVERHEAD} bytes for the form); send smaller files, or fewer per request",
    )


def _api_error(exc: DocumentError) -> ApiError:
    if isinstance(exc, TooLarge):
        return ApiError(413, "too_large", str(exc))
    if isinstance(exc, UnsupportedMediaType):
        return ApiError(415, "unsupported_media_type", str(exc))
    if isinstance(exc, UnreadableDocument):
        return ApiError(422, "unreadable_document", str(exc))
    if isinstance(exc, IdempotencyConflict):
        return ApiError(409, "conflict", str(exc))
    if isinstance(exc, MalformedMultipart):
        return ApiError(400, "malformed_multipart", str(exc))
    return ApiError(422, "invalid_document", str(exc))
