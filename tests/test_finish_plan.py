"""The finish (conveyor_end_attempts) runs from one plan kept across calls, and that plan
reads only the batch's rows at every batch size.

A finish of a few outcomes (an idle worker's, or any worker's between bursts) was planned
again at every call: PostgreSQL's plan cache compares a custom plan, costed for the batch
it is given, with the generic one, costed for a guessed ten outcomes, and for one outcome
the custom plan always looked cheaper, so it planned that statement anew each time (~2/3
of the server's time for a finish of one). These tests see which plan runs without timing
it and without auto_explain (the embedded server has none): a plan the cache keeps is a
memory context of its own ("CachedPlan", named by the statement's text) while it lives,
and a custom plan is one more such context, made for the call and dropped after it.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from conveyor import queue
from conveyor.queue import AgentRegistration, NewTask, Outcome
from tests.conftest import table_reads

# The finish's one statement inside conveyor_end_attempts begins so.
FINISH_STATEMENT = "WITH outcome AS MATERIALIZED%"


async def processing(conn: Any, count: int, *, completed: int, analyse: str) -> list[Any]:
    """`count` tasks claimed by a worker behind `completed` tasks done (a deep table), the
    statistics analysed at the 'start' (they say the queue is empty: a drain between two
    analyses) or 'deep' (after the completed tasks)."""
    await queue.register_agents(conn, [AgentRegistration("a")])

    async def analysed() -> None:
        await conn.execute("ANALYZE")

    if analyse == "start":
        await analysed()
    await queue.enqueue_many(conn, [NewTask("a") for _ in range(completed)], known_agents={"a"})
    done = await queue.claim(conn, worker_id="w", agents=["a"], limit=completed)
    await queue.finish(conn, [Outcome(c.id, c.attempt, "succeeded") for c in done])
    if analyse == "deep":
        await analysed()
    await queue.enqueue_many(conn, [NewTask("a") for _ in range(count)], known_agents={"a"})
    claimed = await queue.claim(conn, worker_id="w", agents=["a"], limit=count)
    assert len(claimed) == count
    return claimed


async def test_a_finish_of_one_outcome_is_not_planned_again_at_every_call(
    conn: Any, database_url: str
) -> None:
    """Ten finishes of one outcome in a row on a new connection (more than the five custom
    plans the cache makes before it looks at the generic one): while each runs, the
    finish's statement has exactly one plan, the kept one. Re-planned per call, the sixth
    call on has two (the generic plan the cache made to compare, kept, and the custom one
    it chose again for the call)."""
    claimed = await processing(conn, 10, completed=5_000, analyse="deep")
    # A statement trigger on task_attempts fires inside the finish's statement, while the
    # plan that runs it is alive: it records how many plans that statement has then.
    await conn.execute("CREATE TABLE plans_seen (n bigint)")
    await conn.execute(
        f"""CREATE FUNCTION count_finish_plans() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO plans_seen
                SELECT count(*) FROM pg_backend_memory_contexts
                WHERE name = 'CachedPlan' AND ident LIKE '{FINISH_STATEMENT}';
                RETURN NULL;
            END $$"""
    )
    await conn.execute(
        "CREATE TRIGGER count_finish_plans AFTER UPDATE ON task_attempts"
        " FOR EACH STATEMENT EXECUTE FUNCTION count_finish_plans()"
    )
    # A connection of its own: its plan cache starts empty, as a worker's does.
    async with await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    ) as worker:
        for c in claimed:
            [row] = await queue.finish(worker, [Outcome(c.id, c.attempt, "succeeded")])
            assert row.applied
    cur = await conn.execute("SELECT n FROM plans_seen")
    assert [r["n"] for r in await cur.fetchall()] == [1] * len(claimed)


async def test_the_finish_reads_only_its_batch_at_every_size(conn: Any) -> None:
    """The one plan reads the batch's rows by their keys at 1, 16, 150 and 500 outcomes,
    on statistics that say the queue is empty, with 2,000 tasks processing behind 2,000
    completed: no sequential scan, index fetches bounded by the batch (a few per outcome:
    the update, its triggers, the rollups), not by the tasks processing nor by the table.
    The old text's custom plan for 500 on these statistics hash-joined the batch to a scan
    of all of tasks_pkey (twice)."""
    claimed = await processing(conn, 2_000, completed=2_000, analyse="start")
    start = 0
    for size in (1, 16, 150, 500):
        batch = claimed[start : start + size]
        start += size
        done: list[Any] = []

        async def finish(batch: list[Any] = batch, done: list[Any] = done) -> None:
            done.extend(
                await queue.finish(conn, [Outcome(c.id, c.attempt, "succeeded") for c in batch])
            )

        reads = await table_reads(conn, finish)
        assert [r.applied for r in done] == [True] * size
        for table in ("tasks", "task_attempts"):
            assert reads[table]["seq_scan"] == 0, (size, reads)
            assert reads[table]["idx_tup_fetch"] <= 4 * size, (size, reads)


async def test_only_a_failure_asking_for_a_retry_reads_its_task_before_the_update(
    conn: Any,
) -> None:
    """The retry rule needs the task's attempt counts, and only a failed or lost outcome
    with a retry delay reaches it: a batch of succeeded outcomes fetches each task once
    (the UPDATE's lookup), where it fetched each twice when every outcome's task was
    joined first. Failures that ask for a retry still read them, and the rule still
    decides: a task with a retry left is queued again, one without fails."""
    await queue.register_agents(conn, [AgentRegistration("a")])
    await queue.enqueue_many(
        conn,
        [NewTask("a", max_attempts=1 if i % 2 else 3) for i in range(48)],
        known_agents={"a"},
    )
    claimed = await queue.claim(conn, worker_id="w", agents=["a"], limit=48)
    assert len(claimed) == 48
    succeeded, failing = claimed[:16], claimed[16:32]

    async def finish(outcomes: list[Outcome]) -> None:
        results = await queue.finish(conn, outcomes)
        assert [r.applied for r in results] == [True] * len(outcomes)

    reads = await table_reads(
        conn, lambda: finish([Outcome(c.id, c.attempt, "succeeded") for c in succeeded])
    )
    assert reads["tasks"]["idx_tup_fetch"] == len(succeeded), reads

    failed = [Outcome(c.id, c.attempt, "failed", error="e", retry_delay=0) for c in failing]
    reads = await table_reads(conn, lambda: finish(failed))
    assert reads["tasks"]["idx_tup_fetch"] == 2 * len(failing), reads

    # The same failures committed: the retry rule applied per task.
    await finish(failed)
    cur = await conn.execute(
        "SELECT max_attempts, status, count(*) AS n FROM tasks WHERE id = ANY(%s)"
        " GROUP BY 1, 2 ORDER BY 1",
        ([c.id for c in failing],),
    )
    assert [(r["max_attempts"], r["status"], r["n"]) for r in await cur.fetchall()] == [
        (1, "failed", 8),
        (3, "enqueued", 8),
    ]
