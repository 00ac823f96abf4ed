"""Attempts as Ray jobs: `app.external("render", RayJob("python -m render_job"))`.

For long, heavy agents: each attempt is one Ray job, submitted through the cluster's Jobs
REST API (the dashboard's `POST /api/jobs/`), with the attempt's identity as its
`submission_id` (`conveyor-<attempt id>-<digest>`, see `submission_id`), so that the job,
its logs and its driver are found under the attempt's name in Ray's dashboard. The job
ends its attempt itself, with the signed callback of any external job
(`conveyor.external.report(...)`); the worker keeps the lease renewed meanwhile, as for any
attempt, and only waits. A RayJob is a
dispatcher, like SubprocessJob and HttpJob, behind the same CallbackExecutor:

- the job's environment (its runtime_env's `env_vars`) has CONVEYOR_CALLBACK_URL,
  CONVEYOR_CALLBACK_SECRET, CONVEYOR_TASK_ID, CONVEYOR_ATTEMPT_ID and CONVEYOR_JOB (the
  job's JSON, payload included: what a subprocess job reads on stdin);
- the job's end is watched by asking the Jobs API for its status every `poll_interval`
  seconds: a job that ended (SUCCEEDED, FAILED, STOPPED) without calling back fails the
  attempt after the callback's grace, with what Ray said;
- cancel (the task was cancelled, the lease lost, the worker stops): the job is stopped
  (`POST /api/jobs/<id>/stop`);
- a worker that dies leaves its job running (a Ray job has no owner in the worker); the
  attempt's lease expires and the task runs again, and a callback from the old job then
  finds its attempt over and is refused (fenced, as for any late callback).

Compared with RayTask (one Ray task per attempt, driven by the worker's own process): a
job costs a driver process on the cluster and seconds to start, and needs the dashboard
(`pip install 'ray[default]'` on the head node), but it runs whatever the entrypoint runs,
for hours, with its own Ray tasks and actors, without the worker's process in the loop.

`address` is the dashboard's URL (default: RAY_API_SERVER_ADDRESS, else
http://127.0.0.1:8265). A cluster with token authentication (Ray's default from 2.52)
wants its token: `token=`, else RAY_AUTH_TOKEN, else the file Ray writes on the head node
(RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token), when there is one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from conveyor.executors.jobs import Dispatched, DispatchError, Job
from conveyor.log import fields

log = logging.getLogger(__name__)

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
#: The statuses of a Ray job that has ended.
ENDED = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


@dataclass(frozen=True)
class RayJob:
    """Submit each attempt as a Ray job running `entrypoint` (a shell command)."""

    entrypoint: str
    address: str | None = None  # the dashboard; None: RAY_API_SERVER_ADDRESS or the default
    runtime_env: Mapping[str, Any] = field(default_factory=dict)
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_memory: int | None = None  # bytes
    entrypoint_resources: Mapping[str, float] | None = None
    token: str | None = None
    timeout: float = 24 * 3600.0  # seconds without a callback before the attempt fails
    callback_grace: float = 5.0  # seconds a callback may trail the job's end
    poll_interval: float = 1.0  # seconds between two looks at the job's status
    request_timeout: float = 30.0

    @property
    def url(self) -> str:
        address = self.address or os.environ.get("RAY_API_SERVER_ADDRESS") or DEFAULT_ADDRESS
        return address.rstrip("/")

    def submission(self, job: Job) -> dict[str, Any]:
        """The body of the job's `POST /api/jobs/`."""
        env_vars = {
            **dict(self.runtime_env.get("env_vars", {})),
            "CONVEYOR_CALLBACK_URL": job.callback_url,
            "CONVEYOR_CALLBACK_SECRET": job.secret,
            "CONVEYOR_TASK_ID": str(job.task_id),
            "CONVEYOR_ATTEMPT_ID": str(job.attempt_id),
            "CONVEYOR_JOB": json.dumps(job.document()),
        }
        body: dict[str, Any] = {
            "entrypoint": self.entrypoint,
            "submission_id": submission_id(job),
            "runtime_env": {**self.runtime_env, "env_vars": env_vars},
            "metadata": {
                "conveyor_task_id": str(job.task_id),
                "conveyor_attempt": str(job.attempt),
                "conveyor_agent": job.agent,
            },
        }
        for name in ("num_cpus", "num_gpus", "memory", "resources"):
            value = getattr(self, f"entrypoint_{name}")
            if value is not None:
                body[f"entrypoint_{name}"] = dict(value) if name == "resources" else value
        return body

    async def dispatch(self, job: Job) -> Dispatched:
        name = submission_id(job)
        async with self._client() as client:
            response = await client.post("/api/jobs/", json=self.submission(job))
        if response.status_code >= 300 and "already exists" not in response.text:
            # (A job of this attempt that exists is this attempt's: watched, not repeated.)
            raise DispatchError(
                f"the Ray Jobs API at {self.url} answered {response.status_code}: "
                f"{_line(response.text)}"
            )

        async def stop() -> None:
            async with self._client() as client:
                answer = await client.post(f"/api/jobs/{name}/stop")
            if answer.status_code >= 300:
                log.warning(
                    "a Ray job could not be stopped",
                    extra=fields(job=name, status=answer.status_code, error=_line(answer.text)),
                )

        return Dispatched(run_id=f"ray-job:{name}", ended=self._ended(name), stop=stop)

    async def _ended(self, name: str) -> int:
        """Wait for the job's end; its driver's exit code (0 succeeded, 1 otherwise when
        Ray gives none). A Jobs API that does not answer is asked again: the job may still
        be running, and its callback still ends the attempt."""
        async with self._client() as client:
            while True:
                try:
                    response = await client.get(f"/api/jobs/{name}")
                    info = response.json() if response.status_code == 200 else {}
                except (httpx.HTTPError, ValueError) as exc:
                    log.warning(
                        "the Ray Jobs API did not answer; asking again",
                        extra=fields(job=name, error=f"{type(exc).__name__}: {exc}"),
                    )
                    info = {}
                status = info.get("status")
                if status in ENDED:
                    if status != "SUCCEEDED":
                        log.info(
                            "a Ray job ended",
                            extra=fields(job=name, status=status, message=info.get("message")),
                        )
                    code = info.get("driver_exit_code")
                    return int(code) if isinstance(code, int) else int(status != "SUCCEEDED")
                await asyncio.sleep(self.poll_interval)

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, timeout=self.request_timeout, headers=self._headers()
        )

    def _headers(self) -> dict[str, str]:
        token = self.token or os.environ.get("RAY_AUTH_TOKEN")
        if token is None:
            path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray/auth_token")
            if path.is_file():
                token = path.read_text().strip()
        return {"Authorization": f"Bearer {token}"} if token else {}


def submission_id(job: Job) -> str:
    """The Ray job of an attempt is named after it: one job per attempt, found by name.

    Attempt ids are unique within a database only, and one Ray cluster may serve several
    (a staging and a production deployment, a database created again): a digest of the
    attempt's callback secret, which is derived from the database's own key, keeps two
    databases' attempt 17 apart (`conveyor-17-3fa9c2d1`) and gives nothing away."""
    digest = hashlib.sha256(job.secret.encode()).hexdigest()[:8]
    return f"conveyor-{job.attempt_id}-{digest}"


def _line(text: str) -> str:
    return " ".join(text.split())[:300]
