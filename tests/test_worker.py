"""The worker daemon in-process: outcomes, retries, cancellation, leases, wake-ups, drain."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from conveyor import App, PermanentFailure, Task, TaskStatus, Throttled, queue
from conveyor.listener import APPLICATION_NAME
from conveyor.policy import backoff
from conveyor.settings import Settings
from conveyor.worker import Worker, claim_sizes
from tests.conftest import wait_for


async def status_of(app: App, task_id: int) -> TaskStatus:
    return (await app.get_task_async(task_id)).status


class Running:
    """A worker running in this loop for the duration of a test."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.task = asyncio.create_task(worker.run())

    async def __aenter__(self) -> Worker:
        await asyncio.wait_for(self.worker.wait_started(), 10)
        return self.worker

    async def __aexit__(self, *exc: object) -> None:
        self.worker.stop()
        await asyncio.wait_for(self.task, 20)


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    app.gate = asyncio.Event()  # type: ignore[attr-defined]
    app.started = asyncio.Event()  # type: ignore[attr-defined]

    @app.agent("double")
    async def double(task: Task) -> dict[str, int]:
        task.report_usage(model="tiny", input_tokens=3, output_tokens=2)
        return {"value": task.payload["n"] * 2}

    @app.agent("threaded")
    def threaded(task: Task) -> str:
        return threading.current_thread().name

    @app.agent("flaky", max_attempts=3, backoff_base=0.01)
    async def flaky(task: Task) -> int:
        if task.attempt < task.payload["succeed_on"]:
            raise ValueError(f"attempt {task.attempt} fails")
        return task.attempt

    @app.agent("hopeless")
    async def hopeless(task: Task) -> None:
        raise PermanentFailure("this document is not an invoice")

    @app.agent("unjsonable")
    async def unjsonable(task: Task) -> object:
        return object()

    @app.agent("throttled", max_attempts=1)
    async def throttled(task: Task) -> str:
        if task.attempt < 3:
            raise Throttled(retry_after=0.01)
        return "through"

    @app.agent("blocking", lease_seconds=2)
    async def blocking(task: Task) -> str:
        app.started.set()  # type: ignore[attr-defined]
        await app.gate.wait()  # type: ignore[attr-defined]
        return "released"

    yield app
    await app.aclose()


async def test_worker_runs_async_and_sync_agents(app: App) -> None:
    ids = [await app.enqueue_async("double", {"n": n}) for n in range(5)]
    sync_id = await app.enqueue_async("threaded", {})
    async with Running(Worker(app, concurrency=4)):
        await wait_for(
            lambda: _all(app, [*ids, sync_id], TaskStatus.COMPLETED), what="tasks completed"
        )
    task = await app.get_task_async(ids[3])
    assert task.result == {"value": 6}
    (attempt,) = task.attempt_history
    assert (attempt.model, attempt.input_tokens, attempt.output_tokens) == ("tiny", 3, 2)
    assert (await app.get_task_async(sync_id)).result.startswith("conveyor-agent")


async def _all(app: App, ids: list[int], status: TaskStatus) -> bool:
    return all([await status_of(app, i) == status for i in ids])


async def test_failures_retry_then_succeed_or_fail(app: App) -> None:
    recovers = await app.enqueue_async("flaky", {"succeed_on": 3})
    never = await app.enqueue_async("flaky", {"succeed_on": 9})
    permanent = await app.enqueue_async("hopeless", {})
    bad_result = await app.enqueue_async("unjsonable", {})
    async with Running(Worker(app, concurrency=4)):
        await wait_for(
            lambda: _all(app, [never, permanent, bad_result], TaskStatus.FAILED), what="failures"
        )
        await wait_for(lambda: _all(app, [recovers], TaskStatus.COMPLETED), what="recovery")
    assert (await app.get_task_async(recovers)).result == 3
    failed = await app.get_task_async(never)
    assert [a.status for a in failed.attempt_history] == ["failed"] * 3
    assert "ValueError: attempt 3 fails" in (failed.error or "")
    assert "Traceback" in (failed.error or ""), "the traceback is kept for debugging"
    assert len((await app.get_task_async(permanent)).attempt_history) == 1
    bad = await app.get_task_async(bad_result)
    assert "not JSON" in (bad.error or "") and len(bad.attempt_history) == 1


