"""An OpenAI-compatible chat client for agents: structured output, usage, throttling.

    client = LLMClient.from_settings(settings)      # None when no model is configured
    invoice = await client.extract(task, messages, Invoice, name="invoice")
    partial = await client.extract_partial(task, messages, Invoice, name="invoice")

What it does for an agent, on the official `openai` SDK:

- structured output, negotiated: `json_schema` (strict) first, then the weaker forms a
  server takes, each refusal remembered per (base URL, model) for the process
  (`conveyor.llm.formats`; a refusal is never retried as an outage). The answer is
  validated by the pydantic model: `extract` raises `LLMAnswerInvalid` on an answer that
  does not fit, `extract_partial` keeps the fields that fit (`conveyor.llm.salvage`);
- usage: every response's tokens go to `task.report_usage`, answers that fail validation
  included (they were paid for);
- streaming: answers are streamed (Server-Sent Events) where the server streams, so that
  a request past its time closes the connection while the server is generating, and a
  server that watches for it stops; a server that refuses streaming is asked unstreamed
  from then on (negotiated with the format, `conveyor.llm.formats`). A stream without
  usage (llama-cpp-python's) counts an output token per event and estimates the prompt;
- time: each request is bounded as a whole by `timeout` (CONVEYOR_LLM_TIMEOUT) and by the
  caller's `deadline`; past it, the request is abandoned and its connection closed;
- HTTP 429 becomes `conveyor.Throttled(retry_after=...)` from Retry-After(-ms): the task
  goes back to the queue without spending a retry, and the agent's budget shrinks;
- other refusals are clear errors: 400/401/403/404/422 will not change by retrying
  (`LLMRequestRefused`, a PermanentFailure); 5xx, timeouts and lost connections are
  `LLMUnavailable`, retried with backoff by Conveyor. An answer cut at max_tokens or a
  model's refusal will be the same at temperature 0: permanent too (`extract_partial`
  keeps the members a cut answer completed, and names the one it was cut in). The SDK's own retries
  are off, so that Conveyor, which knows the limits and the lease, is the one that retries;
- a span per call (see conveyor.tracing) when tracing is on.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from conveyor import tracing
from conveyor.errors import PermanentFailure, Throttled
from conveyor.llm import formats
from conveyor.llm.salvage import Salvaged, cut_members, salvage
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
CHARS_PER_TOKEN = 4  # the rule of thumb, for prompts a server does not count


class LLMError(Exception):
    """A model call did not give a usable answer."""


class LLMUnavailable(LLMError):
    """The endpoint failed (5xx), timed out or could not be reached: worth a retry later."""


class LLMRequestRefused(LLMError, PermanentFailure):
    """The endpoint refused the request itself (bad request, key, model): a retry of the
    same request gets the same answer, so the task fails at once."""


class LLMAnswerInvalid(LLMError):
    """The answer is not JSON of the requested schema."""


class LLMAnswerCut(LLMAnswerInvalid, PermanentFailure):
    """The answer hit max_tokens: the same request is cut at the same place again.
    `partial` is what it wrote (`extract_partial` keeps its complete members)."""

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


class LLMAnswerRefused(LLMAnswerInvalid, PermanentFailure):
    """The model declined to answer (its `refusal`): asked again, it declines again."""


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for the process's clients. Each httpx client builds its own by
    default, loading the CA bundle: 27 ms of CPU on the event loop per client, even for an
    http:// URL, and a document's page-range children build one each (0.2 ms shared).
    httpx's own builder, so SSL_CERT_FILE and SSL_CERT_DIR still apply."""
    import httpx

    return httpx.create_ssl_context()


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
        stream: bool = True,  # False: never stream (exact usage from a server whose
        # streams do not count tokens, as llama-cpp-python's)
    ) -> None:
        from openai import AsyncOpenAI, OpenAIError

        if not model:
            raise ValueError("an LLM client needs a model")
        self.model = model
        self.vision = vision
        self.base_url = base_url
        # gen_ai.system: "openai" for OpenAI's API, else what the URL says it is.
        self.system = system or ("openai" if base_url is None else "openai_compatible")
        self.timeout = timeout
        self.format: str | None = None  # the response format the server last took
        self.requests = 0  # sent, refusals included (benchmarks report them)
        self.refusals = 0  # response formats (and streaming) the server refused
        self.stream = stream
        self.streamed: bool | None = None  # whether the last answer came streamed
        self.estimated_usage = 0  # answers whose prompt tokens the server did not count
        if http_client is None:
            from openai import DefaultAsyncHttpxClient

            http_client = DefaultAsyncHttpxClient(verify=_tls())
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
            timeout=settings.llm_timeout,
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
        deadline: float | None = None,
    ) -> M:
        """Ask for an answer of `schema` (its JSON schema, or `json_schema` if given) and
        return it validated: an answer that does not fit is an LLMAnswerInvalid. Usage goes
        to `task` (if given); `deadline` (the event loop's clock) bounds the request.
        It is `extract_partial` that salvaged nothing."""
        answer = await self.extract_partial(
            task,
            messages,
            schema,
            name=name,
            json_schema=json_schema,
            max_tokens=max_tokens,
            deadline=deadline,
        )
        if answer.cut is not None:
            raise LLMAnswerCut(f"the answer was cut at the token limit in {answer.cut!r}")
        if answer.dropped:
            raise LLMAnswerInvalid(
                f"the model's answer does not fit the schema ({len(answer.dropped)} "
                f"problem(s); first: {answer.problems[0]})"
            )
        return answer.value

    async def extract_partial(
        self,
        task: Task | None,
        messages: Sequence[Message],
        schema: type[M],
        *,
        name: str,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        deadline: float | None = None,
    ) -> Salvaged[M]:
        """As `extract`, but the fields of the answer that do not validate are nulled and
        named (`conveyor.llm.salvage`) rather than failing it, and an answer cut at
        max_tokens keeps the members it completed (`Salvaged.cut` names the one it was
        cut in); only an answer that is not a JSON object is an LLMAnswerInvalid, and one
        cut before it completed a member an LLMAnswerCut."""
        try:
            content = await self.ask(
                task,
                messages,
                json_schema or schema.model_json_schema(),
                name=name,
                max_tokens=max_tokens,
                deadline=deadline,
            )
        except LLMAnswerCut as exc:
            return self._salvage_cut(exc, schema)
        try:
            return salvage(_parsed(content), schema)
        except ValidationError as exc:
            raise LLMAnswerInvalid(_misfit(exc)) from None

    def _salvage_cut(self, cut: LLMAnswerCut, schema: type[M]) -> Salvaged[M]:
        """The members a cut answer completed, as `schema`; the cut itself raised again
        when it completed none, or not enough to be an answer of `schema`."""
        kept = cut_members(cut.partial)
        if kept is None or not kept[0]:
            raise cut
        data, where = kept
        try:
            answer = salvage(data, schema)
        except ValidationError:
            raise cut from None
        answer.cut = where
        log.info(
            "an answer cut at the token limit: the members it completed kept",
            extra=fields(model=self.model, cut_in=where, kept=len(data)),
        )
        return answer

    async def ask(
        self,
        task: Task | None,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        name: str,
        max_tokens: int | None = None,
        deadline: float | None = None,
    ) -> str:
        """The answer's text to a request for JSON of `schema`, in the most constrained
        response format the server takes, streamed if it streams (`conveyor.llm.formats`)."""
        wanted = formats.portable(schema)
        rung = formats.first_rung(self.base_url, self.model)
        while True:
            system = formats.instructions(rung, wanted)
            stream = self.stream and formats.streams(self.base_url, self.model)
            bound = max_tokens if formats.bounds(self.base_url, self.model) else None
            try:
                content = await self._complete(
                    task,
                    [system, *messages] if system else list(messages),
                    formats.response_format(rung, name, wanted),
                    bound,
                    deadline,
                    stream,
                )
            except _OptionRefused as exc:
                self.refusals += 1
                log.info(exc.consequence, extra=fields(model=self.model, reason=str(exc)))
                exc.remember(self.base_url, self.model)
                continue
            except _FormatRefused as exc:
                self.refusals += 1
                if rung + 1 >= len(formats.FORMATS):
                    raise LLMRequestRefused(
                        f"the model endpoint refuses every way of asking for JSON; last: {exc}"
                    ) from None
                log.info(
                    "the endpoint refused a response format: the next one from now on",
                    extra=fields(model=self.model, refused=formats.FORMATS[rung], reason=str(exc)),
                )
                rung += 1
                formats.remember(self.base_url, self.model, rung)
                continue
            self.format = formats.FORMATS[rung]
            self.streamed = stream
            return content

    @property
    def structured(self) -> bool | None:
        """True when the server took json_schema, False when it did not, None until it
        answered."""
        return None if self.format is None else self.format == "json_schema"

    async def _complete(
        self,
        task: Task | None,
        messages: list[Message],
        response_format: dict[str, Any] | None,
        max_tokens: int | None,
        deadline: float | None,
        stream: bool,
    ) -> str:
        import openai

        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        if response_format is not None:
            options["response_format"] = response_format
        limit = self.timeout
        if deadline is not None:
            limit = min(limit, deadline - asyncio.get_running_loop().time())
        if limit <= 0:
            raise LLMUnavailable("the task's deadline passed before the model was asked")
        self.requests += 1
        # When the request went out: the token window holds the attempt's tokens until a
        # window after its last request (docs/limits.md, "What the window counts").
        sent = time.monotonic()
        with tracing.model_call_span(self.system, self.model) as call:
            try:
                # The whole request is bounded, not each read: a server that trickles
                # bytes cannot stretch it. On expiry the request's task is cancelled, and
                # httpx closes its connection (never returned to the pool), which is all a
                # server can learn of an abandoned request; streamed, it learns it while
                # it is still generating (conveyor.llm.formats).
                async with asyncio.timeout(limit):
                    if stream:
                        reply = await self._streamed(messages, options)
                    else:
                        reply = await self._whole(messages, options)
            except TimeoutError:
                why = "the task's deadline" if limit < self.timeout else "CONVEYOR_LLM_TIMEOUT"
                raise LLMUnavailable(
                    f"the model endpoint did not answer within {limit:.1f} s ({why}); "
                    "the request was abandoned and its connection closed"
                ) from None
            except openai.RateLimitError as exc:
                raise Throttled(
                    retry_after=retry_after(exc.response.headers),
                    message=f"the model endpoint throttled the request: {_message(exc)}",
                ) from None
            except openai.APIStatusError as exc:
                text = _message(exc)
                if stream and formats.is_stream_refusal(exc.status_code, text):
                    raise _StreamRefused(f"{exc.status_code}: {text}") from None
                if max_tokens is not None and formats.is_limit_refusal(exc.status_code, text):
                    raise _LimitRefused(f"{exc.status_code}: {text}") from None
                if response_format is not None and formats.is_format_refusal(exc.status_code, text):
                    raise _FormatRefused(f"{exc.status_code}: {text}") from None
                what = f"the model endpoint answered {exc.status_code}: {text}"
                if exc.status_code in PERMANENT_STATUSES:
                    raise LLMRequestRefused(what) from None
                raise LLMUnavailable(what) from None
            except openai.APITimeoutError:
                raise LLMUnavailable("the model endpoint did not answer in time") from None
            except openai.APIConnectionError as exc:
                raise LLMUnavailable(f"the model endpoint cannot be reached: {exc}") from None
            if reply is None:
                raise _StreamRefused("the streamed answer had no event")
            if reply.input_tokens is None:
                # A stream without usage (llama-cpp-python's server sends none): its
                # events are the answer's tokens, one each; the prompt is estimated.
                reply.input_tokens = prompt_tokens(messages)
                self.estimated_usage += 1
            call.answered(
                model=reply.model,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
            )
        if task is not None:
            # The model asked for, not the answer's: that is the name prices and budgets
            # are known by (the answer may name a dated snapshot of it).
            task.report_usage(
                model=self.model,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                sent_at=sent,
            )
        return reply.checked()

    async def _whole(self, messages: list[Message], options: dict[str, Any]) -> _Reply:
        """One answer, unstreamed."""
        # The SDK's overloads want its TypedDicts; these dicts are the same JSON.
        completions: Any = self._client.chat.completions
        response: ChatCompletion = await completions.create(
            model=self.model, messages=messages, temperature=0, **options
        )
        usage = response.usage
        reply = _Reply(
            model=response.model,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )
        if response.choices:
            choice = response.choices[0]
            reply.choices = 1
            reply.finish_reason = choice.finish_reason
            reply.refusal = getattr(choice.message, "refusal", None)
            reply.content = choice.message.content or ""
        return reply

    async def _streamed(self, messages: list[Message], options: dict[str, Any]) -> _Reply | None:
        """One answer, streamed; None when the stream had no event at all (a server that
        took `stream` and did not stream)."""
        completions: Any = self._client.chat.completions
        stream = await completions.create(
            model=self.model,
            messages=messages,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
            **options,
        )
        reply = _Reply(model=self.model, input_tokens=None, output_tokens=0)
        parts: list[str] = []
        refusals: list[str] = []
        events = 0
        # Leaving the block closes the response, also when the timeout cancels the read:
        # the connection is dropped while the server writes, and it stops generating.
        async with stream:
            async for chunk in stream:
                events += 1
                reply.model = chunk.model or reply.model
                if chunk.usage is not None:
                    reply.input_tokens = chunk.usage.prompt_tokens
                    reply.output_tokens = chunk.usage.completion_tokens
                    reply.counted = True
                for choice in chunk.choices[:1]:
                    reply.choices = 1
                    delta = choice.delta
                    if delta.content:
                        parts.append(delta.content)
                        if not reply.counted:
                            reply.output_tokens += 1
                    if getattr(delta, "refusal", None):
                        refusals.append(delta.refusal)
                    if choice.finish_reason:
                        reply.finish_reason = choice.finish_reason
        if not events:
            return None
        reply.content = "".join(parts)
        reply.refusal = "".join(refusals) or None
        return reply


