"""The review queue over HTTP, and its two pages.

    GET  /api/reviews                    pending reviews, oldest first (agent, tenant, cursor)
    GET  /api/reviews/backlog            pending reviews by agent and tenant
    GET  /api/reviews/metrics            backlog, time to review, fields corrected, accuracy
    GET  /api/tasks/{id}/review          a review: result, fields, boxes, checks, versions
    POST /api/tasks/{id}/review          accept, or correct fields (based on a version)
    GET  /api/tasks/{id}/pages/{n}.png   a page of the task's document, rendered
    GET  /api/agents/{agent}/review-threshold, PUT (set; null resets to the code's)
    GET  /reviews, /reviews/{id}         the Review page and the review screen

Who reviews: the name of the token (CONVEYOR_API_TOKENS; the single CONVEYOR_API_TOKEN is
"operator"), from `Authorization: Bearer` or from the browser's session, the one change a
session may make (see web/app.py). Without tokens there is nobody to name: the body's
`reviewer` is recorded, or "anonymous".
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.types import Scope

from conveyor.agents import evidence
from conveyor.app import App
from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.stores import DocumentMissing
from conveyor.documents.stores.reader import document_file
from conveyor.errors import TaskNotFound
from conveyor.queue import reviews as thresholds
from conveyor.reviews import pages
from conveyor.reviews import queue as reviews
from conveyor.reviews.corrections import InvalidCorrection, is_extraction, reviewed_fields
from conveyor.web import dashboard
from conveyor.web.errors import ApiError, parse_id
from conveyor.web.models import Text, Timestamp, storable_json

_REVIEW_POST = re.compile(r"^/api/tasks/[0-9]{1,19}/review$")
ANONYMOUS = "anonymous"


def session_may_post(scope: Scope) -> bool:
    """The one change a dashboard session may make: a review (a person, in the browser)."""
    return scope.get("method") == "POST" and bool(_REVIEW_POST.match(scope["path"]))


class ReviewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "correct"]
    version: int = Field(ge=1, le=2**31 - 1, description="the result's version you reviewed")
    # Checked as the model is read (a 422, as for every body): a NUL or a lone surrogate
    # that reached PostgreSQL would be its error, a 500.
    corrections: Annotated[dict[str, Any], AfterValidator(storable_json)] = Field(
        default_factory=dict,
        description='dotted field -> new value, e.g. {"total": "118.00"}; for \'correct\'',
    )
    reviewer: Text | None = Field(
        default=None, max_length=200, description="who, when the server has no tokens"
    )


class ThresholdIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    review_below: float | None = Field(
        ge=0, le=1, description="null: back to the threshold declared in code"
    )


def _task_id(text: str) -> int:
    number = parse_id(text)
    if number is None:
        raise TaskNotFound(text)
    return number


def _who(request: Request, body: ReviewIn) -> str:
    who = getattr(request.state, "who", None)
    if isinstance(who, str):
        return who  # the token's name, whatever the body says
    return body.reviewer or ANONYMOUS


@contextmanager
def _as_api_errors() -> Iterator[None]:
    """The review queue's refusals, each with a code of its own."""
    try:
        yield
    except InvalidCorrection as exc:
        raise ApiError(422, "invalid_correction", str(exc)) from None
    except reviews.ReviewConflict as exc:
        raise ApiError(409, "review_conflict", str(exc)) from None
    except reviews.NoReviewPending as exc:
        raise ApiError(409, "no_review_pending", str(exc)) from None


