"""POST /api/callbacks/{attempt_id}: an external job reports how its attempt ended.

Authenticated by the attempt's own secret (HMAC-SHA256 of "{timestamp}.{body}"), not by
the API token. Idempotent: webhooks arrive twice, late, or out of order, so

- while the attempt runs, the outcome is applied, through the same fenced write as a
  worker's, and its usage and cost are recorded (once: a repeat changes nothing);
- once the attempt has ended, a callback changes nothing and gets 200 with the current
  state, so a redelivery gets the same answer as the first delivery;
- an attempt that lost its lease (the sweeper gave the task to another attempt) refuses it
  with 409, and keeps it on record (`late_outcome`, with the usage it reports).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from conveyor import policy, queue
from conveyor.app import App
from conveyor.external import SIGNATURE_HEADER, TIMESTAMP_HEADER, attempt_secret, verify
from conveyor.llm.pricing import Pricer, parse_prices
from conveyor.queue import AttemptOutcome, Outcome
from conveyor.states import AttemptStatus
from conveyor.web.errors import ApiError, parse_id
from conveyor.web.models import Text, storable_json

Tokens = Annotated[int, Field(ge=0, le=2**31 - 1)]


def _json_compliant(value: Any) -> Any:
    """pydantic's JSON parser reads NaN and Infinity, which jsonb refuses (a 500)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError("NaN and Infinity are not JSON") from None
    return value


class CallbackUsage(BaseModel):
    model: Text | None = Field(default=None, max_length=200)
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None


class CallbackBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["succeeded", "failed"]
    result: Annotated[Any, AfterValidator(storable_json), AfterValidator(_json_compliant)] = None
    error: Text | None = Field(default=None, max_length=100_000)
    retry: bool = Field(default=True, description="failed: retry if attempts remain")
    usage: CallbackUsage | None = None
    cost_usd: Annotated[float, Field(ge=0, le=1e6)] | None = None
    trace_id: Text | None = Field(default=None, max_length=200)


class CallbackAnswer(BaseModel):
    task_id: int
    attempt: int
    task_status: str
    attempt_status: str


def router(app: App) -> APIRouter:
    api = APIRouter(tags=["external jobs"])
    keys: list[str] = []  # the database's callback key, read once
    # Usage reported without its cost is priced like a worker prices its agents' calls.
    pricer = Pricer(parse_prices(app.settings.llm_prices))

    @api.post(
        "/api/callbacks/{attempt_id}",
        response_model=CallbackAnswer,
        openapi_extra={
            # The route reads the raw body (the signature covers its bytes), so the body
            # and the headers are documented by hand.
            "parameters": [
                {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
                for name in (TIMESTAMP_HEADER, SIGNATURE_HEADER)
            ],
            "requestBody": {
                "content": {"application/json": {"schema": _inlined(CallbackBody)}},
                "required": True,
            },
        },
    )
    async def callback(attempt_id: str, request: Request) -> CallbackAnswer:
        """Finish an attempt of an external job. Headers: `X-Conveyor-Timestamp` (Unix
        seconds) and `X-Conveyor-Signature: sha256=<hex HMAC of "{timestamp}.{body}">`."""
        number = _attempt_id(attempt_id)
        raw = await request.body()
        async with app.connection() as conn:
            row = await queue.attempt_for_callback(conn, number)
            if row is None:
                raise ApiError(404, "not_found", f"no attempt with id {attempt_id!r}")
            if not keys:
                keys.append(await queue.callback_key(conn))
            token = row["claim_token"]
            problem = verify(
                # A job of a claim a crash undid signed with the secret of its own claim,
                # not this one's (the attempt id may be the same): refused here.
                attempt_secret(keys[0], number, None if token is None else str(token)),
                raw,
                request.headers.get(TIMESTAMP_HEADER),
                request.headers.get(SIGNATURE_HEADER),
            )
            if problem is not None:
                raise ApiError(401, "bad_signature", problem)
            body = _parse(raw)
            # The one write that ends attempts decides: it applies the outcome while the
            # attempt runs, records it as late on an attempt that was lost or cancelled, and
            # changes nothing on one that ended by its own outcome (a redelivery).
            cost = body.cost_usd
            if cost is None:
                cost = await _price(pricer, body.usage)
            await queue.finish(conn, [_outcome(app, row, body, cost)])
            now = await queue.attempt_for_callback(conn, number)
            if now is not None and now["status"] == AttemptStatus.LOST:
                raise ApiError(
                    409,
                    "attempt_ended",
                    f"attempt {number} had already lost its lease; the task went "
                    "to another attempt, and this outcome was recorded, not applied",
                )
        assert now is not None
        return CallbackAnswer(
            task_id=now["task_id"],
            attempt=now["attempt"],
            task_status=now["task_status"],
            attempt_status=now["status"],
        )

    return api


def _inlined(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with its `$defs` inlined: in an OpenAPI document, a
    `#/$defs/...` reference resolves against the document's root, where there are none."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


def _attempt_id(text: str) -> int:
    attempt_id = parse_id(text)
    if attempt_id is None:
        raise ApiError(404, "not_found", f"no attempt with id {text!r}")
    return attempt_id


def _parse(raw: bytes) -> CallbackBody:
    try:
        return CallbackBody.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first.get("type") == "json_invalid":
            raise ApiError(
                400, "malformed_json", f"the body is not valid JSON: {first['msg']}"
            ) from None
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise ApiError(422, "invalid_request", f"{where}: {first['msg']}") from None


async def _price(pricer: Pricer, usage: CallbackUsage | None) -> float | None:
    """The cost of usage a job reported without one, as a worker prices its agents' calls
    (None: no model, or no price known for it)."""
    if usage is None or usage.model is None:
        return None
    if pricer.needs_loading([usage.model]):
        await asyncio.to_thread(pricer.load)  # half a second, once: not in the event loop
    return pricer.attempt_cost({usage.model: (usage.input_tokens or 0, usage.output_tokens or 0)})


def _outcome(app: App, row: Any, body: CallbackBody, cost_usd: float | None) -> Outcome:
    usage = body.usage or CallbackUsage()
    retry_delay = None
    if body.status == "failed" and body.retry:
        spec = app.agents.get(row["agent"])
        base, cap = (spec.backoff_base, spec.backoff_max) if spec else (1.0, 300.0)
        charged = policy.charged_attempts(row["attempt"], row["free_attempts"])
        retry_delay = policy.backoff(charged, base, cap)
    return Outcome(
        task_id=row["task_id"],
        attempt=row["attempt"],
        outcome=AttemptOutcome(body.status),
        result=json.dumps(body.result) if body.status == "succeeded" else None,
        error=body.error if body.status == "failed" else None,
        retry_delay=retry_delay,
        model=usage.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        trace_id=body.trace_id,
        llm_cost_usd=cost_usd,
        claim_token=None if row["claim_token"] is None else str(row["claim_token"]),
    )
