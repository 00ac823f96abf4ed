"""The simulator's HTTP face: the OpenAI route, the /sim/ routes, and errors in OpenAI's shape.

Every response carries x-request-id. Malformed requests get a 400 (FastAPI's default would
be a 422 in its own shape), which is logged when it was meant for the OpenAI route.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from conveyor.testing.protocol import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    CompletionUsage,
    ErrorBody,
    ErrorDetail,
    Fault,
    cut_to_cap,
    prompt_tokens,
)
from conveyor.testing.recorder import LogEntry, Stats
from conveyor.testing.window import Decision, Limits

if TYPE_CHECKING:
    from conveyor.testing.simulator import Simulator

COMPLETIONS = "/v1/chat/completions"


def create_app(simulator: Simulator) -> FastAPI:
    app = FastAPI(title="Conveyor LLM simulator", docs_url=None, redoc_url=None)
    app.add_exception_handler(RequestValidationError, _validation_failed(simulator))
    app.add_exception_handler(StarletteHTTPException, _http_error(simulator))

    @app.post(COMPLETIONS, response_model=None)
    async def chat_completions(request: ChatCompletionRequest, raw: Request) -> Response:
        return await complete(simulator, request, new_request_id(), raw)

    @app.get("/sim/log")
    async def get_log() -> list[LogEntry]:
        return simulator.log()

    @app.get("/sim/stats")
    async def get_stats() -> Stats:
        return simulator.stats()

    @app.get("/sim/limits")
    async def get_limits() -> Limits:
        return simulator.limits

    @app.post("/sim/limits")
    async def post_limits(changes: Limits) -> Limits:
        # Only the fields sent change: {"tpm": 500} keeps rpm and window_seconds.
        return simulator.set_limits(**changes.model_dump(exclude_unset=True))

    @app.post("/sim/reset", status_code=204)
    async def post_reset() -> None:
        simulator.reset()

    return app


async def complete(
    simulator: Simulator,
    request: ChatCompletionRequest,
    request_id: str,
    raw: Request | None = None,
) -> Response:
    """Answer one well-formed chat completion: admitted (200) or refused (429)."""
    if request.stream:
        message = "stream=true is not supported by the simulator"
        return invalid_request(simulator, request_id, message, param="stream")
    kind = request.response_format.type if request.response_format else "text"
    if simulator.formats is not None and kind not in simulator.formats:
        # As llama-cpp-python's server does: an error naming the format (its 500).
        taken = " or ".join(sorted(simulator.formats))
        message = f"response_format type must be {taken}, not {kind}"
        return _error(simulator, request_id, simulator.format_refusal, message)
    try:
        reply = simulator.responder(request)
    except Fault as fault:
        return _error(simulator, request_id, fault.status, fault.message)
    content, completion_tokens, finish_reason = cut_to_cap(reply, request.token_cap)
    decision, entry = simulator.recorder.admit(
        request_id=request_id,
        model=request.model,
        prompt_tokens=prompt_tokens(request),
        completion_tokens=completion_tokens,
    )
    headers = {"x-request-id": request_id, **rate_limit_headers(decision)}
    if not decision.admitted:
        return rate_limited(decision, entry, headers)
    try:
        if not await _answered_in_time(raw, simulator.latency(completion_tokens)):
            # The client closed the connection: a real server that notices stops working
            # on the request, and so does the simulator (counted: tests look).
            simulator.abandoned += 1
            return Response(status_code=499)
    finally:
        simulator.recorder.finish(entry)
    answer = ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(entry.wall_time),
        model=request.model,
        choices=[Choice(message=AssistantMessage(content=content), finish_reason=finish_reason)],
        usage=CompletionUsage(
            prompt_tokens=entry.prompt_tokens,
            completion_tokens=entry.completion_tokens,
            total_tokens=entry.total_tokens,
        ),
    )
    return JSONResponse(answer.model_dump(), headers=headers)


async def _answered_in_time(raw: Request | None, latency: float) -> bool:
    """Sleep the latency out, unless the client goes first (False)."""
    if raw is None:
        await asyncio.sleep(latency)
        return True
    working = asyncio.ensure_future(asyncio.sleep(latency))
    # The body is read: the next message the server gets is the client's disconnect.
    gone = asyncio.ensure_future(raw.receive())
    try:
        await asyncio.wait({working, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        working.cancel()
        gone.cancel()
    return not (gone.done() and not gone.cancelled())


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def rate_limit_headers(decision: Decision) -> dict[str, str]:
    """OpenAI's x-ratelimit-* headers, for the limits that are set."""
    headers: dict[str, str] = {}
    reset = duration(decision.reset_after)
    for name, limit, remaining in (
        ("requests", decision.limits.rpm, decision.remaining_requests),
        ("tokens", decision.limits.tpm, decision.remaining_tokens),
    ):
        if limit is not None:
            headers[f"x-ratelimit-limit-{name}"] = str(limit)
            headers[f"x-ratelimit-remaining-{name}"] = str(remaining)
            headers[f"x-ratelimit-reset-{name}"] = reset
    return headers


