"""The migrated schema is what the code expects, and it keeps the state machine."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import psycopg
import pytest

from conveyor.db.migrate import available, functions, migrate
from conveyor.sql import queue as Q
from conveyor.states import TRANSITIONS, AttemptStatus, TaskStatus
from tests.conftest import claim_queue, table_reads

EXPECTED_COLUMNS = {
    "tasks": set(
        """id agent status priority payload result error idempotency_key estimated_tokens
        attempts free_attempts max_attempts run_after lease_expires_at locked_by tenant labels
        created_at started_at finished_at
        parent_id child_key depth children_open children_policy waiting_since root_id
        claim_token""".split()
    ),
    "task_attempts": set(
        """id task_id attempt agent worker_id run_id trace_id status started_at finished_at
        model input_tokens output_tokens llm_cost_usd compute_cost_usd error late_outcome
        reserved_tokens last_call_at claim_token""".split()
    ),
    "agents": set(
        """name max_attempts lease_seconds registered_at last_seen_at max_concurrent max_tpm
        max_rpm limits_source code_limits window_seconds throttle_factor throttled_at
        learned_tpm learned_concurrency compute_usd_per_hour paused_until
        review_below review_source code_review_below""".split()
    ),
}


async def test_migrated_schema_has_the_columns_the_code_uses(conn: Any) -> None:
    for table, expected in EXPECTED_COLUMNS.items():
        cur = await conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s", (table,)
        )
        assert {r["column_name"] for r in await cur.fetchall()} == expected, table


async def test_migrate_is_idempotent_and_records_every_file(conn: Any) -> None:
    assert await migrate(conn) == []
    assert await migrate(conn) == []
    cur = await conn.execute("SELECT name FROM conveyor_migrations ORDER BY name")
    assert [r["name"] for r in await cur.fetchall()] == [m.name for m in available()]


async def test_concurrent_migrations_apply_once(server_url: str) -> None:
    """Many processes starting at once: the advisory lock lets one migrate, the rest wait."""
    import secrets

    from psycopg import sql

    from tests.conftest import with_dbname

    name = f"conveyor_t_{os.getpid()}_m{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        conns = [
            await psycopg.AsyncConnection.connect(with_dbname(server_url, name), autocommit=True)
            for _ in range(4)
        ]
        results = await asyncio.gather(*(migrate(c) for c in conns))
        assert sorted(len(r) for r in results) == [0, 0, 0, len(available()) + len(functions())]
        for c in conns:
            await c.close()
    finally:
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
            await admin.execute(
                sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
            )


async def test_status_checks_allow_exactly_the_documented_values(conn: Any) -> None:
    cur = await conn.execute(
        """SELECT conrelid::regclass::text AS tbl, pg_get_constraintdef(oid) AS def
           FROM pg_constraint WHERE contype = 'c' AND conname LIKE '%status_check'"""
    )
    defs = {r["tbl"]: r["def"] for r in await cur.fetchall()}
    for status in TaskStatus:
        assert f"'{status}'" in defs["tasks"]
    for attempt_status in AttemptStatus:
        assert f"'{attempt_status}'" in defs["task_attempts"]


async def test_transitions_table_mirrors_the_state_machine(conn: Any) -> None:
    cur = await conn.execute("SELECT from_status, to_status FROM task_transitions")
    in_db = {(r["from_status"], r["to_status"]) for r in await cur.fetchall()}
    assert in_db == {(a.value, b.value) for a, b in TRANSITIONS}


async def test_database_refuses_an_unknown_transition(conn: Any) -> None:
    await conn.execute("INSERT INTO agents (name) VALUES ('a')")
    cur = await conn.execute(
        "INSERT INTO tasks (agent, status) VALUES ('a', 'completed') RETURNING id"
    )
    task_id = (await cur.fetchone())["id"]
    with pytest.raises(psycopg.errors.CheckViolation, match="no transition from completed"):
        await conn.execute("UPDATE tasks SET status = 'enqueued' WHERE id = %s", (task_id,))


async def test_one_illegal_row_refuses_the_whole_statement_and_its_notifications(
    conn: Any, database_url: str
) -> None:
    """The update trigger checks the transitions and sends the NOTIFYs in one statement:
    an illegal row among legal ones (of other agents and statuses) still raises, naming
    it, and what that statement notified is discarded with it; the next, legal statement
    sends one NOTIFY per (agent, status) with the ids of its rows."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    cur = await conn.execute(
        """INSERT INTO tasks (agent, status) VALUES ('a', 'enqueued'), ('b', 'enqueued'),
                  ('b', 'enqueued'), ('a', 'completed') RETURNING id"""
    )
    a1, b1, b2, done = [r["id"] for r in await cur.fetchall()]
    listener = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    async with listener:
        await listener.execute("LISTEN conveyor")
        with pytest.raises(
            psycopg.errors.CheckViolation, match=f"task {done}: no transition from completed"
        ):
            await conn.execute(
                "UPDATE tasks SET status = CASE WHEN id = %s THEN 'processing'"
                " ELSE 'cancelled' END WHERE id = ANY(%s)",
                (done, [a1, b1, b2, done]),
            )
        async with conn.transaction():  # in a savepoint, rolled back: nothing sent either
            with pytest.raises(psycopg.errors.CheckViolation):
                async with conn.transaction():
                    await conn.execute(
                        "UPDATE tasks SET status = 'enqueued' WHERE id = ANY(%s)", ([a1, done],)
                    )
            await conn.execute(
                "UPDATE tasks SET status = CASE WHEN id = %s THEN 'processing'"
                " ELSE 'cancelled' END WHERE id = ANY(%s)",
                (b2, [a1, b1, b2]),
            )
        got = []
        async for note in listener.notifies(timeout=2.0):
            got.append(json.loads(note.payload))
    assert sorted(got, key=lambda n: (n["agent"], n["status"])) == [
        {"agent": "a", "status": "cancelled", "ids": [a1]},
        {"agent": "b", "status": "cancelled", "ids": [b1]},
        {"agent": "b", "status": "processing", "ids": [b2]},
    ]