def router(app: App) -> APIRouter:
    api = APIRouter()

    @api.get("/api/reviews", tags=["reviews"])
    async def list_reviews(
        agent: Annotated[Text | None, Query(max_length=100)] = None,
        tenant: Annotated[
            Text | None, Query(max_length=255, description='"" for tasks without one')
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[str | None, Query(max_length=80)] = None,
    ) -> dict[str, Any]:
        """Pending reviews, oldest first, a page at a time."""
        after = reviews.Cursor.parse(cursor) if cursor else None
        async with app.connection() as conn:
            rows, more = await reviews.pending(
                conn, agent=agent, tenant=tenant, after=after, limit=limit
            )
        return {"items": rows, "next_cursor": more.text() if more else None}

    @api.get("/api/reviews/backlog", tags=["reviews"])
    async def backlog() -> dict[str, Any]:
        """Pending reviews by agent and tenant, the oldest backlog first."""
        async with app.connection() as conn:
            rows = await reviews.backlog(conn)
        return {"pending": sum(r["pending"] for r in rows), "groups": rows}

    @api.get("/api/reviews/metrics", tags=["reviews"])
    async def metrics(since: Timestamp | None = None, until: Timestamp | None = None) -> Any:
        """Per agent: backlog, time to review, fields corrected; accuracy as reviewed per
        field (the machine's value right, or corrected by a person)."""
        from conveyor.reviews.metrics import review_metrics

        async with app.connection() as conn:
            return await review_metrics(conn, since=since, until=until)

    @api.get("/api/tasks/{task_id}/review", tags=["reviews"])
    async def get_review(task_id: str) -> dict[str, Any]:
        """A task's review: its result (the current version), each field with the
        machine's confidence and the words behind it on the page, the failed cross-checks,
        and every version with who made it and when."""
        number = _task_id(task_id)
        async with app.connection() as conn:
            with _as_api_errors():
                review, versions = await reviews.get(conn, number)
        result = review.pop("result")
        payload = review.pop("payload")
        layouts, document = await _layouts(app, payload)
        data = result.get("data") if is_extraction(result) else result
        boxes = evidence.locate(data, layouts) if layouts else {}
        if isinstance(result, dict) and isinstance(result.get("evidence"), dict):
            boxes.update(result["evidence"])
        confidences = reviewed_fields(result)
        fields = [
            {
                "field": path,
                "value": value,
                "confidence": confidences.get(path),
                "boxes": boxes.get(path, []),
            }
            for path, value in evidence.leaves(data)
            if path and (path != "confidence" or is_extraction(result))
        ]
        return {
            "review": review,
            "result": result,
            "fields": fields,
            "checks": result.get("checks", []) if isinstance(result, dict) else [],
            "document": None
            if document is None
            else {
                "pages": [
                    {"number": p.number, "width": p.width, "height": p.height} for p in layouts
                ]
            },
            "versions": versions,
        }

    @api.post("/api/tasks/{task_id}/review", tags=["reviews"])
    async def post_review(task_id: str, body: ReviewIn, request: Request) -> dict[str, Any]:
        """Accept the result, or correct fields of it: a new version, the machine's kept.
        `version` is the one you reviewed: if another reviewer decided first, 409."""
        number = _task_id(task_id)
        async with app.connection() as conn:
            with _as_api_errors():
                decision = await reviews.decide(
                    conn,
                    number,
                    action=body.action,
                    version=body.version,
                    who=_who(request, body),
                    corrections=body.corrections,
                )
        return {
            "task_id": decision.task_id,
            "status": decision.status,
            "version": decision.version,
            "reviewed_by": decision.reviewed_by,
            "reviewed_at": decision.reviewed_at,
            "changes": decision.changes,
        }

    @api.get(
        "/api/tasks/{task_id}/pages/{number}.png",
        tags=["reviews"],
        response_class=Response,
        responses={200: {"content": {"image/png": {}}, "description": "the page as PNG"}},
    )
    async def page_png(task_id: str, number: int) -> Response:
        """A page of the task's document as PNG, for the review screen."""
        task = await app.get_task_async(_task_id(task_id))
        document = pages.document_of(task.payload)
        if document is None:
            raise ApiError(404, "not_found", f"task {task.id} is not about a stored PDF")
        path = await _document_path(app, document.sha256)
        try:
            png = await asyncio.to_thread(pages.render_png, path, number)
        except UnreadableDocument as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        return Response(png, media_type="image/png", headers={"Cache-Control": "private"})

    @api.get("/api/agents/{agent}/review-threshold", tags=["reviews"])
    async def get_threshold(agent: str) -> dict[str, Any]:
        async with app.connection() as conn:
            rows = await thresholds.thresholds(conn)
        for row in rows:
            if row["name"] == agent:
                return row
        from conveyor.errors import UnknownAgent

        raise UnknownAgent([agent])

    @api.put("/api/agents/{agent}/review-threshold", tags=["reviews"])
    async def put_threshold(agent: str, body: ThresholdIn) -> dict[str, Any]:
        """Set the agent's review threshold (it wins over the code's), or null to go back
        to the code's. Applies to the next completion, on every worker."""
        async with app.connection() as conn:
            if body.review_below is None:
                return await thresholds.reset_threshold(conn, agent)
            return await thresholds.set_threshold(conn, agent, body.review_below)

    _pages(api, app)
    return api


async def _document_path(app: App, sha256: str) -> Any:
    try:
        return await document_file(await app.database(), app.settings, sha256)
    except DocumentMissing as exc:
        raise ApiError(404, "not_found", str(exc)) from None


async def _layouts(app: App, payload: Any) -> tuple[list[Any], pages.Document | None]:
    document = pages.document_of(payload)
    if document is None:
        return [], None
    try:
        path = await document_file(await app.database(), app.settings, document.sha256)
        layouts = await asyncio.to_thread(pages.page_layouts, path, evidence.MAX_PAGES)
    except (DocumentMissing, UnreadableDocument):
        return [], None  # the screen shows the fields without the page
    return layouts, document


def _pages(api: APIRouter, app: App) -> None:
    signed_in = app.settings.named_tokens() != {}

    @api.get("/reviews", response_class=HTMLResponse, include_in_schema=False)
    async def review_queue(
        poll: Annotated[float, Query(ge=0.05, le=3600)] = 10.0,
    ) -> HTMLResponse:
        body = dashboard.template("reviews.html").substitute()
        return HTMLResponse(
            dashboard.page(
                "Review · Conveyor",
                body,
                script="reviews.js",
                data={"poll": str(poll)},
                signed_in=signed_in,
            )
        )

    @api.get("/reviews/{task_id}", response_class=HTMLResponse, include_in_schema=False)
    async def review_screen(task_id: str) -> HTMLResponse:
        number = _task_id(task_id)
        body = dashboard.template("review.html").substitute(id=number)
        return HTMLResponse(
            dashboard.page(
                f"Review of task {number} · Conveyor",
                body,
                script="review.js",
                data={"task": str(number)},
                signed_in=signed_in,
            )
        )
