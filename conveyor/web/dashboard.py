"""The operator dashboard: `GET /` and `GET /tasks/{id}`, plain HTML and a little JS.

The pages are rendered here from the templates beside this module (string.Template, every
value escaped); the numbers come from the JSON API (`/api/metrics`, `/api/tasks`,
`/api/costs`), which the page's script reads again when `/api/events` says something
changed, and every 10 s whatever it says (proxies can drop a stream's bytes silently).
Nothing is fetched from the internet and nothing is built: the static folder is served
as it is.

With CONVEYOR_API_TOKEN set, a browser cannot send `Authorization` on its own, and an
`EventSource` cannot send it at all. `/login` takes the token once, in a form, and answers
a session cookie (web/sessions.py): a new signed value at every sign-in, expiring after
12 hours, HttpOnly (scripts cannot read it), SameSite=Strict (other sites cannot make the
browser send it), Secure over https, never the token. Wrong tokens are throttled per
client address (web/throttle.py). `POST /logout` (the header's "Sign out") ends the
session. The cookie is accepted for GET and HEAD only: it lets a browser read, and every
change (POST) still needs the bearer token. Other sites cannot post here at all
(web/security.py), and the pages run no inline script, under a strict CSP.
"""

from __future__ import annotations

import hmac
import html
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from string import Template
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from conveyor.app import App
from conveyor.errors import TaskNotFound
from conveyor.reviews import queue as review_queue
from conveyor.web.errors import parse_id
from conveyor.web.sessions import COOKIE, Sessions
from conveyor.web.throttle import LoginThrottle

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
PAGES = ("/", "/tasks/", "/reviews")


def template(name: str) -> Template:
    return Template((TEMPLATES / name).read_text())


def is_page(scope: Scope) -> bool:
    """A dashboard page, where a browser without a session is sent to /login."""
    path: str = scope["path"]
    return scope.get("method") == "GET" and (
        path == "/" or path.startswith(("/tasks/", "/reviews"))
    )


SIGN_OUT = (
    '<form method="post" action="/logout" class="signout">'
    '<button type="submit" class="quiet">Sign out</button></form>'
)


def page(
    title: str,
    body: str,
    *,
    script: str = "",
    data: dict[str, str] | None = None,
    signed_in: bool = False,
) -> str:
    attrs = " ".join(f'data-{k}="{html.escape(v)}"' for k, v in (data or {}).items())
    return template("page.html").substitute(
        title=html.escape(title),
        body=body,
        body_attrs=attrs,
        script=f'<script src="/static/{script}" defer></script>' if script else "",
        account=SIGN_OUT if signed_in else "",
    )


def login_page(error: str = "") -> str:
    body = template("login.html").substitute(
        error=f'<p class="error">{html.escape(error)}</p>' if error else ""
    )
    return page("Sign in · Conveyor", body)


