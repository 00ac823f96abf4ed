"""GET /api/metrics: exact numbers from a known set of tasks, every filter changes them, and
the rollups behind them equal a from-scratch aggregate after a concurrent mixed workload."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, InvalidTransition, NewTask, queue
from conveyor.metrics import Span, bucket_bounds, median
from conveyor.queue import Outcome
from conveyor.settings import Settings
from tests.conftest import one
from tests.web import serving


async def _noop(task: Any) -> None:
    return None


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    # No compute rate: the compute costs are the ones the tests write.
    app.agent("invoice", max_attempts=2, max_concurrent=4, max_tpm=90_000, compute_usd_per_hour=0)(
        _noop
    )
    app.agent("contract", compute_usd_per_hour=0)(_noop)
    await app.database()
    yield app
    await app.aclose()


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client


async def claim(conn: Any, agent: str, worker: str = "w1") -> queue.ClaimedTask:
    (task,) = await queue.claim(conn, worker_id=worker, agents=[agent], limit=1)
    return task


NOW = datetime.now(UTC)


async def known_set(app: App, conn: Any) -> dict[str, int]:
    """Six tasks of two agents and two tenants, in every status; the usage and times set
    exactly. Returns their ids by name."""
    ids = {}
    ids["t1"], ids["t2"], ids["t3"] = await app.enqueue_many_async(
        [NewTask("invoice", {"n": n}, tenant="acme") for n in (1, 2, 3)]
    )
    ids["t4"], ids["t5"], ids["t6"] = await app.enqueue_many_async(
        [NewTask("contract", {"n": n}, tenant="globex") for n in (4, 5, 6)]
    )
    # t1: completed, 1 attempt; t2: failed after two attempts; t3: still enqueued.
    t1 = await claim(conn, "invoice")
    await queue.finish(
        conn,
        [
            Outcome(
                t1.id,
                1,
                "succeeded",
                result='{"confidence": 0.9}',
                model="m-small",
                input_tokens=100,
                output_tokens=20,
                llm_cost_usd=0.01,
            )
        ],
    )
    for attempt in (1, 2):
        t2 = await claim(conn, "invoice")
        assert (t2.id, t2.attempt) == (ids["t2"], attempt)
        await queue.finish(
            conn,
            [
                Outcome(
                    t2.id,
                    attempt,
                    "failed",
                    error="bad",
                    retry_delay=0,
                    model="m-small",
                    input_tokens=50,
                    output_tokens=5,
                    llm_cost_usd=0.002,
                )
            ],
        )
    # t4: completed, with a compute cost recorded afterwards; t5: processing; t6: cancelled.
    t4 = await claim(conn, "contract")
    await queue.finish(
        conn,
        [
            Outcome(
                t4.id,
                1,
                "succeeded",
                result='{"confidence": 0.7, "x": 1}',
                model="m-big",
                input_tokens=300,
                output_tokens=40,
                llm_cost_usd=0.05,
            )
        ],
    )
    await conn.execute(
        "UPDATE task_attempts SET compute_cost_usd = 0.004 WHERE task_id = %s", (t4.id,)
    )
    await claim(conn, "contract")
    await app.cancel_async(ids["t6"])
    # Known response times: created an hour ago, finished after 1, 2, 4 and 8 seconds.
    for name, seconds in (("t1", 1), ("t2", 2), ("t4", 4), ("t6", 8)):
        await conn.execute(
            """UPDATE tasks SET created_at = %(at)s,
                                finished_at = %(at)s + make_interval(secs => %(s)s)
               WHERE id = %(id)s""",
            {"at": NOW - timedelta(hours=1), "s": seconds, "id": ids[name]},
        )
    return ids


async def metrics(client: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await client.get("/api/metrics", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_exact_numbers_of_a_known_set(app: App, conn: Any, client: httpx.AsyncClient) -> None:
    await known_set(app, conn)
    body = await metrics(client)
    assert body["tasks"] == {
        "enqueued": 1,
        "processing": 1,
        "completed": 2,
        "failed": 1,
        "cancelled": 1,
        "total": 6,
    }
    assert body["tokens"] == {"input": 500, "output": 70}
    assert body["cost"] == {"llm_usd": 0.064, "compute_usd": 0.004, "total_usd": 0.068}
    assert body["confidence"] == {"mean": pytest.approx(0.8), "count": 2}
    # Four finished tasks took 1, 2, 4 and 8 s: the median lies between 2 and 4 s.
    assert 2000 <= body["response_time_ms"]["p50"] <= 4000 * 1.26
    agents = {a["agent"]: a for a in body["agents"]}
    assert agents["invoice"]["queued"] == 1 and agents["invoice"]["in_flight"] == 0
    assert agents["invoice"]["limits"] == {"max_concurrent": 4, "max_tpm": 90_000, "max_rpm": None}
    assert agents["invoice"]["cost_usd"] == 0.014
    assert agents["contract"]["in_flight"] == 1 and agents["contract"]["queued"] == 0
    assert agents["contract"]["usage"]["concurrent"] == 1
    assert agents["contract"]["cost_usd"] == 0.054
    assert body["series"]["bucket"] == "day"
    assert sum(p["completed"] for p in body["series"]["points"]) == 2
    assert sum(p["failed"] for p in body["series"]["points"]) == 1
    assert set(body) >= {
        "tasks",
        "tokens",
        "cost",
        "response_time_ms",
        "confidence",
        "agents",
        "series",
        "generated_at",
    }


async def test_each_filter_changes_the_numbers(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    ids = await known_set(app, conn)
    invoice = await metrics(client, agent="invoice")
    assert invoice["tasks"]["total"] == 3 and invoice["tasks"]["failed"] == 1
    assert invoice["cost"]["total_usd"] == 0.014
    assert [a["agent"] for a in invoice["agents"]] == ["invoice"]

    globex = await metrics(client, tenant="globex")
    assert globex["tasks"]["total"] == 3 and globex["tokens"] == {"input": 300, "output": 40}
    assert globex["response_time_ms"]["p50"] == pytest.approx(4000, rel=0.26)
    assert (await metrics(client, tenant="nobody"))["tasks"]["total"] == 0

    failed = await metrics(client, status="failed")
    assert failed["tasks"] == {
        "enqueued": 0,
        "processing": 0,
        "completed": 0,
        "failed": 1,
        "cancelled": 0,
        "total": 1,
    }
    assert failed["cost"]["llm_usd"] == 0.004 and failed["tokens"]["input"] == 100
    assert failed["confidence"]["count"] == 0

    # Move t1 three days back: a range over the last day no longer holds it.
    await conn.execute(
        "UPDATE tasks SET created_at = created_at - interval '3 days',"
        " finished_at = finished_at - interval '3 days' WHERE id = %s",
        (ids["t1"],),
    )
    since = (NOW - timedelta(days=1)).isoformat()
    recent = await metrics(client, since=since)
    assert recent["tasks"]["completed"] == 1 and recent["tasks"]["total"] == 5
    assert recent["series"]["bucket"] == "hour"
    assert recent["confidence"] == {"mean": pytest.approx(0.7), "count": 1}
    older = await metrics(client, until=(NOW - timedelta(days=2)).isoformat())
    assert older["tasks"]["total"] == 1 and older["tasks"]["completed"] == 1
    assert older["cost"]["llm_usd"] == 0.01


@pytest.mark.parametrize(
    "params",
    [
        {"since": "yesterday"},
        {"until": "2026-01-01T00:00:00"},  # no offset: ambiguous
        {"status": "done"},
        {"agent": "x" * 101},
        {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        {"tenant": "a\x00b"},
    ],
)
async def test_bad_filters_are_a_4xx_json_error(
    client: httpx.AsyncClient, params: dict[str, str]
) -> None:
    response = await client.get("/api/metrics", params=params)
    assert response.status_code == 422, response.text
    assert set(response.json()["error"]) == {"code", "message"}


def test_ranges_split_into_whole_days_and_partial_hours() -> None:
    since = datetime(2026, 3, 1, 10, 30, tzinfo=UTC)
    until = datetime(2026, 3, 4, 5, 10, tzinfo=UTC)
    span = Span.of(since, until)
    assert (span.h0, span.h1) == (since.replace(minute=0), until.replace(hour=6, minute=0))
    assert (span.d0, span.d1) == (
        datetime(2026, 3, 2, tzinfo=UTC),
        datetime(2026, 3, 4, tzinfo=UTC),
    )
    assert span.hours_a == (span.h0, span.d0) and span.hours_b == (span.d1, span.h1)
    inside = Span.of(since, since + timedelta(hours=3))
    assert span.h0 is not None
    assert not inside.days and inside.hours_a == (span.h0, span.h0 + timedelta(hours=4))
    assert Span.of(None, None).days and Span.of(None, None).hours_a == (None, None)


def test_median_of_buckets_is_within_a_bucket_of_the_exact_one() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(8, 1.5) for _ in range(2001)]
    counts = Counter(0 if v < 1 else 1 + int(10 * math.log10(v)) for v in values)
    exact = sorted(values)[1000]
    assert median(counts) == pytest.approx(exact, rel=0.06)
    assert median({}) is None
    assert bucket_bounds(0) == (0.0, 1.0) and bucket_bounds(31)[0] == pytest.approx(1000)


# ---------------------------------------------------------------------------------------
# The rollups equal a from-scratch aggregate


FROM_SCRATCH = """
    SELECT date_trunc('day', t.created_at, 'UTC') AS period, t.agent,
           coalesce(t.tenant, '') AS tenant, t.status, count(*) AS tasks,
           coalesce(sum(u.attempts), 0) AS attempts, coalesce(sum(u.throttled), 0) AS throttled,
           coalesce(sum(u.input), 0) AS input_tokens, coalesce(sum(u.output), 0) AS output_tokens,
           coalesce(sum(u.llm), 0) AS llm_usd, coalesce(sum(u.compute), 0) AS compute_usd,
           count(*) FILTER (WHERE jsonb_typeof(t.result -> 'confidence') = 'number')
               AS confidence_n
    FROM tasks t
    LEFT JOIN (SELECT task_id, count(*) AS attempts,
                      count(*) FILTER (WHERE status = 'throttled') AS throttled,
                      sum(input_tokens) AS input, sum(output_tokens) AS output,
                      sum(llm_cost_usd) AS llm, sum(compute_cost_usd) AS compute
               FROM task_attempts GROUP BY task_id) u ON u.task_id = t.id
    WHERE t.status IN ('completed', 'failed', 'cancelled')
    GROUP BY 1, 2, 3, 4
