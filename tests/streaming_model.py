"""A model server that streams, for the client's streaming tests: real HTTP on loopback.

It answers every chat completion as Server-Sent Events, one event per token of `answer`
(a token a word here), `interval` seconds apart, and writes down what it did: the
requests it got, the tokens it sent, and whether the client went away before the end (as
llama-cpp-python's server checks between tokens, and then stops generating).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route


@dataclass
class StreamingModel:
    answer: str = '{"x": 7, "label": "streamed"}'
    interval: float = 0.0
    usage: bool = True  # send a usage event at the end when the client asks for one
    bodies: list[dict[str, Any]] = field(default_factory=list)
    sent: int = 0  # token events written, over all requests
    gone: int = 0  # requests whose client left before the answer's end

    def tokens(self) -> list[str]:
        words = self.answer.split(" ")
        return [w if i == len(words) - 1 else f"{w} " for i, w in enumerate(words)]

    async def _chat(self, request: Request) -> StreamingResponse:
        body = await request.json()
        self.bodies.append(body)
        include_usage = self.usage and (body.get("stream_options") or {}).get("include_usage")

        async def events() -> AsyncIterator[bytes]:
            tokens = self.tokens()
            try:
                for token in tokens:
                    if await request.is_disconnected():
                        self.gone += 1
                        return
                    delta = {"choices": [{"index": 0, "delta": {"content": token}}]}
                    yield _event(delta)
                    self.sent += 1
                    if self.interval:
                        await asyncio.sleep(self.interval)
            except asyncio.CancelledError:  # the client closed while we waited to write
                self.gone += 1
                raise
            yield _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if include_usage:
                usage = {"prompt_tokens": 11, "completion_tokens": len(tokens), "total_tokens": 0}
                yield _event({"choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve from the current event loop; yields the /v1 base URL."""
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        finally:
            server.should_exit = True
            await task
            sock.close()


def _event(chunk: dict[str, Any]) -> bytes:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return f"data: {json.dumps({**base, **chunk})}\n\n".encode()
