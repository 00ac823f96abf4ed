"""The FastAPI application: the HTTP API over an App.

from conveyor.web import create_app
api = create_app(app)        # an ASGI app; `conveyor web --app MODULE:APP` serves it
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import FastAPI, Query, Response, status
from fastapi.responses import RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conveyor import metrics, queue
from conveyor.app import App
from conveyor.errors import TaskNotFound
from conveyor.queue import NewTask
from conveyor.states import TaskStatus
from conveyor.web import callbacks, dashboard, documents, errors, reviews
from conveyor.web import events as event_stream
from conveyor.web import metrics as metrics_routes
from conveyor.web.errors import ApiError, error_response, parse_id
from conveyor.web.models import (
    ErrorOut,
    Health,
    TaskCreate,
    TaskOut,
    TaskPage,
    TaskSummary,
    Text,
    Timestamp,
)
from conveyor.web.security import ServedNames, SiteGuard
from conveyor.web.sessions import Sessions
from conveyor.web.throttle import LoginThrottle

MAX_JSON_BODY = 2 << 20  # a task's payload is capped at 1 MiB; documents are uploaded apart

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 403, 404, 409, 413, 421, 422, 503)
}


def create_app(app: App) -> FastAPI:
    hub = event_stream.EventHub()  # this process's one LISTEN connection, for /api/events

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        await app.database()
        await documents.check_store(app)  # a store that cannot be written stops start-up
        await hub.start(app)
        yield
        await hub.stop()
        await app.aclose()

    api = FastAPI(
        title="Conveyor",
        summary="Long-running, rate-limited AI agent tasks on PostgreSQL.",
        version="0.1.0",
        lifespan=lifespan,
        responses=ERRORS,
        # Not a 307 to the path without its trailing slash: an id with a slash in it
        # ("/api/tasks/a%2F") names no task, a documented 404 like any other.
        redirect_slashes=False,
    )
    errors.install(api)
    api.add_middleware(BodyLimit, max_bytes=MAX_JSON_BODY)
    tokens = app.settings.named_tokens()
    sessions = Sessions(tokens) if tokens else None
    if tokens and sessions is not None:
        api.add_middleware(BearerAuth, tokens=tokens, sessions=sessions)
    # Added last, so outermost: a request from another site is refused before its body
    # is read or its token looked at. make_server adds the host it listens on.
    api.state.served_names = ServedNames(app.settings)
    api.add_middleware(SiteGuard, names=api.state.served_names)
    api.state.sessions = sessions
    api.state.login_throttle = throttle = LoginThrottle()
    _routes(api, app)
    api.include_router(documents.router(app))
    api.include_router(callbacks.router(app))
    api.include_router(metrics_routes.router(app))
    api.state.events = hub
    api.include_router(event_stream.router(hub))
    api.include_router(reviews.router(app))
    api.include_router(dashboard.router(app, sessions, throttle))
    dashboard.mount_static(api)
    return api


def _routes(api: FastAPI, app: App) -> None:
    # Unhealthy is a 503 with the same body, not the ErrorOut the other routes answer with.
    @api.get(
        "/healthz",
        response_model=Health,
        responses={503: {"model": Health}},
        tags=["operations"],
    )
    async def healthz(response: Response) -> Health:
        try:
            async with app.connection() as conn:
                await conn.execute("SELECT 1")
        except Exception:  # any failure means "not healthy", which is the answer
            response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
            return Health(status="unavailable", database="unreachable")
        return Health(status="ok", database="ok")

    @api.post("/api/tasks", response_model=TaskOut, status_code=201, tags=["tasks"])
    async def create_task(body: TaskCreate) -> TaskOut:
        """Enqueue a task. With an `idempotency_key` already used for the agent, the
        existing task is returned instead of a new one."""
        (task_id,) = await app.enqueue_many_async([NewTask(**body.model_dump())])
        return TaskOut.of(await app.get_task_async(task_id))

    @api.get("/api/tasks", response_model=TaskPage, tags=["tasks"])
    async def list_tasks(
        status: TaskStatus | None = None,
        agent: Annotated[Text | None, Query(max_length=100)] = None,
        tenant: Annotated[
            Text | None, Query(max_length=255, description='"" for tasks without one')
        ] = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[str | None, Query(max_length=40)] = None,
        top_level: Annotated[
            bool, Query(description="only the tasks nobody spawned (no children listed)")
        ] = False,
    ) -> TaskPage:
        """Tasks, newest first, a page at a time; filters combine. Each with its family:
        its parent and root, its children's progress, its own cost and its tree's."""
        before = _cursor(cursor)
        async with app.connection() as conn:
            rows = await queue.list_tasks(
                conn,
                status=status,
                agent=agent,
                tenant=tenant,
                since=since,
                until=until,
                before_id=before,
                limit=limit + 1,
                top_level=top_level,
            )
            # Read apart from the listing: index probes for this page's tasks only.
            usage = await metrics.task_usage(conn, [r["id"] for r in rows[:limit]])
        # A task pruned between the two reads is left out, as if listed a moment later.
        items = [
            TaskSummary.model_validate({**r, **usage[r["id"]]})
            for r in rows[:limit]
            if r["id"] in usage
        ]
        more = len(rows) > limit
        return TaskPage(items=items, next_cursor=str(rows[limit - 1]["id"]) if more else None)

    @api.get("/api/tasks/{task_id}", response_model=TaskOut, tags=["tasks"])
    async def get_task(task_id: str) -> TaskOut:
        """A task with all its attempts."""
        return TaskOut.of(await app.get_task_async(_task_id(task_id)))

    @api.post("/api/tasks/{task_id}/cancel", response_model=TaskOut, tags=["tasks"])
    async def cancel_task(task_id: str) -> TaskOut:
        """Cancel an enqueued or running task (its agent is stopped)."""
        return TaskOut.of(await app.cancel_async(_task_id(task_id)))

    @api.post("/api/tasks/{task_id}/retry", response_model=TaskOut, tags=["tasks"])
    async def retry_task(task_id: str) -> TaskOut:
        """Enqueue a failed or cancelled task again, with a fresh allowance of attempts."""
        return TaskOut.of(await app.retry_async(_task_id(task_id)))


def _task_id(text: str) -> int:
    task_id = parse_id(text)
    if task_id is None:
        raise TaskNotFound(text)
    return task_id


def _cursor(text: str | None) -> int | None:
    if text is None:
        return None
    before = parse_id(text)
    if before is None:
        raise ApiError(422, "invalid_request", f"cursor: not a cursor this API gave: {text!r}")
    return before


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413 before the app sees them: by
    Content-Length when it is given, else by reading at most `max_bytes` + 1 bytes (the
    JSON routes need the whole body anyway). Uploads, streamed to disk, set their own,
    larger limit and are passed through."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/api/documents"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _too_large(self.max_bytes)(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await _too_large(self.max_bytes)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _too_large_text(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


def _too_large(limit: int) -> ASGIApp:
    return error_response(413, "too_large", _too_large_text(limit))


class BearerAuth:
    """With CONVEYOR_API_TOKEN or CONVEYOR_API_TOKENS set, /api and the dashboard need
    `Authorization: Bearer`, or for reading, the session cookie of /login (browsers; see
    web/dashboard.py). The one change a session may make is a review (web/reviews.py): a
    person reviews in the browser, and other sites cannot post here (web/security.py) nor
    make the browser send the cookie (SameSite=Strict). Health checks stay open; callbacks
    from external jobs carry a signature instead; signing out ends only the caller's own
    session. Who is asking (the token's name) is `request.state.who`."""

    OPEN = ("/healthz", "/api/callbacks/", "/login", "/logout", "/static/")

    def __init__(self, app: ASGIApp, tokens: dict[str, str], sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions
        self.expected = [(name, f"Bearer {token}".encode()) for name, token in tokens.items()]

    def _bearer(self, given: bytes) -> str | None:
        found = None
        for name, expected in self.expected:  # every one compared: the time says nothing
            if hmac.compare_digest(given, expected):
                found = name
        return found

    def _session(self, scope: Scope) -> str | None:
        if scope.get("method") in ("GET", "HEAD") or reviews.session_may_post(scope):
            return self.sessions.who(scope)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.OPEN):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(b"authorization", b"")
        who = self._bearer(given) or self._session(scope)
        if who is not None:
            scope.setdefault("state", {})["who"] = who
        else:
            if dashboard.is_page(scope):
                await RedirectResponse("/login", status_code=303)(scope, receive, send)
                return
            response = error_response(
                401,
                "unauthorized",
                "this API needs Authorization: Bearer <CONVEYOR_API_TOKEN>",
                {"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