"""

ROLLED_UP = """
    SELECT date_trunc('day', period, 'UTC') AS period, agent, tenant, status,
           sum(tasks) AS tasks, sum(attempts) AS attempts, sum(throttled) AS throttled,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
           sum(llm_usd) AS llm_usd, sum(compute_usd) AS compute_usd,
           sum(confidence_n) AS confidence_n
    FROM task_rollups_exact WHERE grain = %s
    GROUP BY 1, 2, 3, 4
    HAVING sum(tasks) <> 0 OR sum(attempts) <> 0
"""

HISTOGRAM_SCRATCH = """
    SELECT t.agent, t.status, 'latency' AS kind,
           conveyor_log_bucket(extract(epoch FROM t.finished_at - t.created_at) * 1000) AS bucket,
           count(*) AS tasks
    FROM tasks t WHERE t.status IN ('completed', 'failed', 'cancelled')
    GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT t.agent, t.status, 'cost',
           conveyor_log_bucket(coalesce((SELECT sum(coalesce(a.llm_cost_usd, 0)
                                                    + coalesce(a.compute_cost_usd, 0))
                                         FROM task_attempts a WHERE a.task_id = t.id), 0)
                               * 1e6),
           count(*)
    FROM tasks t WHERE t.status IN ('completed', 'failed', 'cancelled')
    GROUP BY 1, 2, 3, 4