@dataclass
class _Reply:
    """What a request brought back, streamed or not, before it is judged (`checked`)."""

    model: str
    input_tokens: int | None  # None: the server did not count (a stream without usage)
    output_tokens: int
    content: str = ""
    choices: int = 0
    finish_reason: str | None = None
    refusal: str | None = None
    counted: bool = False  # the server's usage arrived (streamed: it replaces the count)

    def checked(self) -> str:
        """The answer's text, or the clear error an unusable answer is."""
        if not self.choices:
            raise LLMAnswerInvalid("the model endpoint answered without a choice")
        if self.finish_reason == "length":
            raise LLMAnswerCut(
                f"the answer was cut at the token limit ({self.output_tokens} tokens): "
                "raise it, or send smaller chunks (CONVEYOR_LLM_CHUNK_TOKENS)",
                partial=self.content,
            )
        if self.refusal:
            raise LLMAnswerRefused(f"the model refused: {self.refusal}")
        if not self.content.strip():
            raise LLMAnswerInvalid(
                f"the model answered nothing (finish reason {self.finish_reason!r})"
            )
        return self.content


def prompt_tokens(messages: Sequence[Message]) -> int:
    """The prompt's tokens by the rule of thumb (four characters a token, and a few for
    each message's framing), for a server that does not count them."""
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
    return math.ceil(chars / CHARS_PER_TOKEN) + 4 * len(messages)


