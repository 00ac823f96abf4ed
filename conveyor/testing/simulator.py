"""An OpenAI-compatible chat-completions endpoint with rate limits, for tests and benchmarks.

    simulator = Simulator(rpm=60, tpm=10_000, window_seconds=2)
    async with simulator.serving() as url:     # uvicorn in this event loop, on a free port
        ...  # POST {url}/v1/chat/completions; OpenAI(base_url=f"{url}/v1")
    simulator.stats().within_limits

or, from a shell: python -m conveyor.testing.simulator --tpm 200000 --rpm 300 --port 8089

With `--truth DIR [--error-rate 0.1] [--seed N]` it answers extraction requests from
ground truth, with injected errors (see `conveyor.testing.answers`).

Every request costs its prompt and completion tokens (estimated as in
`conveyor.testing.protocol`), decided before the answer is produced; the rolling window of
`conveyor.testing.window` admits it or refuses it with a 429 and Retry-After. An admitted
request then takes `base_latency + per_token_latency * completion_tokens` seconds, so
concurrency matters as with a real endpoint. One set of limits covers every model: run one
simulator per endpoint to simulate several.

Besides the OpenAI route, the simulator answers GET /sim/log, GET /sim/stats,
GET and POST /sim/limits (change limits mid-run) and POST /sim/reset.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import ipaddress
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from types import TracebackType

import uvicorn
from fastapi import FastAPI

from conveyor.testing.protocol import ChatCompletionRequest
from conveyor.testing.recorder import LogEntry, Recorder, Stats
from conveyor.testing.routes import create_app
from conveyor.testing.window import Limits

BACKLOG = 2048
KEEP_ALIVE_SECONDS = 75

Responder = Callable[[ChatCompletionRequest], str]
"""Makes the answer's content. Its length decides the completion tokens, hence the cost."""


def json_responder(request: ChatCompletionRequest) -> str:
    """The default answer: short, valid JSON, the same for the same conversation.

    The digest lets a test tell which request an answer belongs to.
    """
    conversation = request.model_dump_json(include={"model", "messages"})
    digest = hashlib.sha256(conversation.encode()).hexdigest()[:16]
    return json.dumps({"answer": "simulated", "messages": len(request.messages), "digest": digest})