"""

HISTOGRAM_ROLLED = """
    SELECT agent, status, kind, bucket, sum(tasks) AS tasks FROM task_histograms_exact
    WHERE grain = %s GROUP BY 1, 2, 3, 4 HAVING sum(tasks) <> 0
"""

BY_AGENT_SCRATCH = (
    "SELECT agent, kind, bucket, sum(tasks) FROM (" + HISTOGRAM_SCRATCH + ") s GROUP BY 1, 2, 3"
)

BY_AGENT_ROLLED = """
    SELECT agent, kind, bucket, sum(tasks) FROM task_histograms_by_agent_exact
    WHERE grain = %s GROUP BY 1, 2, 3 HAVING sum(tasks) <> 0
"""


# The rollup table alone, without the deltas not folded yet.
FOLDED = ROLLED_UP.replace("task_rollups_exact", "task_rollups")


async def fold_all(conn: Any) -> None:
    """Fold every committed delta (what the workers' folders do), and check none is left."""
    await conn.execute("SELECT conveyor_rollup_fold()")
    assert await one(conn, "SELECT count(*) FROM task_rollup_deltas") == 0
    assert await one(conn, "SELECT count(*) FROM task_histogram_deltas") == 0


async def _rows(conn: Any, query: str, *args: Any) -> set[tuple[Any, ...]]:
    cur = await conn.execute(query, args or None)
    return {tuple(r.values()) for r in await cur.fetchall()}


async def _workload(url: str, seed: int, rounds: int) -> None:
    """One client of the queue doing a bit of everything, on its own connection."""
    rng = random.Random(seed)
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row)
    async with conn:
        for n in range(rounds):
            tasks = [
                NewTask(
                    rng.choice(["invoice", "contract"]),
                    {"n": n},
                    tenant=rng.choice([None, "acme", "globex"]),
                )
                for _ in range(rng.randint(1, 4))
            ]
            await queue.enqueue_many(conn, tasks, known_agents={"invoice", "contract"})
            claimed = await queue.claim(
                conn, worker_id=f"w{seed}", agents=["contract", "invoice"], limit=3
            )
            outcomes = []
            for task in claimed:
                kind = rng.choice(
                    ["succeeded", "failed", "failed_final", "throttled", "released", "keep"]
                )
                usage: dict[str, Any] = {
                    "model": rng.choice(["m1", "m2"]),
                    "input_tokens": rng.randint(0, 500),
                    "output_tokens": rng.randint(0, 90),
                    "llm_cost_usd": round(rng.random() / 100, 6),
                }
                if kind == "succeeded":
                    result = f'{{"confidence": {rng.random():.3f}}}' if rng.random() < 0.7 else "1"
                    outcomes.append(
                        Outcome(task.id, task.attempt, "succeeded", result=result, **usage)
                    )
                elif kind == "failed":
                    outcomes.append(
                        Outcome(task.id, task.attempt, "failed", error="x", retry_delay=0, **usage)
                    )
                elif kind == "failed_final":
                    outcomes.append(Outcome(task.id, task.attempt, "failed", error="x", **usage))
                elif kind in ("throttled", "released"):
                    outcomes.append(Outcome(task.id, task.attempt, kind))
            await queue.finish(conn, outcomes)
            if rng.random() < 0.3:  # leases expire: the sweeper takes tasks back
                await conn.execute(
                    "UPDATE tasks SET lease_expires_at = now() - interval '1 s'"
                    " WHERE id IN (SELECT id FROM tasks WHERE status = 'processing'"
                    " ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED)"
                )
                await queue.sweep_expired(conn)
            cur = await conn.execute(
                "SELECT id, status FROM tasks WHERE status <> 'processing'"
                " ORDER BY random() LIMIT 1"
            )
            row = await cur.fetchone()
            if row and rng.random() < 0.3:
                try:
                    if row["status"] == "enqueued":
                        await queue.cancel(conn, row["id"])
                    elif row["status"] in ("failed", "cancelled"):
                        await queue.retry(conn, row["id"])
                except InvalidTransition:  # another client moved it first: that is the race
                    pass
            if rng.random() < 0.2:  # a late usage report on an ended attempt
                await conn.execute(
                    "UPDATE task_attempts SET compute_cost_usd = coalesce(compute_cost_usd, 0)"
                    " + 0.001, output_tokens = coalesce(output_tokens, 0) + 1"
                    " WHERE id = (SELECT id FROM task_attempts WHERE status <> 'running'"
                    " ORDER BY random() LIMIT 1)"
                )


