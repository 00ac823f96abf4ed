"""Admission: per-agent concurrency, token and request limits, decided in the claim.

Claims come from separate connections competing for real; time-based cases backdate rows
in SQL (or use a short window) instead of sleeping."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from conveyor import App, NewTask, Task, TaskStatus, UnknownAgent, queue
from conveyor.queue import Outcome
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running


async def _noop(task: Any) -> None:
    return None


async def _call_then_work(task: Task) -> None:
    task.report_usage(model="m", input_tokens=100, output_tokens=10)
    await asyncio.sleep(0.5)  # the work after the call, not a wait for anything


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)
    app.agent("capped", max_concurrent=3)(_noop)
    app.agent("budget", max_tpm=10_000)(_noop)
    app.agent("paced", max_rpm=5)(_noop)
    app.agent("free")(_noop)
    app.agent("caller", max_tpm=10_000)(_call_then_work)
    app.agent("estimated", max_tpm=10_000, estimate_tokens=lambda payload: 100 * payload["pages"])(
        _noop
    )
    await app.database()
    yield app
    await app.aclose()


async def claim(conn: Any, agents: list[str], limit: int = 50, worker: str = "w") -> list[Any]:
    return await queue.claim(conn, worker_id=worker, agents=agents, limit=limit)


async def finish(conn: Any, tasks: list[Any], tokens: int | None = None) -> None:
    await queue.finish(
        conn,
        [
            Outcome(
                t.id,
                t.attempt,
                "succeeded",
                result="null",
                input_tokens=tokens,
                output_tokens=0 if tokens is not None else None,
            )
            for t in tasks
        ],
    )


async def test_a_concurrency_cap_holds_and_frees_up(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("capped", {}) for _ in range(10)])
    first = await claim(conn, ["capped"])
    assert len(first) == 3
    assert await claim(conn, ["capped"]) == []
    await finish(conn, first[:2])
    assert len(await claim(conn, ["capped"])) == 2


async def test_an_unlimited_agent_is_not_held_back_by_a_limited_one(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("capped", {}, priority=9) for _ in range(10)])
    await app.enqueue_many_async([NewTask("free", {}) for _ in range(10)])
    got = await claim(conn, ["capped", "free"], limit=8)
    assert sorted(t.agent for t in got) == ["capped"] * 3 + ["free"] * 5


async def test_competing_claims_never_exceed_the_cap(
    app: App, database_url: str, conn: Any
) -> None:
    """Eight connections claim at once, again and again; the cap holds at every moment."""
    await app.enqueue_many_async([NewTask("capped", {}) for _ in range(60)])
    conns = [
        await psycopg.AsyncConnection.connect(database_url, autocommit=True, row_factory=dict_row)
        for _ in range(8)
    ]
    peak = 0
    try:
        for _ in range(20):
            batches = await asyncio.gather(
                *(claim(c, ["capped"], 3, f"w{i}") for i, c in enumerate(conns))
            )
            got = [t for batch in batches for t in batch]
            running = await _count(
                conn, "SELECT count(*) AS n FROM tasks WHERE status = 'processing'"
            )
            peak = max(peak, running)
            assert running <= 3
            await finish(conns[0], got)
    finally:
        for c in conns:
            await c.close()
    assert peak == 3, "the cap is reached when there is work"


async def _count(conn: Any, sql: str, *params: Any) -> int:
    return int((await (await conn.execute(sql, params)).fetchone())["n"])


async def test_a_token_budget_reserves_then_trues_up(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=4000) for _ in range(6)])
    first = await claim(conn, ["budget"])
    assert len(first) == 2, "2 x 4000 reserved of 10,000"
    assert [t.reserved_tokens for t in first] == [4000, 4000]
    await finish(conn, first, tokens=1000)  # they used far less than they reserved
    second = await claim(conn, ["budget"])
    assert len(second) == 2, "the window holds 2,000 actual: room for two more reservations"
    # A failed attempt keeps what it spent and gives back the rest.
    await queue.finish(
        conn,
        [
            Outcome(
                second[0].id,
                second[0].attempt,
                "failed",
                error="x",
                input_tokens=500,
                output_tokens=0,
            )
        ],
    )
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    assert limits["budget"]["tokens"] == 2000 + 500 + 4000


async def test_the_window_forgets_old_usage(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=6000) for _ in range(2)])
    (first,) = await claim(conn, ["budget"])
    await finish(conn, [first], tokens=6000)
    assert await claim(conn, ["budget"]) == []
    await _retime_attempts(
        conn, "finished_at = now() - interval '61 s', started_at = now() - interval '62 s'"
    )
    assert len(await claim(conn, ["budget"])) == 1


async def test_an_attempt_that_ended_within_the_window_holds_all_its_tokens(
    app: App, conn: Any
) -> None:
    """It began 100 s ago, but its last request may have gone out just before it ended,
    10 s ago, and the endpoint counts that one for a window from then: spreading its
    tokens over its span (5/9 of them still counted here) let 429s through (docs/limits.md)."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=6000) for _ in range(2)])
    (first,) = await claim(conn, ["budget"])
    await finish(conn, [first], tokens=6000)
    await _retime_attempts(
        conn, "started_at = now() - interval '100 s', finished_at = now() - interval '10 s'"
    )
    assert (await _limits(conn, "budget"))["tokens"] == 6000
    assert await claim(conn, ["budget"]) == [], "6,000 + 6,000 of 10,000"