async def test_claim_follows_the_dequeue_index(conn: Any) -> None:
    """EXPLAIN keeps the claim on tasks_dequeue_idx, with enough rows that a sequential
    scan would be tempting if the index did not serve the ORDER BY."""
    await claim_queue(conn)
    params = {"worker_id": "w", "agents": ["a", "b"], "limit": 10, "limited_limit": 10}
    cur = await conn.execute(
        psycopg.sql.SQL("EXPLAIN (FORMAT JSON) ") + psycopg.sql.SQL(Q.tasks_claim), params
    )
    plan = (await cur.fetchone())["QUERY PLAN"][0]["Plan"]
    picked = next(n for n in _nodes(plan) if n.get("Subplan Name") == "CTE picked")
    under_picked = list(_nodes(picked))
    table_scans = [n for n in under_picked if n.get("Relation Name") == "tasks"]
    assert [n["Node Type"] for n in table_scans] == ["Index Scan"], picked
    assert table_scans[0]["Index Name"] == "tasks_dequeue_idx"
    assert "agent" in table_scans[0]["Index Cond"], "one agent's range of the index only"
    # The index yields each agent's claim order: below the lock, nothing is sorted. The only
    # sort merges the agents' heads (at most agents x limit rows).
    lock = next(n for n in under_picked if n["Node Type"] == "LockRows")
    assert not {"Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan"} & {
        n["Node Type"] for n in _nodes(lock)
    }


def _nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


async def test_a_large_status_update_costs_linear_time(conn: Any) -> None:
    """The status trigger's join stays a hash join, even on a connection whose first
    firing was a one-row statement (plpgsql keeps that first plan)."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a')")
    await conn.execute("INSERT INTO tasks (agent) SELECT 'a' FROM generate_series(1, 20000)")
    await conn.execute("UPDATE tasks SET status = 'cancelled' WHERE id = 1")  # a first firing
    cur = await conn.execute(
        "SELECT proconfig FROM pg_proc WHERE proname = 'conveyor_notify_updated'"
    )
    assert (await cur.fetchone())["proconfig"] == ["enable_nestloop=off"]
    started = asyncio.get_running_loop().time()
    await conn.execute("UPDATE tasks SET status = 'cancelled' WHERE status = 'enqueued'")
    # 20,000 rows: about 0.1 s as a hash join, some 35 s as the nested loop it replaced.
    assert asyncio.get_running_loop().time() - started < 10


async def test_the_finish_looks_up_its_rows_by_key_whatever_the_statistics(conn: Any) -> None:
    """conveyor_end_attempts() on statistics that say the queue is empty (a drain between two
    analyses), with many tasks processing: every task and attempt is found by its key. Left
    to choose, the planner read all of task_attempts and every processing task (through
    tasks_processing_idx), once per outcome of the batch."""
    from conveyor import queue
    from conveyor.queue import AgentRegistration, NewTask, Outcome

    await queue.register_agents(conn, [AgentRegistration("a")])
    await conn.execute("ANALYZE tasks")
    await conn.execute("ANALYZE task_attempts")
    await queue.enqueue_many(conn, [NewTask("a") for _ in range(2_000)], known_agents={"a"})
    claimed = await queue.claim(conn, worker_id="w", agents=["a"], limit=1_000)
    assert len(claimed) == 1_000
    batch = claimed[:50]
    done: list[Any] = []

    async def finish() -> None:
        done.extend(
            await queue.finish(conn, [Outcome(c.id, c.attempt, "succeeded") for c in batch])
        )

    reads = await table_reads(conn, finish)
    assert [r.applied for r in done] == [True] * len(batch)
    # Every row found by its key: no sequential scan, and what is fetched through indexes
    # is the batch's rows (a few times over: the update, its triggers, the rollups), not
    # the 1,000 processing tasks once per outcome.
    for table in ("tasks", "task_attempts"):
        assert reads[table]["seq_scan"] == 0, reads
        assert reads[table]["idx_tup_fetch"] <= 4 * len(batch), reads