async def test_rollups_equal_a_from_scratch_aggregate_after_a_concurrent_workload(
    app: App, conn: Any, database_url: str
) -> None:
    await asyncio.gather(*(_workload(database_url, seed, 25) for seed in range(4)))
    # Finish what is still running, so that every status is represented.
    while claimed := await queue.claim(
        conn, worker_id="end", agents=["contract", "invoice"], limit=50
    ):
        await queue.finish(
            conn, [Outcome(t.id, t.attempt, "succeeded", input_tokens=1) for t in claimed]
        )
    expected = await _rows(conn, FROM_SCRATCH)
    assert len({r[3] for r in expected}) == 3  # completed, failed and cancelled all occur
    # What readers see, with nothing folded yet (no worker ran), then with everything
    # folded: the rollup tables alone hold it all.
    assert await one(conn, "SELECT count(*) FROM task_rollup_deltas") > 0
    for folded in (False, True):
        if folded:
            await fold_all(conn)
            assert await _rows(conn, FOLDED, "h") == await _rows(conn, ROLLED_UP, "h")
        for grain in ("d", "h"):
            rolled = await _rows(conn, ROLLED_UP, grain)
            assert rolled == expected, (grain, sorted(rolled - expected), sorted(expected - rolled))
            assert await _rows(conn, HISTOGRAM_ROLLED, grain) == await _rows(
                conn, HISTOGRAM_SCRATCH
            )
            assert await _rows(conn, BY_AGENT_ROLLED, grain) == await _rows(conn, BY_AGENT_SCRATCH)

    # Pruning deletes the rows but keeps their history in the rollups.
    before = await _rows(conn, ROLLED_UP, "d")
    await conn.execute(
        "UPDATE tasks SET finished_at = finished_at - interval '2 days'"
        " WHERE status IN ('completed', 'failed', 'cancelled')"
    )
    deleted = await queue.prune(conn, older_than=86400)
    assert deleted > 0
    assert await _rows(conn, ROLLED_UP, "d") == before
    # ... and a rebuild recomputes from the rows that are left.
    await conn.execute("SELECT conveyor_rebuild_rollups()")
    assert await _rows(conn, ROLLED_UP, "d") == await _rows(conn, FROM_SCRATCH) == set()