async def test_throttling_requeues_without_spending_retries(app: App) -> None:
    task_id = await app.enqueue_async("throttled", {})  # max_attempts=1
    async with Running(Worker(app, concurrency=1)):
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="completion")
    task = await app.get_task_async(task_id)
    assert [a.status for a in task.attempt_history] == ["throttled", "throttled", "succeeded"]


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    samples = [backoff(n, 1.0, 60.0) for n in (1, 2, 3, 4) for _ in range(200)]
    first, second, third, fourth = (samples[i * 200 : (i + 1) * 200] for i in range(4))
    assert min(first) >= 0.5 and max(first) <= 1.0
    assert min(second) >= 1.0 and max(second) <= 2.0
    assert min(fourth) >= 4.0 and max(fourth) <= 8.0
    assert len(set(third)) > 100, "jittered"
    assert max(backoff(30, 1.0, 60.0) for _ in range(100)) <= 60.0


async def test_cancelling_a_running_task_stops_its_agent(app: App) -> None:
    task_id = await app.enqueue_async("blocking", {})
    async with Running(Worker(app, concurrency=2)) as worker:
        await asyncio.wait_for(app.started.wait(), 10)  # type: ignore[attr-defined]
        await app.cancel_async(task_id)
        await wait_for(lambda: not worker.slots.running, what="the agent stopped")
        await wait_for(lambda: not worker.held, what="the outcome written")
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.CANCELLED
    (attempt,) = task.attempt_history
    assert attempt.status == "cancelled" and attempt.late_outcome == "cancelled"


async def test_a_lease_taken_away_stops_the_agent_at_the_next_renewal(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("blocking", {})
    async with Running(Worker(app, concurrency=1)) as worker:
        await asyncio.wait_for(app.started.wait(), 10)  # type: ignore[attr-defined]
        await conn.execute("UPDATE tasks SET lease_expires_at = now() - interval '1 s'")
        assert worker.sweeper is not None
        await worker.sweeper.run_once()  # or the worker's own sweeper got there first

        async def first_attempt_lost() -> bool:
            task = await app.get_task_async(task_id)
            return task.attempt_history[0].status == "lost"

        await wait_for(first_attempt_lost, what="the sweep")
        db = await app.database()
        await worker.renew_once(db)

        async def first_attempt_stopped() -> bool:
            task = await app.get_task_async(task_id)
            return task.attempt_history[0].late_outcome == "cancelled"

        await wait_for(first_attempt_stopped, what="the agent of attempt 1 stopped")
        app.gate.set()  # type: ignore[attr-defined]
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="attempt 2")
    task = await app.get_task_async(task_id)
    assert [a.status for a in task.attempt_history] == ["lost", "succeeded"]


async def test_leases_are_renewed_while_a_long_task_runs(app: App, conn: Any) -> None:
    task_id = await app.enqueue_async("blocking", {})  # lease 2 s, renewed every 0.5 s
    async with Running(Worker(app, concurrency=1)) as worker:
        await asyncio.wait_for(app.started.wait(), 10)  # type: ignore[attr-defined]
        first = await _lease(conn, task_id)
        await wait_for(lambda: _lease_after(conn, task_id, first), what="a renewal")
        assert worker.sweeper is not None
        assert await worker.sweeper.run_once() == [], "a renewed lease is not swept"
        app.gate.set()  # type: ignore[attr-defined]
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="completion")
    assert len((await app.get_task_async(task_id)).attempt_history) == 1


async def _lease(conn: Any, task_id: int) -> Any:
    cur = await conn.execute("SELECT lease_expires_at FROM tasks WHERE id = %s", (task_id,))
    return (await cur.fetchone())["lease_expires_at"]