def router(app: App, sessions: Sessions | None, throttle: LoginThrottle) -> APIRouter:
    """The pages; `sessions` is None without a token (nobody signs in)."""
    api = APIRouter(include_in_schema=False)  # pages, not API operations
    signed_in = sessions is not None

    @api.get("/", response_class=HTMLResponse)
    async def dashboard(
        poll: Annotated[float, Query(ge=0.05, le=3600)] = 10.0,
    ) -> HTMLResponse:
        """The overview. `?poll=SECONDS` sets the fallback poll (tests make it short)."""
        body = template("dashboard.html").substitute()
        html_page = page(
            "Conveyor",
            body,
            script="dashboard.js",
            data={"poll": str(poll)},
            signed_in=signed_in,
        )
        return HTMLResponse(html_page)

    @api.get("/tasks/{task_id}", response_class=HTMLResponse)
    async def task_page(task_id: str) -> HTMLResponse:
        number = parse_id(task_id)
        if number is None:
            raise TaskNotFound(task_id)
        task = await app.get_task_async(number)
        rows = "".join(_attempt_row(a) for a in task.attempt_history) or (
            '<tr><td colspan="10" class="empty">no attempts yet</td></tr>'
        )
        body = template("task.html").substitute(
            id=task.id,
            agent=html.escape(task.agent),
            status=html.escape(str(task.status)),
            priority=task.priority,
            attempts=f"{task.attempts} of {task.max_attempts}",
            tenant=html.escape(task.tenant or "—"),
            created=_time(task.created_at),
            started=_time(task.started_at),
            finished=_time(task.finished_at),
            error=html.escape(task.error or ""),
            payload=html.escape(json.dumps(task.payload, indent=2, ensure_ascii=False)),
            result=html.escape(json.dumps(task.result, indent=2, ensure_ascii=False)),
            attempt_rows=rows,
        )
        body += await _review_section(app, task.id)
        html_page = page(
            f"Task {task.id} · Conveyor",
            body,
            script="task.js",
            data={"task": str(task.id), "status": str(task.status), "agent": task.agent},
            signed_in=signed_in,
        )
        return HTMLResponse(html_page)

    @api.get("/login", response_class=HTMLResponse)
    async def login_form() -> HTMLResponse:
        return HTMLResponse(login_page())

    @api.post("/login")
    async def login(request: Request, token: Annotated[str, Form(max_length=1000)]) -> Response:
        tokens = app.settings.named_tokens()
        if not tokens or sessions is None:
            return RedirectResponse("/", status_code=303)
        address = request.client.host if request.client else ""
        wait = throttle.wait(address)
        if wait > 0:
            # Not even looked at: while closed, a right token cannot be told from a wrong one.
            seconds = math.ceil(wait)
            return HTMLResponse(
                login_page(f"Too many wrong tokens from your address: try again in {seconds} s."),
                status_code=429,
                headers={"Retry-After": str(seconds)},
            )
        name = None
        for candidate, expected in tokens.items():  # all compared: the time says nothing
            if hmac.compare_digest(token.encode(), expected.encode()):
                name = candidate
        if name is None:
            throttle.failed(address)
            return HTMLResponse(login_page("That is not this server's token."), status_code=401)
        throttle.succeeded(address)
        answer = RedirectResponse("/", status_code=303)
        answer.set_cookie(
            COOKIE,
            sessions.issue(name),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            max_age=int(sessions.lifetime),
        )
        return answer

    @api.post("/logout")
    async def logout(request: Request) -> Response:
        """End this browser's session (open to all: it can only end the caller's own)."""
        if sessions is None:
            return RedirectResponse("/", status_code=303)
        value = sessions.of_scope(request.scope)
        if value is not None:
            sessions.revoke(value)
        answer = RedirectResponse("/login", status_code=303)
        answer.delete_cookie(
            COOKIE, httponly=True, samesite="strict", secure=request.url.scheme == "https"
        )
        return answer

    return api


async def _review_section(app: App, task_id: int) -> str:
    """The task's review and its result's versions (the audit trail), if it has a review."""
    async with app.connection() as conn:
        try:
            review, versions = await review_queue.get(conn, task_id)
        except review_queue.NoReviewPending:
            return ""
    state = html.escape(review["status"])
    if review["status"] == "pending":
        said = f'pending: <a href="/reviews/{task_id}">review it</a>'
    else:
        said = f"{state} by {html.escape(review['reviewed_by'])}, {_time(review['reviewed_at'])}"
    items = []
    for v in versions:
        changes = "".join(
            f"<li><code>{html.escape(field)}</code>: {html.escape(_shown(c.get('from')))} → "
            f"{html.escape(_shown(c.get('to')))}</li>"
            for field, c in (v["corrections"] or {}).items()
        )
        made = (
            "the machine's"
            if v["action"] == "machine"
            else f"{html.escape(v['action'])} by {html.escape(v['made_by'])}"
        )
        items.append(
            f'<li data-version="{v["version"]}">version {v["version"]}: '
            f"{made}, {_time(v['made_at'])}"
            f"{f'<ul>{changes}</ul>' if changes else ''}</li>"
        )
    trail = "".join(items) or "<li>version 1: the machine's</li>"
    return (
        '<main><section class="card" id="review">'
        f'<h2>Review <span class="badge r-{state}">{state}</span></h2>'
        f"<p>{said} (confidence {review['confidence']:.2f}, below {review['review_below']}; "
        f"the result above is version {review['version']})</p>"
        f'<ol class="versions" id="audit">{trail}</ol></section></main>'
    )


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


def mount_static(api: Any) -> None:
    api.mount("/static", StaticFiles(directory=STATIC), name="static")


def _time(value: datetime | None) -> str:
    if value is None:
        return "—"
    value = value.astimezone(UTC)  # the session's time zone need not be UTC
    return f'<time datetime="{value.isoformat()}">{value:%Y-%m-%d %H:%M:%S} UTC</time>'


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def _attempt_row(a: Any) -> str:
    cells = [
        str(a.attempt),
        html.escape(a.status),
        html.escape(a.worker_id or "—"),
        f"<code>{html.escape(a.run_id or '—')}</code>",
        f"<code>{html.escape(a.trace_id or '—')}</code>",
        html.escape(a.model or "—"),
        f"{a.input_tokens or 0:,} / {a.output_tokens or 0:,}",
        f"{_money(a.llm_cost_usd)} / {_money(a.compute_cost_usd)}",
        _time(a.started_at),
        html.escape(a.error or ""),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
