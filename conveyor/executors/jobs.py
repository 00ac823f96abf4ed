"""The jobs an external agent's attempts run as: a subprocess, or a POST to a runner.

A dispatcher starts the job of one attempt and says how to watch it (`Dispatched`); the job
ends the attempt with a signed callback (conveyor.executors.callback waits for it).
Declare one with `app.external(name, SubprocessJob([...]))` or `HttpJob(url)` (or
`RayJob(entrypoint)`, conveyor.executors.ray_jobs: one Ray job per attempt); any object
with an `async dispatch(job) -> Dispatched` method is a dispatcher too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx


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
    # Called when the attempt is cancelled, to stop the job: a plain callable (a signal),
    # or one returning an awaitable (a request to the job's runner), awaited, bounded.
    stop: Any = None


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