class _OptionRefused(Exception):
    """The server refused one option of the request, not the request: it is asked again
    without the option, and remembers that for the base URL and model (conveyor.llm.formats)."""

    consequence: ClassVar[str]  # what the log says follows

    def remember(self, base_url: str | None, model: str) -> None:
        raise NotImplementedError


class _StreamRefused(_OptionRefused):
    """The server refused to stream: ask it again unstreamed."""

    consequence = "the endpoint refused streaming: requests go unstreamed from now on"

    def remember(self, base_url: str | None, model: str) -> None:
        formats.remember_unstreamed(base_url, model)


class _LimitRefused(_OptionRefused):
    """The server refused the answer's bound (max_tokens), a bound above what the model can
    write: its own limit bounds the answer instead."""

    consequence = "the endpoint refused the answer's bound: requests go without it"

    def remember(self, base_url: str | None, model: str) -> None:
        formats.remember_unbounded(base_url, model)


class _FormatRefused(Exception):
    """The server refused the response format (not the request): try the next one."""


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


def _misfit(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the answer"
    return (
        f"the model's answer does not fit the schema ({exc.error_count()} problem(s); "
        f"first: {where}: {first['msg']})"
    )


def _parsed(content: str) -> Any:
    """The JSON value of an answer, or LLMAnswerInvalid saying what it is instead."""
    text = _json_part(content)
    try:
        return json.loads(text)
    except ValueError:
        shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
        raise LLMAnswerInvalid(f"the model's answer is not JSON: {shown!r}") from None


def _json_part(content: str) -> str:
    """The JSON in an answer, without the Markdown fence some models put around it."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip() or "null"