@pytest.mark.parametrize(("since_last_call", "held"), [(65.0, 0), (30.0, 6000)])
async def test_tokens_count_until_a_window_after_the_last_call(
    app: App, conn: Any, since_last_call: float, held: int
) -> None:
    """The attempt began 100 s ago and ends now; its last call was `since_last_call` s
    before its outcome. Every request went out by that call, so its tokens leave the window
    a window after it: 65 s ago frees them all, 30 s ago holds them all."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=6000) for _ in range(2)])
    (first,) = await claim(conn, ["budget"])
    await conn.execute("UPDATE task_attempts SET started_at = now() - interval '100 s'")
    await queue.finish(
        conn,
        [
            Outcome(
                first.id,
                first.attempt,
                "succeeded",
                result="null",
                input_tokens=6000,
                output_tokens=0,
                since_last_call=since_last_call,
            )
        ],
    )
    assert (await _limits(conn, "budget"))["tokens"] == held
    assert len(await claim(conn, ["budget"])) == (1 if held == 0 else 0)


async def test_the_worker_says_when_the_last_call_was(app: App, conn: Any) -> None:
    """An agent that reports its call, then works on for half a second: the attempt's
    last_call_at is at least that long before its end, and not before its start."""

    task_id = await app.enqueue_async("caller", {})
    async with Running(Worker(app, concurrency=1)):
        await wait_for(
            lambda: _status(app, task_id, TaskStatus.COMPLETED), timeout=30, what="the task"
        )
    cur = await conn.execute(
        "SELECT started_at, finished_at, last_call_at FROM task_attempts WHERE task_id = %s",
        (task_id,),
    )
    row = await cur.fetchone()
    assert row["started_at"] <= row["last_call_at"]
    assert (row["finished_at"] - row["last_call_at"]).total_seconds() >= 0.5


async def _status(app: App, task_id: int, status: TaskStatus) -> bool:
    return (await app.get_task_async(task_id)).status == status


async def test_the_window_is_read_by_its_indexes(app: App, conn: Any) -> None:
    """Every claim of a limited agent reads its window, among many rows of other agents and
    long finished ones: the attempts that run by tasks_processing_idx (agent first) and
    their attempt rows by key, the ended ones by attempt_usage's key (migration 0017: no
    index of task_attempts on finished_at). conveyor_usage is inlined into the query that
    calls it, so its scans show in the plan."""
    await conn.execute(
        """WITH ended AS (
               INSERT INTO task_attempts (task_id, attempt, agent, status, started_at,
                                          finished_at, input_tokens, output_tokens)
               SELECT -g, 1, 'agent-' || g % 50, 'succeeded',
                      now() - make_interval(secs => g + 5), now() - make_interval(secs => g),
                      100, 10
               FROM generate_series(1, 20000) g
               RETURNING *)
           INSERT INTO attempt_usage (agent, finished_at, attempt_id, task_id, status,
                                      started_at, reserved_tokens, input_tokens, output_tokens)
           SELECT agent, finished_at, id, task_id, status, started_at, reserved_tokens,
                  input_tokens, output_tokens
           FROM ended"""
    )
    await conn.execute(
        """WITH running AS (
               INSERT INTO tasks (agent, status, attempts, locked_by)
               SELECT 'agent-' || g % 50, 'processing', 1, 'w' FROM generate_series(1, 5000) g
               RETURNING id, agent)
           INSERT INTO task_attempts (task_id, attempt, agent, status)
           SELECT id, 1, agent, 'running' FROM running"""
    )
    await conn.execute("ANALYZE tasks, task_attempts, attempt_usage")
    cur = await conn.execute("EXPLAIN (FORMAT JSON) SELECT * FROM conveyor_usage('agent-7', 60)")
    plan = json.dumps((await cur.fetchone())["QUERY PLAN"])
    for index in ("tasks_processing_idx", "attempt_usage_pkey", "task_attempts_task_id_attempt"):
        assert index in plan, plan
    assert "Seq Scan" not in plan, plan
    assert "Function Scan" not in plan, "inlined: the scan is planned in the caller"


async def test_a_task_larger_than_the_budget_runs_alone(app: App, conn: Any) -> None:
    small = await app.enqueue_async("budget", {}, estimated_tokens=1000, priority=5)
    huge = await app.enqueue_async("budget", {}, estimated_tokens=50_000)
    (got,) = await claim(conn, ["budget"])
    assert got.id == small
    assert await claim(conn, ["budget"]) == [], "not while anything else runs"
    await finish(conn, [got], tokens=0)
    (alone,) = await claim(conn, ["budget"])
    assert alone.id == huge, "admitted alone rather than never"


async def test_priority_holds_among_tasks_that_fit(app: App, conn: Any) -> None:
    low = await app.enqueue_async("budget", {}, estimated_tokens=3000, priority=1)
    high = await app.enqueue_async("budget", {}, estimated_tokens=3000, priority=9)
    mid = await app.enqueue_async("budget", {}, estimated_tokens=3000, priority=5)
    got = await claim(conn, ["budget"])
    assert [t.id for t in got] == [high, mid, low]


async def test_small_tasks_overtake_a_large_one_only_for_a_window(app: App, conn: Any) -> None:
    """The anti-starvation policy: a task that does not fit may be overtaken by smaller
    ones, but once it has waited a whole window nothing behind it starts."""
    filler = await app.enqueue_async("budget", {}, estimated_tokens=5000, priority=9)
    await claim(conn, ["budget"])  # 5,000 of 10,000 now reserved
    large = await app.enqueue_async("budget", {}, estimated_tokens=8000, priority=5)
    smalls = await app.enqueue_many_async(
        [NewTask("budget", {}, estimated_tokens=1000) for _ in range(4)]
    )
    got = await claim(conn, ["budget"], limit=2)
    assert [t.id for t in got] == smalls[:2], "the large one does not fit; small ones pass"
    await conn.execute(
        "UPDATE tasks SET run_after = now() - interval '61 s' WHERE id = %s", (large,)
    )
    assert await claim(conn, ["budget"]) == [], "it has waited a window: nothing overtakes"
    assert filler


async def test_a_request_budget_paces_starts(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("paced", {}) for _ in range(8)])
    first = await claim(conn, ["paced"])
    assert len(first) == 5
    await finish(conn, first)
    assert await claim(conn, ["paced"]) == [], "finished, but started within the window"
    await _retime_attempts(
        conn, "started_at = now() - interval '61 s', finished_at = now() - interval '61 s'"
    )
    assert len(await claim(conn, ["paced"])) == 3


async def test_tasks_without_estimates_reserve_the_recent_average(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("budget", {}) for _ in range(12)])
    first = await claim(conn, ["budget"], limit=1)
    assert first[0].reserved_tokens == 1000, "nothing known yet: 1,000"
    await finish(conn, first, tokens=3000)
    (second,) = await claim(conn, ["budget"], limit=1)
    assert second.reserved_tokens == 3000, "the average of what the agent really used"


async def test_the_agent_estimator_runs_at_enqueue(app: App) -> None:
    task_id = await app.enqueue_async("estimated", {"pages": 7})
    explicit = await app.enqueue_async("estimated", {"pages": 7}, estimated_tokens=5)
    assert (await app.get_task_async(task_id)).estimated_tokens == 700
    assert (await app.get_task_async(explicit)).estimated_tokens == 5


async def test_operator_limits_win_over_code_until_reset(
    app: App, settings: Settings, conn: Any
) -> None:
    await queue.set_limits(conn, "capped", max_concurrent=1, max_tpm=500)
    redeclared = App(settings=settings)
    redeclared.agent("capped", max_concurrent=7)(_noop)
    await redeclared.database()  # registering again must not undo the operator's change
    await redeclared.aclose()
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    assert (limits["capped"]["max_concurrent"], limits["capped"]["max_tpm"]) == (1, 500)
    assert limits["capped"]["limits_source"] == "operator"
    await queue.set_limits(conn, "capped", max_tpm=0)  # 0 removes a limit
    await queue.reset_limits(conn, "capped")
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    assert (limits["capped"]["max_concurrent"], limits["capped"]["max_tpm"]) == (7, None)
    with pytest.raises(UnknownAgent):
        await queue.set_limits(conn, "ghost", max_rpm=3)


async def test_a_new_limit_applies_to_the_next_claim(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("free", {}) for _ in range(10)])
    await queue.set_limits(conn, "free", max_concurrent=2)
    assert len(await claim(conn, ["free"])) == 2


async def _backdate_attempts(conn: Any, seconds: float) -> None:
    """Move every attempt `seconds` into the past, as if that much time had passed."""
    await _retime_attempts(
        conn,
        "started_at = started_at - make_interval(secs => %(s)s),"
        " finished_at = finished_at - make_interval(secs => %(s)s)",
        {"s": seconds},
    )


async def _retime_attempts(conn: Any, assignments: str, params: Any = None) -> None:
    """Set the attempts' times (`assignments`, a SET list), in task_attempts and in the
    token window's copy of the ended ones (attempt_usage, migration 0017) alike."""
    for table in ("task_attempts", "attempt_usage"):
        query = sql.SQL("UPDATE {} SET ").format(sql.Identifier(table)) + sql.SQL(assignments)
        await conn.execute(query, params)


