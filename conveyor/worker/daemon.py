"""The worker daemon: wires the parts of a worker together and runs them until stop().

One asyncio loop runs a few cooperating loops, each supervised (a loop that fails is
logged and started again, so that no part of the worker is dead while the rest looks
alive):

- two lanes of the exchange (conveyor.worker.exchange) write how attempts ended and claim
  as many new tasks as there is room for;
- each claimed task runs in a slot (conveyor.worker.slots) through its agent's executor
  (conveyor.executors), and its outcome goes back to the exchange
  (conveyor.worker.attempts);
- the lease keeper (conveyor.worker.leases) renews the leases of everything the worker
  holds, and stops the attempts of tasks that were taken away;
- the listener turns NOTIFYs into wake-ups, cancellations and callbacks' ends;
- the sweeper (and, if configured, the pruner) does the maintenance, the vacuumer
  (conveyor.worker.vacuum) vacuums the queue's hot tables when dead rows pile up, and the
  rollup folder (conveyor.worker.rollup_fold) moves finished tasks' deltas into the rollups.

Signals are the CLI's (conveyor.cli.serve): the first asks stop(), the second stop(now=True).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conveyor import tracing
from conveyor.app import AgentSpec, App
from conveyor.db.pool import Database
from conveyor.errors import DatabaseUnavailable
from conveyor.listener import Listener
from conveyor.llm.pricing import Pricer, parse_prices
from conveyor.log import fields
from conveyor.queue import Claim
from conveyor.sweeper import Pruner, Sweeper
from conveyor.worker.attempts import Attempts
from conveyor.worker.exchange import Exchange
from conveyor.worker.leases import LeaseKeeper
from conveyor.worker.outbox import Outbox
from conveyor.worker.prefetch import Timings, prefetch
from conveyor.worker.rollup_fold import RollupFolder
from conveyor.worker.signals import Signal, first_set
from conveyor.worker.slots import Slots
from conveyor.worker.vacuum import Vacuumer

log = logging.getLogger(__name__)

LOOP_RESTART_DELAY = 1.0  # seconds before a failed loop runs again (not a busy loop)


def make_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


class Worker:
    def __init__(
        self,
        app: App,
        *,
        concurrency: int = 16,
        prefetch: int | None = None,
        agents: list[str] | None = None,
        worker_id: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if prefetch is not None and prefetch < 0:
            raise ValueError("prefetch must be 0 or more")
        unknown = set(agents or ()) - set(app.agents)
        if unknown:
            raise ValueError(f"the app declares no agent {sorted(unknown)}")
        if not app.agents:
            raise ValueError("the app declares no agents; nothing to work on")
        self.app = app
        self.settings = settings = app.settings
        self.concurrency = concurrency
        self.id = worker_id or make_worker_id()
        self.specs: dict[str, AgentSpec] = {
            name: spec for name, spec in app.agents.items() if not agents or name in agents
        }
        # Claimed tasks waiting for a free slot; unless set, as many as the tasks' length
        # calls for (conveyor.worker.prefetch).
        self._prefetch_fixed = prefetch
        self._stop = Signal()
        self._started = asyncio.Event()
        self._wake = Signal()
        self._work_heard = False  # a NOTIFY of new work, not yet claimed for
        self._threads = ThreadPoolExecutor(concurrency, thread_name_prefix="conveyor-agent")
        self.timings = Timings()
        self.pricer = Pricer(parse_prices(settings.llm_prices))
        self.attempts = Attempts(self.specs, settings, self._threads, self.timings, self.pricer)
        outbox = Outbox()
        self.slots = Slots(concurrency, self.attempts, outbox, stopping=self._stop.is_set)
        self.exchange = Exchange(
            worker_id=self.id,
            slots=self.slots,
            outbox=outbox,
            timings=self.timings,
            prefetch=lambda: self.prefetch,
            windows={name: spec.window_seconds for name, spec in self.specs.items()},
            timed={name for name, spec in self.specs.items() if spec.max_tpm or spec.max_rpm},
            poll_seconds=settings.poll_interval,
            stop=self._stop,
            wake=self._wake,
        )
        self.leases = LeaseKeeper(self.slots, (s.lease_seconds for s in self.specs.values()))
        self.sweeper: Sweeper | None = None
        self.pruner: Pruner | None = None
        self.vacuumer: Vacuumer | None = None
        self.folder: RollupFolder | None = None
        self.restarts = 0  # loops that failed and were started again
        tracing.configure(settings)

    # -----------------------------------------------------------------------------------
    # What tests and logs read

    @property
    def held(self) -> dict[int, Claim]:
        """Task id -> claim, for every task the worker holds in the database."""
        return self.slots.held

    @property
    def prefetch(self) -> int:
        if self._prefetch_fixed is not None:
            return self._prefetch_fixed
        return prefetch(self.timings, concurrency=self.concurrency, agents=self.specs)

    @property
    def capacity(self) -> int:
        """How many more tasks the worker would take: free slots plus free buffer room."""
        return self.slots.capacity(self.prefetch)

    @property
    def claimed_count(self) -> int:
        return self.slots.claimed_count

    @property
    def finished_count(self) -> int:
        return self.exchange.written_count + self.slots.settled_count

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def renew_interval(self) -> float:
        return self.leases.interval

    async def renew_once(self, db: Database) -> None:
        await self.leases.renew_once(db)

    # -----------------------------------------------------------------------------------
    # Life cycle

    def stop(self, *, now: bool = False) -> None:
        """Begin a graceful shutdown: claim nothing more, hand back what was claimed but not
        started, let running agents finish until the shutdown timeout. `now=True` hands
        running tasks back too, without waiting."""
        self._stop.set()
        self.slots.release_buffered()
        if now:
            self.slots.hand_back_running()

    async def wait_started(self) -> None:
        await self._started.wait()

    async def run(self) -> None:
        db = await self._connect()
        self.attempts.db = db
        sweeper = self.sweeper = Sweeper(db, interval=self.settings.sweep_interval)
        vacuumer = self.vacuumer = Vacuumer(db)
        folder = self.folder = RollupFolder(db)
        listener = (
            Listener(
                db.url,
                self._on_notify,
                on_reconnect=self._wake.set,
                after_events=lambda conn: self._after_events(conn, db),
                statement_timeout=db.statement_timeout,
            )
            if self.settings.listen
            else None
        )
        background = [
            self._supervised("renewer", lambda: self.leases.run(db)),
            self._supervised("sweeper", lambda: sweeper.run(self._stop)),
            self._supervised("vacuumer", lambda: vacuumer.run(self._stop)),
            self._supervised("rollup-folder", lambda: folder.run(self._stop)),
        ]
        if listener is not None:
            background.append(self._supervised("listener", listener.run))
            await listener.wait_listening(timeout=5.0)
        if self.settings.prune_after:
            pruner = self.pruner = Pruner(db, older_than=self.settings.prune_after)
            background.append(self._supervised("pruner", lambda: pruner.run(self._stop)))
        log.info(
            "worker started",
            extra=fields(
                worker=self.id,
                concurrency=self.concurrency,
                agents=",".join(sorted(self.specs)),
                listen=listener is not None,
            ),
        )
        self._started.set()
        try:
            lanes = [
                self._supervised(f"exchange-{n}", lambda: self.exchange.lane(db)) for n in range(2)
            ]
            await self._stop.wait()
            await self._drain()
            await asyncio.gather(*lanes)
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if listener is not None:
                await listener.close()
            await self.attempts.close()
            self._threads.shutdown(wait=False, cancel_futures=True)
            log.info("worker stopped", extra=fields(worker=self.id, finished=self.finished_count))

    def _supervised(self, name: str, loop: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run one of the worker's loops as a task that does not die silently: a loop that
        raises (a bug, or an error nobody expected) is logged with its traceback and started
        again, so that no part of the worker is dead while the rest looks alive. The loops
        keep their state on their objects, so a restarted one carries on where it stopped.
        A loop that returns has finished on purpose (the exchange after the drain)."""

        async def supervise() -> None:
            while True:
                try:
                    await loop()
                    return
                except Exception:
                    self.restarts += 1
                    log.exception(
                        "worker loop failed, restarting it",
                        extra=fields(worker=self.id, loop=name, restart_in=LOOP_RESTART_DELAY),
                    )
                await asyncio.sleep(LOOP_RESTART_DELAY)

        return asyncio.create_task(supervise(), name=f"conveyor-{name}")

    async def _connect(self) -> Database:
        """The App's pool; a worker started before its database waits for it."""
        delay = 0.5
        while True:
            try:
                return await self.app.database()
            except DatabaseUnavailable as exc:
                if self._stop.is_set():
                    raise
                log.warning(
                    "waiting for the database", extra=fields(error=str(exc), retry_in=delay)
                )
                await first_set([self._stop], delay)  # the delay, or a stop
                delay = min(10.0, delay * 2)

    async def _drain(self) -> None:
        """After stop(): wait for running agents until the deadline, then hand the rest
        back. The exchange writes every outcome before it returns."""
        if self.slots.running:
            log.info(
                "draining",
                extra=fields(
                    worker=self.id,
                    running=len(self.slots.running),
                    timeout=self.settings.shutdown_timeout,
                ),
            )
            await asyncio.wait(self.slots.running_tasks(), timeout=self.settings.shutdown_timeout)
        self.slots.hand_back_running()
        if self.slots.running:
            await asyncio.wait(self.slots.running_tasks())

    # -----------------------------------------------------------------------------------
    # Notifications

    async def _after_events(self, conn: Any, db: Database) -> None:
        """After a batch of NOTIFYs: if one said there is new work, the idle claim on the
        connection that heard it (Exchange.claim_idle says why), else a wake-up of the
        lanes, which claim on their own connections."""
        if not self._work_heard:
            return
        self._work_heard = False
        if not await self.exchange.claim_idle(conn, db.answer_timeout):
            self._wake.set()
            return
        # The claimed tasks' agents start at the loop's next turn: let them, before the
        # listener reads on (the claim's own NOTIFY is waiting for it, 'processing').
        await asyncio.sleep(0)

    def _on_notify(self, event: dict[str, Any]) -> None:
        status = event.get("status")
        agent = event.get("agent")
        if status == "enqueued" and isinstance(agent, str) and agent in self.specs:
            self._work_heard = True  # claimed for in _after_events, after the batch
        ids = event.get("ids", ())
        if not isinstance(ids, list):
            return  # anyone who may NOTIFY can send anything: not ours
        if status != "processing" and status != "cancelled":
            # An external job's callback ended its attempt (the task moved on).
            for task_id in ids:
                self.attempts.ended_elsewhere(task_id)
        if status == "cancelled":
            for task_id in ids:
                self.slots.take_away(task_id, "cancelled")
