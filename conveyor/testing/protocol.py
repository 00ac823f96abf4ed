"""The OpenAI chat-completions wire format (the part the simulator needs) and token estimates.

Token estimates, documented because tests and benchmarks compute expected costs from them:

- text: ceil(characters / 4), characters being Python code points;
- prompt: 3 (the reply's priming) + for each message 4 (role and delimiters) + its text
  tokens + 85 per image (OpenAI's flat low-detail price, whatever the image);
  only `content` counts: tool calls, names and other message fields are free;
- completion: the text tokens of the responder's answer, cut to the request's cap
  (`max_completion_tokens`, else `max_tokens`) with finish_reason "length".
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CHARS_PER_TOKEN = 4
REPLY_PRIMING_TOKENS = 3
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 85

# ---------------------------------------------------------------------------------------
# Requests: unknown fields are ignored, as a client may send any of OpenAI's many options.


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageURL


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    # None is legal for an assistant message that only carries tool calls.
    content: str | list[ContentPart] | None = None


class ResponseFormat(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    type: Literal["text", "json_object", "json_schema"]
    json_schema: dict[str, Any] | None = None
    # llama-cpp-python's form: {"type": "json_object", "schema": {...}}
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class ChatCompletionRequest(BaseModel):
    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    response_format: ResponseFormat | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool | None = None  # refused when true: the simulator does not stream

    @property
    def token_cap(self) -> int | None:
        """The most completion tokens the client accepts (the newer field wins)."""
        return self.max_completion_tokens or self.max_tokens


# ---------------------------------------------------------------------------------------
# Responses


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    system_fingerprint: str = "conveyor-simulator"


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class Fault(Exception):
    """Raised by a responder: the request is answered with this error instead (a refusal,
    an outage), in OpenAI's shape."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# ---------------------------------------------------------------------------------------
# Token estimates


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def content_tokens(content: str | list[TextPart | ImagePart] | None) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    return sum(
        text_tokens(part.text) if isinstance(part, TextPart) else IMAGE_TOKENS for part in content
    )


def prompt_tokens(request: ChatCompletionRequest) -> int:
    return REPLY_PRIMING_TOKENS + sum(
        MESSAGE_OVERHEAD_TOKENS + content_tokens(message.content) for message in request.messages
    )


def cut_to_cap(text: str, cap: int | None) -> tuple[str, int, Literal["stop", "length"]]:
    """The answer as sent (cut when over `cap` tokens), its tokens and its finish_reason."""
    tokens = text_tokens(text)
    if cap is None or tokens <= cap:
        return text, tokens, "stop"
    return text[: cap * CHARS_PER_TOKEN], cap, "length"