async def _limits(conn: Any, agent: str) -> Any:
    return {r["name"]: r for r in await queue.agent_limits(conn)}[agent]


async def test_a_429_teaches_the_token_budget_the_window_held(app: App, conn: Any) -> None:
    """The endpoint refused with 6,000 tokens in the window (declared: 10,000): the budget
    becomes 90 % of that; the request factor halves once per cooldown; a second 429 with
    the same window teaches the same, not less."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(9)])
    first = await claim(conn, ["budget"], limit=3)
    await finish(conn, first, tokens=2000)
    (row,) = await queue.report_throttled(conn, {"budget": 0.0})
    assert (row["learned_tpm"], row["shrunk"], row["throttle_factor"]) == (5400, True, 0.5)
    (row,) = await queue.report_throttled(conn, {"budget": 0.0})
    assert (row["learned_tpm"], row["shrunk"]) == (5400, False)
    assert row["throttle_factor"] == pytest.approx(0.5, abs=0.001), "not halved again"
    assert await claim(conn, ["budget"]) == [], "the window holds 6,000 of 5,400"


async def test_a_learned_budget_is_spread_over_the_window(app: App, conn: Any) -> None:
    """While a learned budget binds, a twentieth of it starts per twentieth of a window; a
    task larger than that starts when nothing else started within the last twentieth."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(9)])
    await finish(conn, await claim(conn, ["budget"], limit=3), tokens=2000)
    await queue.report_throttled(conn, {"budget": 0.0})  # learned: 5,400
    await _backdate_attempts(conn, 61)  # the window is empty again
    assert len(await claim(conn, ["budget"])) == 1, "2,000 > 270, but nothing started yet"
    assert await claim(conn, ["budget"]) == [], "this twentieth of the window is spent"
    await _backdate_attempts(conn, 4)  # the next twentieth: 3,400 of the budget left
    assert len(await claim(conn, ["budget"])) == 1
    await _backdate_attempts(conn, 4)  # 1,400 left: not enough for 2,000
    assert await claim(conn, ["budget"]) == []


