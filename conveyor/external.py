"""External jobs: agents whose work runs outside the worker and reports back by callback.

    app.external("ocr", SubprocessJob(["python", "ocr_job.py"]), lease_seconds=120)
    app.external("transcribe", HttpJob("http://runner.internal/jobs"))

The worker *dispatches* a job for each attempt and keeps the attempt's lease alive while it
runs; the job finishes the attempt with a signed callback, `POST /api/callbacks/{attempt}`
(see `report()` for job authors). Each attempt has its own secret, derived from a key kept
in the database, so the worker, the web app and the job agree on it without storing one
per attempt. A callback is authenticated by HMAC-SHA256 over `"{timestamp}.{body}"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import sys
import time
import urllib.request
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

SIGNATURE_HEADER = "X-Conveyor-Signature"
TIMESTAMP_HEADER = "X-Conveyor-Timestamp"
MAX_CLOCK_SKEW = 300.0  # seconds a callback's timestamp may differ from the server's clock


@dataclass(frozen=True)
class Job:
    """One attempt of an external agent, as handed to a dispatcher."""

    task_id: int
    attempt: int
    attempt_id: int
    agent: str
    payload: Any
    callback_url: str
    secret: str

    def document(self) -> dict[str, Any]:
        """What the job receives (subprocess: on stdin; HTTP: as the request body)."""
        return {
            "task_id": self.task_id,
            "attempt": self.attempt,
            "attempt_id": self.attempt_id,
            "agent": self.agent,
            "payload": self.payload,
            "callback_url": self.callback_url,
            "callback_secret": self.secret,
        }


@dataclass
class Dispatched:
    """A job that was started: its run id, and (if the dispatcher can tell) a wait for the
    job's end with its exit status."""

    run_id: str
    ended: Awaitable[int] | None = None
    stop: Any = None  # a callable that stops the job, when the attempt is cancelled


class Dispatcher(Protocol):
    async def dispatch(self, job: Job) -> Dispatched: ...


@dataclass(frozen=True)
class SubprocessJob:
    """Start `command` with the job's JSON on stdin and, in its environment,
    CONVEYOR_CALLBACK_URL, CONVEYOR_CALLBACK_SECRET, CONVEYOR_TASK_ID, CONVEYOR_ATTEMPT_ID."""

    command: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 3600.0  # seconds without a callback before the attempt fails
    callback_grace: float = 5.0  # seconds a callback may trail the process's exit

    async def dispatch(self, job: Job) -> Dispatched:
        environment = {
            **os.environ,
            **self.env,
            "CONVEYOR_CALLBACK_URL": job.callback_url,
            "CONVEYOR_CALLBACK_SECRET": job.secret,
            "CONVEYOR_TASK_ID": str(job.task_id),
            "CONVEYOR_ATTEMPT_ID": str(job.attempt_id),
        }
        proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,  # a cancel stops the job's whole process group
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(job.document()).encode())
        with contextlib.suppress(ConnectionError):
            await proc.stdin.drain()
        proc.stdin.close()

        def stop() -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)

        return Dispatched(run_id=f"pid:{proc.pid}", ended=proc.wait(), stop=stop)


@dataclass(frozen=True)
class HttpJob:
    """POST the job's JSON to a runner; a 2xx answer may name the run: {"run_id": "..."}."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 3600.0
    request_timeout: float = 30.0

    async def dispatch(self, job: Job) -> Dispatched:
        async with httpx.AsyncClient(timeout=self.request_timeout) as client:
            response = await client.post(self.url, json=job.document(), headers=dict(self.headers))
        if response.status_code >= 300:
            raise DispatchError(
                f"the runner at {self.url} answered {response.status_code}: {response.text[:200]}"
            )
        run_id = None
        with contextlib.suppress(ValueError, AttributeError):
            run_id = response.json().get("run_id")
        return Dispatched(run_id=str(run_id or f"http:{job.attempt_id}"))


class DispatchError(Exception):
    """The job could not be started; the attempt fails (and is retried)."""


# ---------------------------------------------------------------------------------------
# Secrets and signatures


def attempt_secret(key: str, attempt_id: int) -> str:
    """The callback secret of one attempt, derived from the database's key."""
    return hmac.new(key.encode(), f"attempt:{attempt_id}".encode(), hashlib.sha256).hexdigest()


def new_key() -> str:
    return secrets.token_hex(32)


def sign(secret: str, body: bytes, timestamp: float | None = None) -> dict[str, str]:
    """The headers that authenticate a callback body."""
    stamp = str(int(time.time() if timestamp is None else timestamp))
    digest = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: f"sha256={digest.hexdigest()}"}


def verify(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    *,
    now: float | None = None,
) -> str | None:
    """None if the callback is authentic and fresh; else what is wrong with it."""
    if not timestamp or not signature:
        return f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header"
    try:
        moment = int(timestamp)
    except ValueError:
        return f"{TIMESTAMP_HEADER} is not a Unix time"
    if abs((time.time() if now is None else now) - moment) > MAX_CLOCK_SKEW:
        return "the callback's timestamp is too old or in the future (replay?)"
    expected = sign(secret, body, moment)[SIGNATURE_HEADER]
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return "the signature does not match"
    return None


# ---------------------------------------------------------------------------------------
# For job authors


def report(
    status: str,
    *,
    result: Any = None,
    error: str | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: float | None = None,
    trace_id: str | None = None,
    url: str | None = None,
    secret: str | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Finish this job's attempt: call from the job with `status` "succeeded" or "failed".

    URL and secret come from CONVEYOR_CALLBACK_URL and CONVEYOR_CALLBACK_SECRET (set for
    subprocess jobs; an HTTP runner gets them in the job it was posted). Standard library
    only, so a job needs nothing but Conveyor installed — or can sign the same way itself.
    """
    url = url or os.environ["CONVEYOR_CALLBACK_URL"]
    secret = secret or os.environ["CONVEYOR_CALLBACK_SECRET"]
    body = json.dumps(
        {
            "status": status,
            "result": result,
            "error": error,
            "trace_id": trace_id,
            "cost_usd": cost_usd,
            "usage": {"model": model, "input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", **sign(secret, body)},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def main() -> None:
    """`python -m conveyor.external succeeded '{"result": ...}'`, for shell-script jobs."""
    status = sys.argv[1] if len(sys.argv) > 1 else "succeeded"
    extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    print(json.dumps(report(status, **extra)))


if __name__ == "__main__":
    main()
