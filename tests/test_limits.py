"""Admission: per-agent concurrency, token and request limits, decided in the claim.

Claims come from separate connections competing for real; time-based cases backdate rows
in SQL (or use a short window) instead of sleeping."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, NewTask, UnknownAgent, queue
from conveyor.queue import Outcome
from conveyor.settings import Settings


async def _noop(task: Any) -> None:
    return None


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)
    app.agent("capped", max_concurrent=3)(_noop)
    app.agent("budget", max_tpm=10_000)(_noop)
    app.agent("paced", max_rpm=5)(_noop)
    app.agent("free")(_noop)
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
    await conn.execute(
        "UPDATE task_attempts SET finished_at = now() - interval '61 s',"
        " started_at = now() - interval '62 s'"
    )
    assert len(await claim(conn, ["budget"])) == 1


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
    await conn.execute(
        "UPDATE task_attempts SET started_at = now() - interval '61 s',"
        " finished_at = now() - interval '61 s'"
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


async def test_throttling_halves_the_budget_once_then_it_recovers(app: App, conn: Any) -> None:
    (row,) = await queue.report_throttled(conn, ["budget"])
    assert row["throttle_factor"] == 0.5
    assert await queue.report_throttled(conn, ["budget"]) == [], "once per cooldown"
    await app.enqueue_many_async([NewTask("budget", {}, estimated_tokens=2000) for _ in range(5)])
    assert len(await claim(conn, ["budget"])) == 2, "5,000 of 10,000 left"
    # Recovery is additive in time: half of the limit back over five windows.
    await conn.execute(
        "UPDATE agents SET throttled_at = now() - interval '300 s' WHERE name = 'budget'"
    )
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    assert limits["budget"]["throttle_factor"] == 1.0
    assert len(await claim(conn, ["budget"])) == 3


async def test_throttling_an_agent_without_limits_learns_a_concurrency(app: App, conn: Any) -> None:
    # Tiny tasks: the token budget learned alongside never binds here.
    await app.enqueue_many_async([NewTask("free", {}, estimated_tokens=1) for _ in range(20)])
    running = await claim(conn, ["free"], limit=8)
    (row,) = await queue.report_throttled(conn, ["free"])
    assert row["learned_concurrency"] == 4.5, "half of the 8 running + the throttled one"
    await finish(conn, running)
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


async def test_throttling_an_agent_without_a_token_limit_learns_a_budget(
    app: App, conn: Any
) -> None:
    """Limits unknown to Conveyor: the first 429 teaches a token budget of half of what
    the window held, which then grows back with time."""
    await app.enqueue_many_async([NewTask("capped", {}, estimated_tokens=2000) for _ in range(12)])
    first = await claim(conn, ["capped"])  # capped: max_concurrent=3, no token limit
    await finish(conn, first, tokens=2000)  # 6,000 tokens in the window
    (row,) = await queue.report_throttled(conn, ["capped"])
    assert row["learned_tpm"] == 3000, "half of the 6,000 the window held"
    assert await claim(conn, ["capped"]) == [], "the window already holds more than 3,000"
    await conn.execute(
        "UPDATE task_attempts SET finished_at = now() - interval '61 s',"
        " started_at = now() - interval '62 s'"
    )
    assert len(await claim(conn, ["capped"])) == 1, "3,000 of budget: one task of 2,000"
    await conn.execute(
        "UPDATE agents SET throttled_at = now() - interval '300 s' WHERE name = 'capped'"
    )
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    assert limits["capped"]["learned_tpm"] == 6000, "back to where it was in five windows"
    assert len(await claim(conn, ["capped"])) == 2, "4,000 free now: two more tasks of 2,000"