async def test_a_refused_request_keeps_its_share_of_the_spread(app: App, conn: Any) -> None:
    """Its refusal must not make room in the twentieth for the next request at once."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(9)])
    await finish(conn, await claim(conn, ["budget"], limit=3), tokens=2000)
    await queue.report_throttled(conn, {"budget": 0.0})  # learned: 5,400
    await conn.execute("UPDATE agents SET paused_until = NULL")
    await _backdate_attempts(conn, 61)
    (sent,) = await claim(conn, ["budget"])
    await queue.finish(conn, [Outcome(sent.id, sent.attempt, "throttled", retry_delay=0)])
    assert await claim(conn, ["budget"]) == [], "the twentieth still holds the refused one"
    await _backdate_attempts(conn, 4)
    assert len(await claim(conn, ["budget"])) == 1


async def test_every_429_of_a_burst_may_lower_the_learned_budget(app: App, conn: Any) -> None:
    """The first 429 of a burst comes back while requests that will be refused still hold
    their reservations; later ones, counted with fewer of them, teach less."""
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(4)])
    running = await claim(conn, ["budget"])
    (row,) = await queue.report_throttled(conn, {"budget": 0.0})
    assert row["learned_tpm"] == 7200, "90 % of the 8,000 reserved"
    await queue.finish(conn, [Outcome(t.id, t.attempt, "throttled") for t in running[:2]])
    (row,) = await queue.report_throttled(conn, {"budget": 0.0})
    assert (row["learned_tpm"], row["shrunk"]) == (3600, False), "90 % of the 4,000 left"


async def test_a_learned_budget_grows_slowly_near_where_it_failed(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(3)])
    await finish(conn, await claim(conn, ["budget"]), tokens=2000)
    await queue.report_throttled(conn, {"budget": 0.0})  # learned: 5,400
    for windows, expected in ((6, 5983), (10, 7020)):
        await conn.execute(
            "UPDATE agents SET throttled_at = now() - make_interval(secs => %(s)s)"
            " WHERE name = 'budget'",
            {"s": 60 * windows},
        )
        assert (await _limits(conn, "budget"))["learned_tpm"] == expected
    # Grown past the declared 10,000, it no longer binds: the declared budget, unspread.
    await conn.execute(
        "UPDATE agents SET throttled_at = now() - interval '20 min', paused_until = NULL"
        " WHERE name = 'budget'"
    )
    await _backdate_attempts(conn, 61)
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(9)])
    assert len(await claim(conn, ["budget"])) == 5


async def test_a_429_pauses_the_agent_until_its_retry_after(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("free", {}, estimated_tokens=1) for _ in range(5)])
    (row,) = await queue.report_throttled(conn, {"free": 30.0})
    assert row["paused_until"] is not None
    assert await claim(conn, ["free"]) == [], "paused, although its budget has room"
    assert 29 < (await _limits(conn, "free"))["paused_for"] <= 30
    await conn.execute("UPDATE agents SET paused_until = now() - interval '1 ms'")
    assert len(await claim(conn, ["free"])) == 1, "a learned budget of 100: spread, one first"
    # A Retry-After longer than the window (a bad header) pauses for one window at most.
    await conn.execute("UPDATE agents SET throttled_at = NULL")
    await queue.report_throttled(conn, {"free": 86_400.0})
    assert (await _limits(conn, "free"))["paused_for"] <= 60


async def test_throttling_an_agent_without_limits_learns_a_concurrency(app: App, conn: Any) -> None:
    # Tiny tasks: the token budget learned alongside binds only through its spread.
    await app.enqueue_many_async([NewTask("free", {}, estimated_tokens=1) for _ in range(20)])
    running = await claim(conn, ["free"], limit=8)
    (row,) = await queue.report_throttled(conn, {"free": 0.0})
    assert row["learned_concurrency"] == 4.5, "half of the 8 running + the throttled one"
    await finish(conn, running)
    await _backdate_attempts(conn, 61)
    await conn.execute("UPDATE agents SET learned_tpm = 1000 WHERE name = 'free'")
    assert len(await claim(conn, ["free"])) == 4
    await conn.execute(
        "UPDATE agents SET throttled_at = now() - interval '12 s' WHERE name = 'free'"
    )
    await finish(conn, await _running(conn))
    assert len(await claim(conn, ["free"])) == 6, "one slot back every window / 10"


async def _running(conn: Any) -> list[Any]:
    cur = await conn.execute("SELECT id, attempts FROM tasks WHERE status = 'processing'")
    return [_Claimed(r["id"], r["attempts"]) for r in await cur.fetchall()]


class _Claimed:
    def __init__(self, task_id: int, attempt: int) -> None:
        self.id, self.attempt = task_id, attempt


@pytest.mark.parametrize(
    ("cap", "slots", "tasks"),
    [
        # A limited agent's tasks are claimed for the free slots alone: a claim held to them
        # comes back short although more wait (once, each claim after the first waited the
        # poll interval: a limited agent of quick tasks drained at 15 a second on 16 slots).
        (1000, 2, 12),
        # Room under a cap comes back when one of the agent's attempts ends, which no NOTIFY
        # announces: the exchange that writes the outcome claims too (once, an agent capped
        # at 3 ran 3 quick tasks a second).
        (1, 4, 6),
    ],
    ids=["held-to-the-free-slots", "capped"],
)
async def test_a_limited_agents_next_tasks_start_as_room_frees_not_at_the_poll(
    settings: Settings, cap: int, slots: int, tasks: int
) -> None:
    """The poll interval here is far longer than the whole run may take, so a claim that
    waited for it fails the test."""
    app = App(settings=dataclasses.replace(settings, poll_interval=600.0))
    app.agent("roomy", max_concurrent=cap)(_noop)
    await app.database()
    try:
        ids = await app.enqueue_many_async([NewTask("roomy", {})] * tasks)
        async with Running(Worker(app, concurrency=slots)):
            for task_id in ids:
                await wait_for(
                    functools.partial(_status, app, task_id, TaskStatus.COMPLETED),
                    timeout=60,
                    what=f"task {task_id}, claimed as room freed",
                )
    finally:
        await app.aclose()
