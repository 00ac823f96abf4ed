"""What the harness needs from each queue library, and Conveyor's side of it.

A subject installs its library's schema in its own database, enqueues through the
library's client API, says how many tasks are not finished yet, and gives the command of
one worker process. The peers are in peers.py.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

import psycopg

from conveyor import App, NewTask, Task
from conveyor.settings import Settings


class Subject(Protocol):
    name: str

    async def open(self, url: str) -> None: ...
    async def close(self) -> None: ...
    async def reset(self) -> None: ...
    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None: ...
    async def enqueue_one(self, payload: dict[str, Any]) -> None: ...
    async def remaining(self) -> int: ...
    def worker_command(
        self, concurrency: int, processes: int
    ) -> tuple[list[str], dict[str, str]]: ...
    def describe(self, concurrency: int, processes: int) -> str: ...


async def _never_run(task: Task) -> None:
    raise AssertionError("the harness only enqueues; apps.py runs the agent")


class ConveyorSubject:
    name = "conveyor"
    # The agent the harness enqueues for and the worker App that runs it (benchmarks/apps.py).
    agent = "noop"
    agent_options: dict[str, Any] = {}
    worker_app = "apps:app"

    def __init__(self, prefetch: int | None = None) -> None:
        self.prefetch = prefetch  # None: the worker's default, which equals concurrency

    async def open(self, url: str) -> None:
        self.url = url
        self.app = App(settings=Settings(database_url=url))
        self.app.agent(self.agent, **self.agent_options)(_never_run)
        await self.app.database()  # migrates and registers the agent
        self.admin = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def close(self) -> None:
        await self.app.aclose()
        await self.admin.close()

    async def reset(self) -> None:
        # CASCADE: tables added later (reviews) refer to tasks.
        await self.admin.execute(
            "TRUNCATE tasks, task_attempts, attempt_usage RESTART IDENTITY CASCADE"
        )

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        await self.app.enqueue_many_async([NewTask(self.agent, p) for p in payloads])

    async def enqueue_one(self, payload: dict[str, Any]) -> None:
        await self.app.enqueue_async(self.agent, payload)

    async def remaining(self) -> int:
        cur = await self.admin.execute(
            "SELECT count(*) FROM tasks WHERE status IN ('enqueued', 'processing')"
        )
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    def worker_command(self, concurrency: int, processes: int) -> tuple[list[str], dict[str, str]]:
        # The real daemon, as deployed: `conveyor worker`, default settings otherwise.
        argv = [sys.executable, "-m", "conveyor.cli", "worker", "--app", self.worker_app]
        argv += ["--concurrency", str(concurrency)]
        if self.prefetch is not None:
            argv += ["--prefetch", str(self.prefetch)]
        return argv, {"CONVEYOR_DATABASE_URL": self.url}

    def describe(self, concurrency: int, processes: int) -> str:
        prefetch = concurrency if self.prefetch is None else self.prefetch
        return f"`conveyor worker --concurrency {concurrency}`, prefetch {prefetch}"
