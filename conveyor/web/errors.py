"""Every error the API answers is JSON: {"error": {"code": "...", "message": "..."}}.

Bad input is a 4xx that names what was wrong; a 5xx is always a bug.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from conveyor.db.pool import TRANSIENT_ERRORS
from conveyor.documents.errors import StorageFull, StorageUnavailable
from conveyor.errors import (
    DatabaseUnavailable,
    InvalidTask,
    InvalidTransition,
    TaskNotFound,
    UnknownAgent,
)

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message
        super().__init__(message)


def parse_id(text: str) -> int | None:
    """A database id written in a URL: a positive 64-bit integer in ASCII digits, else None.
    (Ids of any other shape name nothing: the routes answer 404, not 422.)"""
    if text.isascii() and text.isdigit() and 0 < int(text) < 2**63:
        return int(text)
    return None


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def storage_response(exc: StorageUnavailable) -> JSONResponse:
    """507 Insufficient Storage when the documents folder is full, 503 when it cannot be
    written (read-only, permissions) or failed otherwise."""
    if isinstance(exc, StorageFull):
        return error_response(507, "storage_full", str(exc))
    return error_response(503, "storage_unavailable", str(exc))


# FastAPI's answer when json.loads fails with something else than a syntax error.
_UNPARSABLE_BODY = "There was an error parsing the body"


def _unparsable(cause: BaseException | None) -> str:
    if isinstance(cause, RecursionError):
        return "the body is not valid JSON: it is nested too deeply"
    if isinstance(cause, UnicodeDecodeError):
        return f"the body is not valid JSON: it is not UTF-8 ({cause.reason} at byte {cause.start})"
    # e.g. an integer of more digits than Python converts (sys.get_int_max_str_digits)
    return f"the body is not valid JSON: {cause or 'it could not be parsed'}"


def _describe_validation(exc: RequestValidationError) -> tuple[int, str, str]:
    problems = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            # FastAPI's own error says only "JSON decode error": say where, and what.
            detail = error.get("ctx", {}).get("error") or error.get("msg")
            loc = error.get("loc", ())
            at = f" (at character {loc[1]})" if len(loc) > 1 and isinstance(loc[1], int) else ""
            return 400, "malformed_json", f"the body is not valid JSON: {detail}{at}"
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {error.get('msg')}")
    return 422, "invalid_request", "; ".join(problems) or "invalid request"


#: What the core's own exceptions mean over HTTP.
CORE_ERRORS: dict[type[Exception], tuple[int, str]] = {
    UnknownAgent: (422, "unknown_agent"),
    InvalidTask: (422, "invalid_task"),
    TaskNotFound: (404, "not_found"),
    InvalidTransition: (409, "conflict"),
}


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(*_describe_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {
            404: "not_found",
            405: "method_not_allowed",
            401: "unauthorized",
            413: "too_large",
            415: "unsupported_media_type",
        }.get(exc.status_code, "error")
        if exc.status_code == 400 and exc.detail == _UNPARSABLE_BODY:
            return error_response(400, "malformed_json", _unparsable(exc.__cause__))
        message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        return error_response(exc.status_code, code, message, headers=getattr(exc, "headers", None))

    async def core_error(request: Request, exc: Exception) -> JSONResponse:
        # The most specific entry wins: UnknownAgent is also an InvalidTask.
        status, code = next(CORE_ERRORS[t] for t in type(exc).__mro__ if t in CORE_ERRORS)
        return error_response(status, code, str(exc))

    for error_type in CORE_ERRORS:
        app.add_exception_handler(error_type, core_error)

    @app.exception_handler(DatabaseUnavailable)
    async def unavailable(request: Request, exc: DatabaseUnavailable) -> JSONResponse:
        return error_response(503, "database_unavailable", str(exc), {"Retry-After": "1"})

    async def transient(request: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable during a request: %s", exc)
        return error_response(
            503,
            "database_unavailable",
            "the database is unavailable; try again",
            {"Retry-After": "1"},
        )

    @app.exception_handler(StorageUnavailable)
    async def storage(request: Request, exc: StorageUnavailable) -> JSONResponse:
        # The operator's problem, not the client's: say it in the log too.
        log.error("an upload could not be stored: %s", exc)
        return storage_response(exc)

    for error_type in TRANSIENT_ERRORS:
        # DatabaseUnavailable is one of them, and its own message says more (which server,
        # down or hung): it keeps the handler above.
        if error_type is not DatabaseUnavailable:
            app.add_exception_handler(error_type, transient)