def duration(seconds: float) -> str:
    """A delay as OpenAI writes it in x-ratelimit-reset-*: 120ms, 1.5s, 6m0s."""
    ms = math.ceil(seconds * 1000)
    if ms < 1000:
        return f"{ms}ms"
    minutes, ms = divmod(ms, 60_000)
    text = f"{ms / 1000:g}s"
    return f"{minutes}m{text}" if minutes else text


def rate_limited(decision: Decision, entry: LogEntry, headers: dict[str, str]) -> Response:
    wait = decision.retry_after
    headers = {
        **headers,
        # Rounded up: a client that waits exactly this long finds room.
        "retry-after": str(max(1, math.ceil(wait))),
        "retry-after-ms": str(max(1, math.ceil(wait * 1000))),
    }
    detail = ErrorDetail(
        message=_refusal(decision, entry),
        type=decision.limit or "tokens",  # OpenAI's types: "requests" or "tokens"
        code="rate_limit_exceeded",
    )
    return _error_response(429, detail, headers)


def _refusal(decision: Decision, entry: LogEntry) -> str:
    """OpenAI's wording, which some clients parse ("Please try again in 1.5s")."""
    limits = decision.limits
    per = f"per {limits.window_seconds:g}s window"
    later = f"Please try again in {decision.retry_after:.3f}s."
    if decision.oversized:
        return (
            f"Request too large for {entry.model} on tokens {per} (TPM): Limit {limits.tpm}, "
            f"Requested {entry.total_tokens}. The simulator admits it only into an empty "
            f"window. {later}"
        )
    if decision.limit == "requests":
        used = f"Limit {limits.rpm}, Used {decision.usage.requests}, Requested 1"
        return f"Rate limit reached for {entry.model} on requests {per} (RPM): {used}. {later}"
    used = f"Limit {limits.tpm}, Used {decision.usage.tokens}, Requested {entry.total_tokens}"
    return f"Rate limit reached for {entry.model} on tokens {per} (TPM): {used}. {later}"


def invalid_request(
    simulator: Simulator, request_id: str, message: str, param: str | None = None
) -> Response:
    simulator.recorder.invalid(request_id=request_id, error=message)
    detail = ErrorDetail(message=message, type="invalid_request_error", param=param)
    return _error_response(400, detail, {"x-request-id": request_id})


def _error(simulator: Simulator, request_id: str, status: int, message: str) -> Response:
    """A refusal or a fault of the simulated server, logged as an invalid request."""
    simulator.recorder.invalid(request_id=request_id, error=message)
    kind = "invalid_request_error" if status < 500 else "server_error"
    detail = ErrorDetail(message=message, type=kind)
    return _error_response(status, detail, {"x-request-id": request_id})


def _error_response(status: int, detail: ErrorDetail, headers: dict[str, str]) -> Response:
    return JSONResponse(ErrorBody(error=detail).model_dump(), status_code=status, headers=headers)


def _validation_failed(
    simulator: Simulator,
) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        message, param = _describe(exc)
        return _refuse(simulator, request, 400, message, param)

    return handle


def _http_error(simulator: Simulator) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Unknown routes and methods, unreadable bodies: the status, in OpenAI's shape."""

    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        response = _refuse(simulator, request, exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    return handle


def _refuse(
    simulator: Simulator, request: Request, status: int, message: str, param: str | None = None
) -> Response:
    """An error in OpenAI's shape; logged when it is a bad request for the OpenAI route."""
    request_id = new_request_id()
    if status == 400 and request.url.path == COMPLETIONS:
        simulator.recorder.invalid(request_id=request_id, error=message)
    detail = ErrorDetail(message=message, type="invalid_request_error", param=param)
    return _error_response(status, detail, {"x-request-id": request_id})


def _describe(exc: RequestValidationError) -> tuple[str, str | None]:
    """The first problem, as a message and the parameter at fault (e.g. messages.0.role)."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        return f"The body is not valid JSON: {first['ctx']['error']}", None
    param = ".".join(str(part) for part in first["loc"][1:]) or None  # loc[0] is "body"
    return f"{param or 'body'}: {first['msg']}", param
