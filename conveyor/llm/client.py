"""An OpenAI-compatible chat client for agents: structured output, usage, throttling.

    client = LLMClient.from_settings(settings)      # None when no model is configured
    invoice = await client.extract(task, messages, Invoice, name="invoice")

What it does for an agent, on the official `openai` SDK:

- structured output: the request carries the type's JSON schema (`response_format`
  json_schema); a server that refuses that (400 naming response_format or json_schema)
  is asked again in JSON mode with the schema in the instructions, and remembered as such.
  Either way the answer is validated by the pydantic model: an answer that does not fit
  is an `LLMAnswerInvalid` (the attempt fails and is retried, as a model may do better);
- usage: every response's tokens go to `task.report_usage`, answers that fail validation
  included (they were paid for);
- HTTP 429 becomes `conveyor.Throttled(retry_after=...)` from Retry-After(-ms): the task
  goes back to the queue without spending a retry, and the agent's budget shrinks;
- other refusals are clear errors: 400/401/403/404/422 will not change by retrying
  (`LLMRequestRefused`, a PermanentFailure); 5xx, timeouts and lost connections are
  `LLMUnavailable`, retried with backoff by Conveyor. The SDK's own retries are off, so
  that Conveyor, which knows the limits and the lease, is the one that retries;
- a span per call (see conveyor.tracing) when tracing is on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from conveyor import tracing
from conveyor.errors import PermanentFailure, Throttled
from conveyor.log import fields

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

    from conveyor.settings import Settings
    from conveyor.task import Task

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
Message = dict[str, Any]

DEFAULT_TIMEOUT = 120.0
PLACEHOLDER_KEY = "not-needed"  # local servers (vLLM, llama.cpp, Ollama) want none
PERMANENT_STATUSES = {400, 401, 403, 404, 422}


class LLMError(Exception):
    """A model call did not give a usable answer."""


class LLMUnavailable(LLMError):
    """The endpoint failed (5xx), timed out or could not be reached: worth a retry later."""


class LLMRequestRefused(LLMError, PermanentFailure):
    """The endpoint refused the request itself (bad request, key, model): a retry of the
    same request gets the same answer, so the task fails at once."""


class LLMAnswerInvalid(LLMError):
    """The answer is not JSON of the requested schema."""


class LLMClient:
    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        vision: bool = False,
        system: str | None = None,
        http_client: Any = None,  # an httpx client of your own (tests, proxies)
    ) -> None:
        from openai import AsyncOpenAI, OpenAIError

        if not model:
            raise ValueError("an LLM client needs a model")
        self.model = model
        self.vision = vision
        self.base_url = base_url
        # gen_ai.system: "openai" for OpenAI's API, else what the URL says it is.
        self.system = system or ("openai" if base_url is None else "openai_compatible")
        self.structured: bool | None = None  # None until a server has answered
        try:
            self._client: AsyncOpenAI = AsyncOpenAI(
                base_url=base_url,
                api_key=api_key or _default_key(base_url),
                timeout=timeout,
                max_retries=0,
                http_client=http_client,
            )
        except OpenAIError as exc:  # no key for OpenAI's own API
            raise LLMRequestRefused(
                f"model {model!r} needs an API key: set CONVEYOR_LLM_API_KEY (or "
                "OPENAI_API_KEY), or CONVEYOR_LLM_BASE_URL to a server that needs none "
                f"({exc})"
            ) from None

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient | None:
        """The configured client, or None when CONVEYOR_LLM_MODEL is unset (offline)."""
        if not settings.llm_model:
            return None
        return cls(
            model=settings.llm_model,
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            vision=settings.llm_vision,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def extract(
        self,
        task: Task | None,
        messages: Sequence[Message],
        schema: type[M],
        *,
        name: str,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> M:
        """Ask for an answer of `schema` (its JSON schema, or `json_schema` if given) and
        return it validated. Usage goes to `task` (if given)."""
        wanted = json_schema or schema.model_json_schema()
        if self.structured is not False:
            try:
                content = await self._complete(
                    task,
                    list(messages),
                    {
                        "type": "json_schema",
                        "json_schema": {"name": name, "schema": wanted, "strict": True},
                    },
                    max_tokens,
                )
                self.structured = True
                return _validated(content, schema)
            except _StructuredUnsupported as exc:
                log.info(
                    "the endpoint has no structured output: JSON mode from now on",
                    extra=fields(model=self.model, reason=str(exc)),
                )
                self.structured = False
        instructions = {
            "role": "system",
            "content": "Answer with one JSON object, nothing else, that follows this JSON "
            f"schema:\n{json.dumps(wanted, separators=(',', ':'))}",
        }
        content = await self._complete(
            task, [instructions, *messages], {"type": "json_object"}, max_tokens
        )
        return _validated(content, schema)

    async def _complete(
        self,
        task: Task | None,
        messages: list[Message],
        response_format: dict[str, Any],
        max_tokens: int | None,
    ) -> str:
        import openai

        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        with tracing.model_call_span(self.system, self.model) as call:
            try:
                # The SDK's overloads want its TypedDicts; these dicts are the same JSON.
                completions: Any = self._client.chat.completions
                response: ChatCompletion = await completions.create(
                    model=self.model,
                    messages=messages,
                    response_format=response_format,
                    temperature=0,
                    **options,
                )
            except openai.RateLimitError as exc:
                raise Throttled(
                    retry_after=retry_after(exc.response.headers),
                    message=f"the model endpoint throttled the request: {_message(exc)}",
                ) from None
            except openai.APIStatusError as exc:
                if exc.status_code == 400 and response_format["type"] == "json_schema":
                    text = _message(exc).lower()
                    if "response_format" in text or "json_schema" in text:
                        raise _StructuredUnsupported(_message(exc)) from None
                what = f"the model endpoint answered {exc.status_code}: {_message(exc)}"
                if exc.status_code in PERMANENT_STATUSES:
                    raise LLMRequestRefused(what) from None
                raise LLMUnavailable(what) from None
            except openai.APITimeoutError:
                raise LLMUnavailable("the model endpoint did not answer in time") from None
            except openai.APIConnectionError as exc:
                raise LLMUnavailable(f"the model endpoint cannot be reached: {exc}") from None
            usage = response.usage
            input_tokens = usage.prompt_tokens if usage else 0
            output_tokens = usage.completion_tokens if usage else 0
            call.answered(
                model=response.model, input_tokens=input_tokens, output_tokens=output_tokens
            )
        if task is not None:
            # The model asked for, not the answer's: that is the name prices and budgets
            # are known by (the answer may name a dated snapshot of it).
            task.report_usage(
                model=self.model, input_tokens=input_tokens, output_tokens=output_tokens
            )
        if not response.choices:
            raise LLMAnswerInvalid("the model endpoint answered without a choice")
        choice = response.choices[0]
        if choice.finish_reason == "length":
            raise LLMAnswerInvalid(
                f"the answer was cut at the token limit ({output_tokens} tokens): "
                "raise it, or send smaller chunks (CONVEYOR_LLM_CHUNK_TOKENS)"
            )
        if choice.message.refusal:
            raise LLMAnswerInvalid(f"the model refused: {choice.message.refusal}")
        return choice.message.content or ""


class _StructuredUnsupported(Exception):
    pass


def _default_key(base_url: str | None) -> str | None:
    # Without a key the SDK reads OPENAI_API_KEY, and raises if that is unset too; a local
    # server needs no key, so a placeholder goes there instead of an error.
    import os

    if os.environ.get("OPENAI_API_KEY") or base_url is None:
        return None
    return PLACEHOLDER_KEY


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from Retry-After-Ms or Retry-After (seconds; an HTTP date is not
    worth parsing here: None, and the agent's backoff applies)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name) if headers is not None else None
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(getattr(exc, "message", exc))


def _validated(content: str, schema: type[M]) -> M:
    try:
        return schema.model_validate_json(_json_part(content))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise LLMAnswerInvalid(
            f"the model's answer does not fit the schema ({exc.error_count()} problem(s); "
            f"first: {where}: {first['msg']})"
        ) from None


def _json_part(content: str) -> str:
    """The JSON in an answer, without the Markdown fence some models put around it."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip() or "null"