async def test_tasks_inserted_finished_are_counted_like_the_others(app: App, conn: Any) -> None:
    """Conveyor inserts tasks enqueued; finished ones inserted by hand (an import) are
    counted by the insert trigger's row-by-row path, in one statement or in several,
    alongside tasks inserted enqueued (which it does not look at)."""
    await known_set(app, conn)
    await conn.execute(
        """INSERT INTO tasks (agent, status, result, error, attempts, finished_at, tenant)
           VALUES ('invoice', 'completed', '{"confidence": 0.8}', NULL, 1, now(), 'acme'),
                  ('contract', 'failed', NULL, 'x', 2, now() + interval '3 s', NULL),
                  ('invoice', 'enqueued', NULL, NULL, 0, NULL, NULL),
                  ('contract', 'cancelled', NULL, NULL, 0, now(), 'acme')"""
    )
    await conn.execute(
        "INSERT INTO tasks (agent, status, result, attempts, finished_at)"
        " VALUES ('invoice', 'completed', '1', 1, now())"
    )
    for grain in ("d", "h"):
        assert await _rows(conn, ROLLED_UP, grain) == await _rows(conn, FROM_SCRATCH), grain
    assert await _rows(conn, HISTOGRAM_ROLLED, "h") == await _rows(conn, HISTOGRAM_SCRATCH)
    assert await _rows(conn, BY_AGENT_ROLLED, "h") == await _rows(conn, BY_AGENT_SCRATCH)


async def test_rows_changed_while_finished_are_counted_past_the_early_exits(
    app: App, conn: Any
) -> None:
    """The paths the triggers' early exits and WHEN let through, several rows per statement:
    attempts inserted ended, two per task (an import; a claim inserts them running and is
    not counted), finished tasks whose result and times are edited in place, and finished
    tasks sent back to the queue (counted out as they were, by a row trigger) beside
    enqueued ones cancelled (counted in)."""
    ids = await known_set(app, conn)
    cur = await conn.execute(
        """INSERT INTO tasks (agent, status, result, attempts, finished_at, tenant)
           VALUES ('invoice', 'completed', '{"confidence": 0.4}', 2, now(), 'acme'),
                  ('contract', 'failed', NULL, 1, now() + interval '2 s', NULL)
           RETURNING id"""
    )
    imported = [r["id"] for r in await cur.fetchall()]
    await conn.execute(
        """INSERT INTO task_attempts (task_id, attempt, agent, worker_id, status, input_tokens,
                                      output_tokens, llm_cost_usd, compute_cost_usd)
           SELECT t.id, n, t.agent, 'import', CASE n WHEN 1 THEN 'throttled' ELSE 'succeeded' END,
                  100 * n, 10 * n, 0.01 * n, 0.002
           FROM tasks t CROSS JOIN generate_series(1, t.attempts) n
           WHERE t.id = ANY(%s)""",
        (imported,),
    )
    await conn.execute(
        """UPDATE tasks SET result = jsonb_build_object('confidence', 0.99),
                            finished_at = finished_at + interval '40 s'
           WHERE status = 'completed'"""
    )
    await conn.execute(
        "UPDATE tasks SET status = CASE status WHEN 'enqueued' THEN 'cancelled'"
        " ELSE 'enqueued' END, finished_at = CASE status WHEN 'enqueued' THEN now() END"
        " WHERE status IN ('failed', 'enqueued')"
    )
    assert await one(conn, "SELECT count(*) FROM tasks WHERE status = 'failed'") == 0
    assert ids  # the known set's tasks took part
    for grain in ("d", "h"):
        assert await _rows(conn, ROLLED_UP, grain) == await _rows(conn, FROM_SCRATCH), grain
        assert await _rows(conn, HISTOGRAM_ROLLED, grain) == await _rows(conn, HISTOGRAM_SCRATCH)
        assert await _rows(conn, BY_AGENT_ROLLED, grain) == await _rows(conn, BY_AGENT_SCRATCH)


