"""The App: where agents are declared and tasks are enqueued, read and cancelled.

The core is async (`enqueue_async`, ...). The plain methods (`enqueue`, ...) are thin edges
for scripts and sync frameworks: they run the same coroutine on a private event loop in a
background thread, so there is one implementation of everything.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from conveyor import queue
from conveyor.db.credentials import Credentials, Provider, as_credentials
from conveyor.db.migrate import migrate
from conveyor.db.pool import MIGRATION_STATEMENT_TIMEOUT, Connection, Database, resolve_url
from conveyor.errors import InvalidTask
from conveyor.executors import Dispatcher, Executor
from conveyor.queue import NewTask, TaskRecord
from conveyor.queue.reviews import check_threshold
from conveyor.queue.reviews import register as register_review_below
from conveyor.settings import Settings, SettingsError
from conveyor.task import Task

T = TypeVar("T")
AgentFunction = Callable[[Task], Any]
F = TypeVar("F", bound=AgentFunction)


@dataclass(frozen=True)
class AgentSpec:
    name: str
    fn: AgentFunction | None  # None for an external agent
    is_async: bool
    max_attempts: int = 3
    lease_seconds: float = 60.0
    max_concurrent: int | None = None
    max_tpm: int | None = None
    max_rpm: int | None = None
    backoff_base: float = 1.0  # seconds before the first retry; doubles with each failure
    backoff_max: float = 300.0
    window_seconds: float = 60.0
    estimate_tokens: Callable[[Any], int] | None = None
    dispatcher: Dispatcher | Executor | None = None  # set for an external agent
    compute_usd_per_hour: float | None = None  # None: the settings' default
    review_below: float = 0.9  # a result less confident than this waits for a review

    def registration(self, default_compute_rate: float | None = None) -> queue.AgentRegistration:
        rate = self.compute_usd_per_hour
        if rate is None:
            rate = default_compute_rate
        return queue.AgentRegistration(
            compute_usd_per_hour=None if rate is None else float(rate),
            name=self.name,
            max_attempts=self.max_attempts,
            lease_seconds=self.lease_seconds,
            max_concurrent=self.max_concurrent,
            max_tpm=self.max_tpm,
            max_rpm=self.max_rpm,
            window_seconds=self.window_seconds,
        )


@dataclass
class _Runtime:
    """What an App holds per event loop: its pool and the agents known to exist."""

    db: Database
    known_agents: set[str]


class App:
    def __init__(
        self,
        database_url: str | None = None,
        *,
        settings: Settings | None = None,
        auto_migrate: bool = True,
        pool_size: int = 8,
        credentials: Credentials | Provider | str | None = None,
    ) -> None:
        base = settings or Settings.from_env()
        if database_url is not None:
            base = Settings(**{**base.__dict__, "database_url": database_url})
        self.settings = base
        #: Rotating credentials (see conveyor.db.credentials): a callable, MODULE:CALLABLE,
        #: or CONVEYOR_DATABASE_CREDENTIALS.
        self.credentials = as_credentials(credentials or base.database_credentials)
        self.auto_migrate = auto_migrate
        self.pool_size = pool_size
        self.agents: dict[str, AgentSpec] = {}
        self._url: str | None = None
        self._url_lock = threading.Lock()
        self._runtimes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Runtime] = (
            weakref.WeakKeyDictionary()
        )
        self._runtime_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._portal: _Portal | None = None

    # -----------------------------------------------------------------------------------
    # Declaring agents

    def agent(
        self,
        name: str,
        /,
        *,
        max_concurrent: int | None = None,
        max_tpm: int | None = None,
        max_rpm: int | None = None,
        max_attempts: int = 3,
        lease_seconds: float = 60,
        backoff_base: float = 1.0,
        backoff_max: float = 300.0,
        window_seconds: float = 60.0,
        estimate_tokens: Callable[[Any], int] | None = None,
        compute_usd_per_hour: float | None = None,
        review_below: float = 0.9,
    ) -> Callable[[F], F]:
        """Declare an agent: `@app.agent("invoice", max_attempts=3)` over an async or plain
        function taking a Task. Without the decorator: `app.agent("invoice")(parse_invoice)`.

        `max_concurrent`, `max_tpm` and `max_rpm` (tokens and requests per rolling window of
        `window_seconds`) are defaults: the database's values win once an operator sets
        them. `estimate_tokens(payload)` gives the tokens a task reserves when it is
        enqueued without `estimated_tokens`; without either, a task reserves the agent's
        recent average usage. `compute_usd_per_hour` prices an attempt's wall time
        (default: CONVEYOR_COMPUTE_USD_PER_HOUR) into `task_attempts.compute_cost_usd`.
        A result whose `confidence` is below `review_below` waits for a person's review
        (docs/reviews.md); an operator's threshold wins over this one, like the limits.
        """
        options: dict[str, Any] = dict(
            max_concurrent=max_concurrent,
            max_tpm=max_tpm,
            max_rpm=max_rpm,
            max_attempts=max_attempts,
            lease_seconds=lease_seconds,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            window_seconds=window_seconds,
            estimate_tokens=estimate_tokens,
            compute_usd_per_hour=compute_usd_per_hour,
            review_below=review_below,
        )
        self._check_options(name, **options)

        def register(fn: F) -> F:
            self._declare(
                AgentSpec(
                    name=name,
                    fn=fn,
                    is_async=inspect.iscoroutinefunction(fn),
                    **_spec_options(options),
                )
            )
            return fn

        return register

    def external(
        self, name: str, dispatcher: Dispatcher | Executor, /, **options: Any
    ) -> AgentSpec:
        """Declare an agent whose attempts run as external jobs, started by `dispatcher`
        (`conveyor.external.SubprocessJob` or `HttpJob`) and finished by a signed callback,
        or by an executor of its own (see conveyor.executors.base).
        Takes the same options as `agent()`; the lease is kept alive while the job runs."""
        self._check_options(name, **options)
        spec = AgentSpec(
            name=name, fn=None, is_async=True, dispatcher=dispatcher, **_spec_options(options)
        )
        self._declare(spec)
        return spec

    def _declare(self, spec: AgentSpec) -> None:
        if spec.name in self.agents:
            raise InvalidTask(f"agent {spec.name!r} is declared twice")
        self.agents[spec.name] = spec

    @staticmethod
    def _check_options(
        name: str,
        *,
        max_attempts: int = 3,
        lease_seconds: float = 60,
        max_concurrent: int | None = None,
        max_tpm: int | None = None,
        max_rpm: int | None = None,
        window_seconds: float = 60.0,
        compute_usd_per_hour: float | None = None,
        review_below: float = 0.9,
        **_: Any,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidTask("an agent needs a name")
        if not 1 <= max_attempts <= 1000:
            raise InvalidTask("max_attempts must be between 1 and 1000")
        if not 1 <= lease_seconds <= 86400:
            raise InvalidTask("lease_seconds must be between 1 and 86400")
        for limit_name, limit in (
            ("max_concurrent", max_concurrent),
            ("max_tpm", max_tpm),
            ("max_rpm", max_rpm),
        ):
            if limit is not None and not 1 <= limit <= 2**31 - 1:
                raise InvalidTask(f"{limit_name} must be a positive integer or None")
        if not 0 < window_seconds <= 86400:
            raise InvalidTask("window_seconds must be between 0 and 86400")
        if compute_usd_per_hour is not None and not 0 <= compute_usd_per_hour < 1e6:
            raise InvalidTask("compute_usd_per_hour must be a number >= 0")
        check_threshold(review_below)

    # -----------------------------------------------------------------------------------
    # The connection, one per event loop

    @property
    def database_url(self) -> str:
        """The database's URL, starting the embedded server first if none is configured."""
        with self._url_lock:
            if self._url is None:
                self._url = resolve_url(self.settings)
            return self._url

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A connection from this loop's pool (autocommit), for queries of your own."""
        db = await self.database()
        async with db.connection() as conn:
            yield conn

    async def database(self) -> Database:
        """This loop's pool, opened (and migrated, agents registered) on first use."""
        loop = asyncio.get_running_loop()
        runtime = self._runtimes.get(loop)
        if runtime is not None:
            return runtime.db
        lock = self._runtime_locks.setdefault(loop, asyncio.Lock())
        async with lock:
            runtime = self._runtimes.get(loop)
            if runtime is None:
                runtime = await self._connect()
                self._runtimes[loop] = runtime
        return runtime.db

    async def _connect(self) -> _Runtime:
        if self.credentials is not None and not self.settings.database_url:
            raise SettingsError(
                "database credentials are for a server of your own: set CONVEYOR_DATABASE_URL "
                "(the embedded server has a password of its own)"
            )
        url = await asyncio.to_thread(lambda: self.database_url)
        db = Database(
            url,
            max_size=self.pool_size,
            statement_timeout=self.settings.statement_timeout,
            credentials=self.credentials,
        )
        await db.open(timeout=max(30.0, self.settings.statement_timeout))
        try:
            async with db.connection(statement_timeout=MIGRATION_STATEMENT_TIMEOUT) as conn:
                if self.auto_migrate:
                    await migrate(conn)
                rate = self.settings.compute_usd_per_hour
                await queue.register_agents(
                    conn, [spec.registration(rate) for spec in self.agents.values()]
                )
                await register_review_below(
                    conn, {spec.name: spec.review_below for spec in self.agents.values()}
                )
        except BaseException:
            await db.close()
            raise
        return _Runtime(db=db, known_agents=set(self.agents))

    async def _runtime(self) -> _Runtime:
        await self.database()
        return self._runtimes[asyncio.get_running_loop()]

    async def aclose(self) -> None:
        """Close this loop's pool."""
        runtime = self._runtimes.pop(asyncio.get_running_loop(), None)
        if runtime is not None:
            await runtime.db.close()

    def close(self) -> None:
        """Close the pool used by the plain (sync) methods."""
        if self._portal is not None:
            self._portal.call(self.aclose())
            self._portal.stop()
            self._portal = None

    async def __aenter__(self) -> App:
        await self.database()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -----------------------------------------------------------------------------------
    # The async core

    async def enqueue_async(
        self,
        agent: str,
        payload: Any = None,
        *,
        priority: int = 0,
        estimated_tokens: int | None = None,
        idempotency_key: str | None = None,
        run_after: datetime | timedelta | float | None = None,
        max_attempts: int | None = None,
        tenant: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> int:
        """Enqueue one task and return its id (the existing id for a repeated key)."""
        task = NewTask(
            agent,
            payload,
            priority,
            idempotency_key,
            estimated_tokens,
            max_attempts,
            run_after,
            tenant,
            labels,
        )
        (task_id,) = await self.enqueue_many_async([task])
        return task_id

    async def enqueue_many_async(self, tasks: Iterable[NewTask | dict[str, Any]]) -> list[int]:
        """Enqueue many tasks in one round trip; ids come back in the same order."""
        batch = [self._estimated(t if isinstance(t, NewTask) else _new_task(t)) for t in tasks]
        runtime = await self._runtime()
        async with runtime.db.connection() as conn:
            return await queue.enqueue_many(conn, batch, known_agents=runtime.known_agents)

    async def get_task_async(self, task_id: int) -> TaskRecord:
        async with self.connection() as conn:
            return await queue.get_task(conn, task_id)

    async def cancel_async(self, task_id: int) -> TaskRecord:
        async with self.connection() as conn:
            return await queue.cancel(conn, task_id)

    async def retry_async(self, task_id: int) -> TaskRecord:
        async with self.connection() as conn:
            return await queue.retry(conn, task_id)

    # -----------------------------------------------------------------------------------
    # Plain edges for sync code

    def enqueue(self, agent: str, payload: Any = None, **options: Any) -> int:
        return self._call(self.enqueue_async(agent, payload, **options))

    def enqueue_many(self, tasks: Iterable[NewTask | dict[str, Any]]) -> list[int]:
        return self._call(self.enqueue_many_async(list(tasks)))

    def get_task(self, task_id: int) -> TaskRecord:
        return self._call(self.get_task_async(task_id))

    def cancel(self, task_id: int) -> TaskRecord:
        return self._call(self.cancel_async(task_id))

    def retry(self, task_id: int) -> TaskRecord:
        return self._call(self.retry_async(task_id))

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(
                "this is the plain (blocking) form; inside an event loop await its _async form"
            )
        if self._portal is None:
            self._portal = _Portal()
        return self._portal.call(coro)

    def _estimated(self, task: NewTask) -> NewTask:
        """The task with its token estimate from the agent's estimator, if it has one."""
        spec = self.agents.get(task.agent)
        if task.estimated_tokens is not None or spec is None or spec.estimate_tokens is None:
            return task
        try:
            estimate = spec.estimate_tokens(task.payload)
        except Exception as exc:
            raise InvalidTask(f"the token estimator of agent {task.agent!r} failed: {exc}") from exc
        return dataclasses.replace(task, estimated_tokens=int(estimate))


def _spec_options(options: dict[str, Any]) -> dict[str, Any]:
    values = dict(options)
    values["lease_seconds"] = float(values.get("lease_seconds", 60))
    values["window_seconds"] = float(values.get("window_seconds", 60.0))
    return values


def _new_task(values: dict[str, Any]) -> NewTask:
    try:
        return NewTask(**values)
    except TypeError as exc:
        raise InvalidTask(f"not a task: {exc}") from None


class _Portal:
    """An event loop in a daemon thread that runs coroutines for sync callers."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="conveyor-portal", daemon=True
        )
        self._thread.start()

    def call(self, coro: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(_as_coroutine(coro), self._loop).result()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable
