"""Enqueue: batches, order, idempotency, validation, delays, and the NOTIFY it sends."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from conveyor import App, InvalidTask, NewTask, TaskStatus, UnknownAgent
from conveyor.settings import Settings


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)

    @app.agent("a", max_attempts=4)
    async def a(task: Any) -> None: ...

    @app.agent("b")
    async def b(task: Any) -> None: ...

    yield app
    await app.aclose()


async def test_enqueue_returns_an_enqueued_task_with_its_payload(app: App) -> None:
    task_id = await app.enqueue_async(
        "a",
        {"doc": "x.pdf", "pages": [1, 2]},
        priority=7,
        estimated_tokens=1500,
        tenant="acme",
        labels={"batch": "q3"},
    )
    task = await app.get_task_async(task_id)
    assert task.status == TaskStatus.ENQUEUED
    assert task.payload == {"doc": "x.pdf", "pages": [1, 2]}
    assert (task.priority, task.estimated_tokens, task.tenant) == (7, 1500, "acme")
    assert task.labels == {"batch": "q3"}
    assert task.max_attempts == 4, "defaults to the agent's max_attempts"
    assert task.attempts == 0 and task.attempt_history == ()


async def test_enqueue_many_keeps_input_order_and_mixes_agents(app: App) -> None:
    ids = await app.enqueue_many_async(
        [NewTask("a" if i % 3 else "b", {"i": i}) for i in range(500)]
    )
    assert len(set(ids)) == 500
    assert ids == sorted(ids)
    for i in (0, 1, 250, 499):
        task = await app.get_task_async(ids[i])
        assert task.payload == {"i": i}
        assert task.agent == ("a" if i % 3 else "b")


async def test_idempotency_key_returns_the_existing_task(app: App, conn: Any) -> None:
    first = await app.enqueue_async("a", {"v": 1}, idempotency_key="inv-17")
    again = await app.enqueue_async("a", {"v": 2}, idempotency_key="inv-17")
    other_agent = await app.enqueue_async("b", {"v": 3}, idempotency_key="inv-17")
    assert again == first
    assert other_agent != first, "keys are unique per agent"
    ids = await app.enqueue_many_async(
        [
            NewTask("a", {"v": 4}),
            NewTask("a", {"v": 5}, idempotency_key="inv-17"),
            NewTask("a", {"v": 6}, idempotency_key="inv-18"),
            NewTask("a", {"v": 7}, idempotency_key="inv-18"),
            NewTask("a", {"v": 8}),
        ]
    )
    assert ids[1] == first
    assert ids[2] == ids[3]
    assert len({ids[0], ids[2], ids[4], first}) == 4
    assert (await app.get_task_async(first)).payload == {"v": 1}, "never overwritten"
    cur = await conn.execute("SELECT count(*) AS n FROM tasks WHERE idempotency_key = 'inv-18'")
    assert (await cur.fetchone())["n"] == 1


async def test_concurrent_idempotent_enqueues_on_separate_connections_make_one_task(
    settings: Settings, conn: Any
) -> None:
    apps = []
    for _ in range(6):
        app = App(settings=settings)
        app.agent("a")(_noop)
        apps.append(app)
    try:
        ids = await asyncio.gather(
            *(a.enqueue_async("a", {}, idempotency_key=f"k{i}") for a in apps for i in range(20))
        )
    finally:
        for a in apps:
            await a.aclose()
    assert len(set(ids)) == 20
    cur = await conn.execute("SELECT count(*) AS n FROM tasks")
    assert (await cur.fetchone())["n"] == 20


async def _noop(task: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": 40000}, "priority must be between"),
        ({"priority": "high"}, "priority must be an integer"),
        ({"priority": True}, "priority must be an integer"),
        ({"estimated_tokens": -1}, "estimated_tokens must be between"),
        ({"max_attempts": 0}, "max_attempts must be between"),
        ({"idempotency_key": ""}, "idempotency_key must be a string"),
        ({"idempotency_key": "k" * 256}, "idempotency_key must be a string"),
        ({"run_after": datetime(2030, 1, 1)}, "timezone-aware"),
        ({"run_after": float("nan")}, "run_after must be"),
        ({"labels": {"a": 1}}, "labels must be a mapping of strings"),
    ],
)
async def test_out_of_range_values_are_refused(
    app: App, options: dict[str, Any], message: str, conn: Any
) -> None:
    with pytest.raises(InvalidTask, match=message):
        await app.enqueue_async("a", {}, **options)
    cur = await conn.execute("SELECT count(*) AS n FROM tasks")
    assert (await cur.fetchone())["n"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"payload": {"a": "x\x00y"}}, "payload( of task 0)? contains a NUL"),
        ({"idempotency_key": "k\x00"}, "idempotency_key contains a NUL"),
        ({"tenant": "\x00"}, "tenant contains a NUL"),
        ({"labels": {"a": "\x00"}}, "contains a NUL"),
    ],
)
async def test_nul_characters_are_refused_before_postgresql_sees_them(
    app: App, options: dict[str, Any], message: str
) -> None:
    for batch in (1, 300):  # the one-statement path and the COPY path
        tasks = [NewTask("a", **{"payload": {}, **options}) for _ in range(batch)]
        with pytest.raises(InvalidTask, match=message):
            await app.enqueue_many_async(tasks)


@pytest.mark.parametrize("payload", [{"x": float("nan")}, {"x": object()}, {1j: 2}])
async def test_payloads_that_are_not_json_are_refused(app: App, payload: Any) -> None:
    with pytest.raises(InvalidTask, match="payload is not JSON"):
        await app.enqueue_async("a", payload)


# 2,500: the COPY path, where the bad task comes after two chunks were already sent.
@pytest.mark.parametrize("good", [1, 2500])
async def test_a_bad_task_in_a_batch_refuses_the_whole_batch(
    app: App, conn: Any, good: int
) -> None:
    tasks = [NewTask("a", {}) for _ in range(good)]
    with pytest.raises(InvalidTask, match="priority"):
        await app.enqueue_many_async([*tasks, NewTask("a", {}, priority=10**6)])
    with pytest.raises(InvalidTask, match=f"payload of task {good}"):
        await app.enqueue_many_async([*tasks, NewTask("a", {"x": float("nan")})])
    cur = await conn.execute("SELECT count(*) AS n FROM tasks")
    assert (await cur.fetchone())["n"] == 0
    assert len(await app.enqueue_many_async(tasks)) == good, "the connection is usable after"


@pytest.mark.parametrize("good", [1, 2500])
async def test_unknown_agent_is_refused_with_its_name(app: App, conn: Any, good: int) -> None:
    tasks = [NewTask("a", {}) for _ in range(good)]
    with pytest.raises(UnknownAgent, match="unknown agent 'invoice'"):
        await app.enqueue_many_async([*tasks, NewTask("invoice", {})])
    cur = await conn.execute("SELECT count(*) AS n FROM tasks")
    assert (await cur.fetchone())["n"] == 0


async def test_agents_registered_by_another_app_are_accepted(settings: Settings, app: App) -> None:
    await app.database()  # registers "a" and "b"
    producer = App(settings=settings)  # declares nothing, like a web process
    try:
        task_id = await producer.enqueue_async("b", {"from": "producer"})
        assert (await producer.get_task_async(task_id)).agent == "b"
    finally:
        await producer.aclose()


async def test_run_after_is_stored_from_seconds_timedelta_or_datetime(app: App) -> None:
    when = datetime.now(UTC) + timedelta(hours=1)
    a = await app.get_task_async(await app.enqueue_async("a", run_after=when))
    b = await app.get_task_async(await app.enqueue_async("a", run_after=timedelta(minutes=5)))
    c = await app.get_task_async(await app.enqueue_async("a", run_after=30))
    assert abs((a.run_after - when).total_seconds()) < 0.01
    assert 280 < (b.run_after - b.created_at).total_seconds() < 320
    assert 20 < (c.run_after - c.created_at).total_seconds() < 40


async def test_a_delay_counts_from_the_database_clock(app: App) -> None:
    """A relative run_after is added to the database's now(), the clock created_at reads
    in the same statement: the two differ by exactly the delay, to the microsecond. Added
    to this process's clock, it was off by the time from the client to the server (and on
    another machine, by the clocks' skew). The same holds for the COPY path of a large
    batch, and for a delay that lies in the past."""
    one = await app.enqueue_async("a", run_after=timedelta(seconds=30.25))
    many = await app.enqueue_many_async(
        [NewTask("a", {"n": n}, run_after=-7.5 if n % 2 else 45) for n in range(300)]
    )
    for task_id, delay in [(one, 30.25), (many[0], 45), (many[1], -7.5), (many[-1], -7.5)]:
        task = await app.get_task_async(task_id)
        assert (task.run_after - task.created_at).total_seconds() == delay


@pytest.mark.parametrize("delay", [1e12, -1e12, timedelta(days=10**6)])
async def test_a_delay_beyond_a_century_is_refused(app: App, delay: Any) -> None:
    with pytest.raises(InvalidTask, match="century"):
        await app.enqueue_async("a", run_after=delay)
    with pytest.raises(InvalidTask, match="century"):
        await app.enqueue_many_async([NewTask("a", run_after=delay)] * 300)


async def test_enqueue_notifies_in_the_same_transaction(app: App, database_url: str) -> None:
    await app.database()
    listener = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    async with listener:
        await listener.execute("LISTEN conveyor")
        ids = await app.enqueue_many_async([NewTask("a", {}), NewTask("a", {}), NewTask("b", {})])
        events = []
        async for note in listener.notifies(timeout=5.0, stop_after=2):
            events.append(json.loads(note.payload))
    by_agent = {e["agent"]: e for e in events}
    assert by_agent["a"] == {"agent": "a", "status": "enqueued", "ids": ids[:2]}
    assert by_agent["b"] == {"agent": "b", "status": "enqueued", "ids": ids[2:]}


async def test_a_huge_batch_notifies_a_count_instead_of_ids(app: App, database_url: str) -> None:
    await app.database()
    listener = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    async with listener:
        await listener.execute("LISTEN conveyor")
        await app.enqueue_many_async([NewTask("a", {}) for _ in range(1000)])
        note = await anext(listener.notifies(timeout=5.0, stop_after=1))
    assert json.loads(note.payload) == {"agent": "a", "status": "enqueued", "count": 1000}


def test_the_plain_methods_work_outside_an_event_loop(settings: Settings) -> None:
    app = App(settings=settings)
    app.agent("a")(_noop)
    try:
        task_id = app.enqueue("a", {"sync": True})
        ids = app.enqueue_many([{"agent": "a", "payload": {"n": 1}}])
        assert app.get_task(task_id).payload == {"sync": True}
        assert app.cancel(ids[0]).status == TaskStatus.CANCELLED
    finally:
        app.close()


async def test_the_plain_methods_refuse_to_block_an_event_loop(app: App) -> None:
    with pytest.raises(RuntimeError, match="await its _async form"):
        app.enqueue("a", {})