async def test_a_claim_calls_no_rollup_function_and_a_finish_one(app: App, conn: Any) -> None:
    """A claim finishes nothing, and the attempts a claim inserts or a finish ends were
    running: past the statement triggers' first scan of their rows nothing is called (the
    tasks' trigger of rows leaving a finished status is a row trigger's WHEN: not even
    called). A finish calls conveyor_rollup_finished once, for all its tasks."""
    await conn.execute("SET track_functions = 'pl'")

    async def calls(action: Any) -> Counter[str]:
        # The session's counts until they are reported: the difference across the action.
        query = """SELECT funcname, calls FROM pg_stat_xact_user_functions
                   WHERE funcname LIKE 'conveyor_rollup%%'"""
        async with conn.transaction():
            before = Counter(
                {r["funcname"]: r["calls"] for r in await (await conn.execute(query)).fetchall()}
            )
            await action()
            after = Counter(
                {r["funcname"]: r["calls"] for r in await (await conn.execute(query)).fetchall()}
            )
        return after - before

    tasks = [NewTask("contract") for _ in range(5)]
    await queue.enqueue_many(conn, tasks, known_agents={"contract"})
    claimed: list[queue.ClaimedTask] = []

    async def claim_them() -> None:
        claimed.extend(await queue.claim(conn, worker_id="w", agents=["contract"], limit=5))

    async def finish_them() -> None:
        await queue.finish(conn, [Outcome(t.id, t.attempt, "succeeded") for t in claimed])

    assert await calls(claim_them) == {"conveyor_rollup_tasks": 1, "conveyor_rollup_attempts": 1}
    assert len(claimed) == 5
    assert await calls(finish_them) == {
        "conveyor_rollup_tasks": 1,
        "conveyor_rollup_finished": 1,
        "conveyor_rollup_attempts": 1,
    }
    assert await _rows(conn, ROLLED_UP, "h") == await _rows(conn, FROM_SCRATCH)


async def test_rebuild_gives_what_the_triggers_kept(app: App, conn: Any) -> None:
    await known_set(app, conn)
    kept = await _rows(conn, ROLLED_UP, "h")
    hist = await _rows(conn, HISTOGRAM_ROLLED, "d")
    by_agent = await _rows(conn, BY_AGENT_ROLLED, "h")
    await conn.execute("SELECT conveyor_rebuild_rollups()")
    # The deltas were recomputed into the rollups: none is left, nothing counted twice.
    assert await one(conn, "SELECT count(*) FROM task_rollup_deltas") == 0
    assert await _rows(conn, FOLDED, "h") == await _rows(conn, ROLLED_UP, "h") == kept
    assert await _rows(conn, HISTOGRAM_ROLLED, "d") == hist
    assert await _rows(conn, BY_AGENT_ROLLED, "h") == by_agent


# ---------------------------------------------------------------------------------------
# conveyor status


async def test_status_command_prints_tables_and_json(
    app: App, conn: Any, database_url: str
) -> None:
    from tests.test_cli import conveyor

    await known_set(app, conn)
    shown = await asyncio.to_thread(conveyor, "status", url=database_url)
    assert shown.returncode == 0, shown.stderr
    first_table = shown.stdout.split("\n\n")[0]
    lines = {line.split()[0]: line.split() for line in first_table.splitlines()}
    # agent, enqueued, processing, completed, failed, cancelled
    assert lines["invoice"][1:6] == ["1", "0", "1", "1", "0"]
    assert lines["contract"][1:6] == ["0", "1", "1", "0", "1"]
    assert "cost today" in shown.stdout
    data = json.loads(
        (await asyncio.to_thread(conveyor, "status", "--json", url=database_url)).stdout
    )
    agents = {a["agent"]: a for a in data["agents"]}
    assert agents["invoice"]["limits"]["max_concurrent"] == 4
    assert agents["contract"]["usage"]["concurrent"] == 1
    assert data["cost_today"]["total_usd"] == pytest.approx(0.068) or NOW.hour < 2
    listed = json.loads(
        (
            await asyncio.to_thread(
                conveyor, "tasks", "--json", "--agent", "invoice", url=database_url
            )
        ).stdout
    )
    assert [t["status"] for t in listed] == ["enqueued", "failed", "completed"]