async def _lease_after(conn: Any, task_id: int, before: Any) -> bool:
    return bool(await _lease(conn, task_id) > before)


async def test_a_notify_wakes_an_idle_worker_long_before_the_poll(settings: Settings) -> None:
    app = App(settings=dataclasses.replace(settings, poll_interval=60))
    app.agent("double")(_double)
    async with Running(Worker(app, concurrency=1)) as worker:
        await asyncio.sleep(0)  # the claimer is now waiting on its (60 s) poll
        task_id = await app.enqueue_async("double", {"n": 1})
        await wait_for(
            lambda: _all(app, [task_id], TaskStatus.COMPLETED),
            timeout=5,
            what="a wake-up by NOTIFY",
        )
        assert worker.finished_count == 1
    await app.aclose()


async def test_an_idle_worker_claims_on_the_connection_that_heard_the_notify(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle worker's claim runs on its LISTEN connection (Exchange.claim_idle), whose
    server process has just sent the NOTIFY, not on a pooled connection."""
    names: list[str | None] = []
    real = queue.claim_alone

    async def noted(conn: Any, **kwargs: Any) -> Any:
        names.append(conn.info.parameter_status("application_name"))
        return await real(conn, **kwargs)

    monkeypatch.setattr(queue, "claim_alone", noted)
    app = App(settings=dataclasses.replace(settings, poll_interval=60))
    app.agent("double")(_double)
    async with Running(Worker(app, concurrency=1)) as worker:
        for n in range(3):
            await wait_for(lambda: _at_rest(worker), what="an idle worker")
            task_id = await app.enqueue_async("double", {"n": n})

            def finished(count: int = n + 1) -> bool:
                return worker.finished_count == count

            await wait_for(finished, timeout=5, what="a claim")
            assert await status_of(app, task_id) == TaskStatus.COMPLETED
        assert worker.exchange.idle_claims == 3
        assert names == [APPLICATION_NAME] * 3
    await app.aclose()


async def test_a_failed_claim_on_the_listen_connection_leaves_it_to_the_lanes(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle claim on the LISTEN connection fails after its statement may have
    committed: the lanes release what it may have claimed and claim the task again."""
    real = queue.claim_alone

    async def committed_unheard(conn: Any, **kwargs: Any) -> Any:
        await real(conn, **kwargs)  # claimed in the database...
        raise ConnectionError("... but the answer was lost")

    monkeypatch.setattr(queue, "claim_alone", committed_unheard)
    app = App(settings=dataclasses.replace(settings, poll_interval=60))
    app.agent("double")(_double)
    async with Running(Worker(app, concurrency=1)) as worker:
        await wait_for(lambda: _at_rest(worker), what="an idle worker")
        task_id = await app.enqueue_async("double", {"n": 21})
        await wait_for(
            lambda: _all(app, [task_id], TaskStatus.COMPLETED), timeout=10, what="the lanes"
        )
        assert worker.exchange.idle_claims == 0
    task = await app.get_task_async(task_id)
    assert task.result == 42
    assert [a.status for a in task.attempt_history] == ["lost", "succeeded"]
    await app.aclose()


def _at_rest(worker: Worker) -> bool:
    """Idle, its start-up claims done: the next task is claimed when a NOTIFY says so."""
    exchange = worker.exchange
    return not exchange.work_maybe and not exchange.claiming and not worker.slots.running


async def _double(task: Task) -> int:
    return int(task.payload["n"]) * 2


async def test_an_idle_worker_claims_once_per_poll_interval(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its two lanes must not wake each other: each waking lane used to take the other's
    cleared event for its poll interval, and an idle worker claimed ~1,000 times a second."""
    exchanges = 0
    real = queue.finish_and_claim

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal exchanges
        exchanges += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(queue, "finish_and_claim", counted)
    app = App(settings=dataclasses.replace(settings, poll_interval=0.2))
    app.agent("double")(_double)
    async with Running(Worker(app, concurrency=4)):
        start = exchanges
        await asyncio.sleep(1.0)  # the observation window, not a wait for a condition
        idle_exchanges = exchanges - start
    await app.aclose()
    # 1 s at a 0.2 s poll: about 5 claims per lane, 10 in all; the bug made hundreds.
    assert idle_exchanges <= 16, idle_exchanges


async def test_without_listen_the_worker_polls(settings: Settings) -> None:
    app = App(settings=dataclasses.replace(settings, listen=False, poll_interval=0.1))
    app.agent("double")(_double)
    async with Running(Worker(app, concurrency=1)):
        task_id = await app.enqueue_async("double", {"n": 4})
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="a poll")
    assert (await app.get_task_async(task_id)).result == 8
    await app.aclose()


async def test_graceful_stop_lets_running_tasks_finish(app: App) -> None:
    task_id = await app.enqueue_async("blocking", {})
    worker = Worker(app, concurrency=1)
    run = asyncio.create_task(worker.run())
    await asyncio.wait_for(app.started.wait(), 10)  # type: ignore[attr-defined]
    worker.stop()
    later = await app.enqueue_async("double", {"n": 1})
    app.gate.set()  # type: ignore[attr-defined]
    await asyncio.wait_for(run, 10)
    assert await status_of(app, task_id) == TaskStatus.COMPLETED
    assert await status_of(app, later) == TaskStatus.ENQUEUED, "nothing claimed while draining"


async def test_stop_past_the_deadline_hands_tasks_back_at_once(app: App) -> None:
    app.settings = dataclasses.replace(app.settings, shutdown_timeout=0.1)
    task_id = await app.enqueue_async("blocking", {})
    worker = Worker(app, concurrency=1)
    run = asyncio.create_task(worker.run())
    await asyncio.wait_for(app.started.wait(), 10)  # type: ignore[attr-defined]
    worker.stop()
    await asyncio.wait_for(run, 10)
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED, "handed back, not left to expire"
    assert task.lease_expires_at is None
    (attempt,) = task.attempt_history
    assert attempt.status == "lost" and "shutting down" in (attempt.error or "")


async def test_orphans_of_a_lost_claim_are_released(app: App, conn: Any) -> None:
    """A claim whose answer never arrived leaves tasks 'processing' under our name."""
    from conveyor import queue

    held = await app.enqueue_async("double", {"n": 1})
    orphan = await app.enqueue_async("double", {"n": 2})
    claimed = await queue.claim(conn, worker_id="me", agents=["double"], limit=2)
    kept = [c.claim_token for c in claimed if c.id == held and c.claim_token]
    released = await queue.sweep(conn, orphans_of="me", keep=kept)
    assert released == [(orphan, TaskStatus.ENQUEUED)]
    assert await status_of(app, held) == TaskStatus.PROCESSING


async def test_a_worker_prunes_old_finished_tasks_when_asked(settings: Settings, conn: Any) -> None:
    app = App(settings=dataclasses.replace(settings, prune_after=3600))
    app.agent("double")(_double)
    old, recent = [await app.enqueue_async("double", {"n": n}) for n in (1, 2)]
    async with Running(Worker(app, concurrency=2)) as worker:
        await wait_for(lambda: _all(app, [old, recent], TaskStatus.COMPLETED), what="both done")
        await conn.execute(
            "UPDATE tasks SET finished_at = now() - interval '2 hours' WHERE id = %s", (old,)
        )
        assert worker.pruner is not None
        assert await worker.pruner.run_once() == 1
    cur = await conn.execute("SELECT id FROM tasks")
    assert [r["id"] for r in await cur.fetchall()] == [recent]
    await app.aclose()


async def test_a_throttled_agent_shrinks_its_shared_budget(settings: Settings, conn: Any) -> None:
    app = App(settings=settings)

    @app.agent("llm", max_tpm=100_000, max_attempts=1)
    async def llm(task: Task) -> str:
        if task.attempt == 1:
            raise Throttled(retry_after=0.05)
        return "ok"

    task_id = await app.enqueue_async("llm", {})
    async with Running(Worker(app, concurrency=1)):
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="completion")
    cur = await conn.execute("SELECT throttle_factor, throttled_at FROM agents WHERE name = 'llm'")
    row = await cur.fetchone()
    assert row["throttle_factor"] == 0.5 and row["throttled_at"] is not None
    await app.aclose()


@pytest.mark.parametrize(
    ("task_s", "exchange_s", "expected"),
    [
        ({}, None, 16),  # nothing measured yet: one task per slot
        ({"quick": 0.00005}, 0.003, 16),  # "slow" has not run yet: it may be slow
        ({"quick": 1.0, "slow": 1.0}, 0.005, 16),  # agents that run for a while: one per slot
        ({"quick": 0.010, "slow": 0.010}, 0.020, 64),  # 16 slots' tasks during two exchanges
        ({"quick": 0.002, "slow": 0.002}, 0.005, 80),
        ({"quick": 0.005, "slow": 0.005}, 0.100, 320),  # rather than 640: 0.1 s of work
        ({"quick": 0.00005, "slow": 0.00005}, 0.003, 512),  # a no-op drain: 512 at most
        ({"quick": 0.00005, "slow": 2.0}, 0.003, 16),  # the slowest agent decides
    ],
)
def test_the_default_prefetch_follows_the_tasks_length(
    settings: Settings, task_s: dict[str, float], exchange_s: float | None, expected: int
) -> None:
    app = App(settings=settings)
    app.agent("quick")(_quick)
    app.agent("slow")(_quick)
    worker = Worker(app, concurrency=16)
    worker.timings.task_seconds, worker.timings.exchange_seconds = task_s, exchange_s
    assert worker.prefetch == expected
    assert Worker(app, concurrency=16, prefetch=3).prefetch == 3, "a set prefetch stays"


async def _quick(task: Task) -> None:
    return None


def test_agents_with_timed_budgets_are_looked_at_more_often(settings: Settings) -> None:
    """Room under a token or request budget comes back with time, which no NOTIFY says:
    such agents are looked at twice per twentieth of their window, if that is sooner."""
    settings = dataclasses.replace(settings, poll_interval=1.0)
    app = App(settings=settings)
    app.agent("quick")(_quick)
    app.agent("budget", max_tpm=1000, window_seconds=10)(_quick)
    app.agent("minute", max_rpm=60)(_quick)
    assert Worker(app, agents=["quick"]).exchange.poll_interval() == 1.0
    assert Worker(app, agents=["quick", "budget"]).exchange.poll_interval() == 0.25
    assert Worker(app, agents=["minute"]).exchange.poll_interval() == 1.0, "60 s / 40 > 1 s"
    throttled = Worker(app, agents=["quick"])
    throttled.exchange.timed.add("quick")  # as after a 429: it learns a budget over 60 s
    assert throttled.exchange.poll_interval() == 1.0
    short = App(settings=settings)
    short.agent("tiny", max_tpm=10, window_seconds=1)(_quick)
    assert Worker(short).exchange.poll_interval() == 0.1, "ten times a second at most"


def test_a_shrunk_prefetch_claims_nothing_rather_than_a_negative_count() -> None:
    """When the adaptive prefetch shrinks under a full buffer (tasks got slower), capacity
    goes below zero. The claim must then be empty: a negative one (the expression was
    `capacity - claiming`, here -3) lowered the count of slots promised to claims in
    flight, and the other lane claimed that many more than there was room for."""

    def sizes(
        capacity: int,
        claiming: int,
        free_slots: int = 0,
        *,
        work: bool = True,
        orphans: bool = False,
    ) -> tuple[int, int, int]:
        return claim_sizes(
            capacity=capacity,
            claiming=claiming,
            free_slots=free_slots,
            work_maybe=work,
            releasing_orphans=orphans,
        )

    assert sizes(-3, 0) == (0, 0, 0)
    assert sizes(-3, 5) == (0, 0, 0)
    assert sizes(2, 5) == (0, 0, 0)
    # Room left: claim it, limited agents only for the slots free now.
    assert sizes(10, 4, 2) == (6, 6, 2)
    assert sizes(10, 0, work=False) == (10, 0, 0)
    assert sizes(10, 4, orphans=True) == (6, 0, 0), "orphans released with no claim in flight"
    assert sizes(10, 0, orphans=True) == (10, 10, 0)


async def test_what_a_429_taught_is_kept_when_recording_it_fails(
    settings: Settings, conn: Any
) -> None:
    """Recording a throttle fails once (a serialization failure, injected by a trigger):
    the lesson is kept and recorded by a later exchange, not dropped, and the agent does
    not claim before it is (it would claim at the budget the endpoint just refused)."""
    app = App(settings=settings)

    @app.agent("llm", max_tpm=100_000, max_attempts=1)
    async def llm(task: Task) -> str:
        if task.attempt == 1:
            raise Throttled(retry_after=0.05)
        return "ok"

    await app.database()
    await conn.execute("""
        CREATE SEQUENCE throttle_faults;
        CREATE FUNCTION fail_first_report() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF nextval('throttle_faults') = 1 THEN
                RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'injected';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER fail_first_report BEFORE UPDATE OF throttled_at ON agents
        FOR EACH ROW EXECUTE FUNCTION fail_first_report();
    """)
    task_id = await app.enqueue_async("llm", {})
    async with Running(Worker(app, concurrency=1)):
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="completion")
    cur = await conn.execute(
        "SELECT a.throttle_factor, a.throttled_at, (SELECT last_value FROM throttle_faults) AS"
        " faults, (SELECT min(started_at) FROM task_attempts WHERE attempt = 2) AS retried"
        " FROM agents a WHERE name = 'llm'"
    )
    row = await cur.fetchone()
    assert row["faults"] >= 2, "the first report failed, a later one went through"
    assert row["throttle_factor"] == 0.5 and row["throttled_at"] is not None
    assert row["throttled_at"] <= row["retried"], "recorded before the agent claimed again"
    await app.aclose()


def test_the_web_app_takes_the_retry_policy_without_the_worker() -> None:
    """The callback route computes a retry's delay as a worker does, from conveyor.policy:
    serving the web app must not load the worker daemon."""
    import subprocess
    import sys

    code = (
        "import sys, conveyor.web.app, conveyor.web.callbacks;"
        "print(sorted(m for m in sys.modules if m in ('conveyor.worker', 'conveyor.policy')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['conveyor.policy']"


async def test_no_lane_claims_an_agent_while_the_other_records_its_throttling(
    settings: Settings,
) -> None:
    """While one lane records what a 429 taught an agent, the lesson is in neither the
    worker's pending throttles nor the database: the other lane must not claim the agent
    meanwhile (it would claim at the budget the endpoint refused), and must wait rather
    than spin (a lane that sent empty exchanges starved the loop: the worker hung)."""
    app = App(settings=settings)

    @app.agent("llm")
    async def llm(task: Task) -> str:
        return "ok"

    task_id = await app.enqueue_async("llm", {})
    worker = Worker(app, concurrency=1)
    exchange = worker.exchange
    exchange.recording["llm"] += 1  # as while a lane's report_throttled is in flight
    looks = 0
    poll_interval = exchange.poll_interval

    def counted() -> float:
        nonlocal looks
        looks += 1
        return poll_interval()

    exchange.poll_interval = counted  # type: ignore[method-assign]
    async with Running(worker):
        await wait_for(lambda: looks >= 6, what="both lanes idle through three polls")
        assert await status_of(app, task_id) == TaskStatus.ENQUEUED
        assert worker.claimed_count == 0
        exchange.recording["llm"] -= 1  # the report is done: its exchange's end wakes a lane
        exchange.outbox.progress.set()
        await wait_for(lambda: _all(app, [task_id], TaskStatus.COMPLETED), what="the claim")
    await app.aclose()