class Simulator:
    """Limits, responder and latency behind a FastAPI app (`.app`), with its record.

    Safe to serve from one thread and inspect or reconfigure from another.
    """

    def __init__(
        self,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        window_seconds: float = 60.0,
        responder: Responder = json_responder,
        base_latency: float = 0.05,
        per_token_latency: float = 0.0002,
        formats: Collection[str] | None = None,
        format_refusal: int = 500,
    ) -> None:
        """`formats`: the response_format types the server takes (None: all); any other
        is refused with `format_refusal`, as llama-cpp-python refuses json_schema."""
        if base_latency < 0 or per_token_latency < 0:
            raise ValueError("latencies cannot be negative")
        self.recorder = Recorder(Limits(rpm=rpm, tpm=tpm, window_seconds=window_seconds))
        self.responder = responder
        self.base_latency = base_latency
        self.per_token_latency = per_token_latency
        self.formats = frozenset(formats) if formats is not None else None
        self.format_refusal = format_refusal
        self.abandoned = 0  # requests whose client closed the connection before the answer
        self.app = create_app(self)

    @property
    def limits(self) -> Limits:
        return self.recorder.limits

    def set_limits(self, **changes: float | None) -> Limits:
        """Change some of rpm, tpm (None: unlimited) and window_seconds, from now on."""
        return self.recorder.change_limits(changes)

    def reset(self) -> None:
        """Forget the log and empty the window; the limits stay."""
        self.recorder.reset()

    def log(self) -> list[LogEntry]:
        return self.recorder.log()

    def stats(self) -> Stats:
        return self.recorder.stats()

    def latency(self, completion_tokens: int) -> float:
        return self.base_latency + self.per_token_latency * completion_tokens

    @contextlib.asynccontextmanager
    async def serving(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve from the current event loop; yields the root URL (the OpenAI base_url is
        that plus /v1). Port 0 picks a free port. Stops, after in-flight requests, on exit.
        """
        sock = bind(host, port)
        server = _EmbeddedServer(_uvicorn_config(self.app))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            await _started(server, task)
            yield url_of(sock)
        finally:
            server.should_exit = True
            await task
            sock.close()

    def start_in_thread(self, host: str = "127.0.0.1", port: int = 0) -> ThreadedServer:
        """Serve from a background thread (for synchronous code); stop() or `with` to stop."""
        return ThreadedServer(self, host, port).start()


class ThreadedServer:
    """A simulator served by uvicorn in its own thread and event loop."""

    def __init__(self, simulator: Simulator, host: str, port: int) -> None:
        self.simulator = simulator
        self.url = ""
        self._host, self._port = host, port
        self._ready = threading.Event()
        self._error: Exception | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="llm-simulator", daemon=True)

    def start(self) -> ThreadedServer:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread.is_alive() and self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> ThreadedServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except Exception as exc:  # kept for the caller's thread to raise
            self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with self.simulator.serving(self._host, self._port) as url:
            self.url = url
            self._ready.set()
            await self._stop.wait()


# ---------------------------------------------------------------------------------------
# Serving


class _EmbeddedServer(uvicorn.Server):
    """uvicorn that leaves signals alone: Ctrl-C belongs to the program it runs inside."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _uvicorn_config(app: FastAPI, log_level: str = "warning") -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_config=None,  # leave the host program's logging alone
        log_level=log_level,
        access_log=False,
        lifespan="off",
        ws="none",  # no websockets here, and importing them warns on some versions
        backlog=BACKLOG,
        # Longer than clients keep idle connections (httpx: 5 s), so that the client, not
        # the server, closes them: no request sent on a connection the server just closed.
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


async def _started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    # uvicorn has no started event: poll its flag, and fail if the server stopped instead.
    async with asyncio.timeout(10):
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.002)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port`. Made here rather than by uvicorn: port 0 then has
    its real port at once, connections made before uvicorn accepts wait in the backlog, and
    a taken port is a plain OSError (uvicorn would sys.exit)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"http://{host}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it could resolve anywhere


# ---------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conveyor.testing.simulator",
        description="Serve an OpenAI-compatible chat-completions endpoint with rate limits.",
    )
    parser.add_argument("--rpm", type=_positive_int, help="requests per window (default: none)")
    parser.add_argument("--tpm", type=_positive_int, help="tokens per window (default: none)")
    parser.add_argument("--window", type=float, default=60.0, help="window seconds (60)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="127.0.0.1; loopback only without --allow-remote"
    )
    parser.add_argument("--port", type=int, default=8089, help="8089; 0 picks a free port")
    parser.add_argument("--base-latency", type=float, default=0.05, help="seconds (0.05)")
    parser.add_argument(
        "--per-token-latency",
        type=float,
        default=0.0002,
        help="seconds per completion token (0.0002)",
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow a --host that is not loopback"
    )
    parser.add_argument(
        "--truth", help="answer extraction requests from the JSON files in this folder"
    )
    parser.add_argument(
        "--error-rate", type=float, default=0.0, help="with --truth: fields answered wrong (0)"
    )
    parser.add_argument("--seed", type=int, default=0, help="with --truth: the errors' seed")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not (args.allow_remote or is_loopback(args.host)):
        parser.error(f"{args.host} is not a loopback address; pass --allow-remote to serve it")
    try:
        responder: Responder = json_responder
        if args.truth is not None:
            from conveyor.testing.answers import TruthResponder

            responder = TruthResponder.from_dir(
                args.truth, error_rate=args.error_rate, seed=args.seed
            )
        simulator = Simulator(
            rpm=args.rpm,
            tpm=args.tpm,
            window_seconds=args.window,
            base_latency=args.base_latency,
            per_token_latency=args.per_token_latency,
            responder=responder,
        )
    except ValueError as exc:  # pydantic's ValidationError is one
        parser.error(str(exc))
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        parser.error(f"cannot listen on {args.host}:{args.port}: {exc}")
    url = url_of(sock)
    print(f"LLM simulator on {url} (OpenAI base_url: {url}/v1), {simulator.limits}", flush=True)
    print("Ctrl-C to stop", flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
        uvicorn.Server(_uvicorn_config(simulator.app)).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
