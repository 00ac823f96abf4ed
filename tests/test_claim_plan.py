"""The claim as a worker's connection runs it once psycopg has prepared it: from its generic
plan (queue.sql, planner_index_only), made with the LIMIT written into the text
(queue.claim_statement), and that whole plan is still index walks. With the LIMIT a
parameter the same generic plan merge-joined the UPDATE over all of tasks_pkey (about a
second per claim at 1,000,000 tasks waiting; benchmarks/claim_plan.py)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from conveyor.queue import claim
from conveyor.queue.exchange import claim_statement
from conveyor.sql import queue as Q
from tests.conftest import claim_queue

AGENTS = ["a", "b"]
LIMIT = 4
CLAIMS = 8  # past psycopg's prepare threshold (5), and PostgreSQL's five custom plans


async def prepared_claims(conn: Any) -> list[dict[str, Any]]:
    cur = await conn.execute(
        "SELECT name, parameter_types::text[] AS types, generic_plans, custom_plans"
        " FROM pg_prepared_statements"
        " WHERE statement LIKE '%%picked AS MATERIALIZED%%'"
        " AND statement NOT LIKE '%%pg_prepared_statements%%'"  # this query itself
    )
    return list(await cur.fetchall())


async def test_a_connection_claims_from_one_generic_plan(conn: Any) -> None:
    """Every claim past psycopg's threshold runs the plan cached for its text: none is
    planned again for its parameters."""
    await claim_queue(conn)
    for _ in range(CLAIMS):
        assert len(await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT)) == LIMIT
    [statement] = await prepared_claims(conn)
    assert statement["custom_plans"] == 0
    assert statement["generic_plans"] == CLAIMS - conn.prepare_threshold


async def test_the_whole_generic_plan_of_the_claim_walks_indexes(conn: Any) -> None:
    await claim_queue(conn)
    for _ in range(CLAIMS):
        await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT)
    _assert_index_walks(await explain_prepared_claim(conn))


async def test_a_plan_made_on_an_empty_queue_still_walks_indexes(conn: Any) -> None:
    """A worker that starts on an empty queue makes its plan from statistics that say so,
    and keeps it while the queue fills (nothing invalidates it before the next ANALYZE)."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute("ANALYZE tasks")
    for _ in range(CLAIMS):
        assert await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT) == []
    await conn.execute(
        """INSERT INTO tasks (agent, priority)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10
           FROM generate_series(1, 20000) g"""
    )
    assert len(await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT)) == LIMIT
    _assert_index_walks(await explain_prepared_claim(conn))


async def explain_prepared_claim(conn: Any) -> dict[str, Any]:
    """The plan the connection's prepared claim runs now, EXPLAINed whole."""
    [statement] = await prepared_claims(conn)
    # psycopg numbers the parameters itself; each has its own type here (an int is sent as
    # the smallest integer type that holds it).
    values = {"text": "w", "text[]": AGENTS, "smallint": LIMIT, "integer": LIMIT}
    arguments = psycopg.sql.SQL(", ").join(
        psycopg.sql.Literal(values[t]) for t in statement["types"]
    )
    # Committed, not rolled back: psycopg forgets its prepared statements at a ROLLBACK.
    async with conn.transaction():
        await conn.execute(Q.planner_index_only)
        cur = await conn.execute(
            psycopg.sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE {} ({})").format(
                psycopg.sql.Identifier(statement["name"]), arguments
            )
        )
        plan = (await cur.fetchone())["QUERY PLAN"][0]["Plan"]
    [after] = await prepared_claims(conn)
    assert after["custom_plans"] == 0, "the EXPLAIN showed a custom plan, not the cached one"
    assert after["generic_plans"] > 0
    return plan  # type: ignore[no-any-return]


def _assert_index_walks(plan: dict[str, Any]) -> None:
    everything = list(_nodes(plan))
    scans = [(n["Node Type"], n.get("Index Name")) for n in everything if _reads_tasks(n)]
    # One walk of the dequeue index per agent (picked), one id look-up per picked row (the
    # UPDATE): nothing reads tasks whole.
    assert sorted(scans) == [("Index Scan", "tasks_dequeue_idx"), ("Index Scan", "tasks_pkey")]
    assert "Merge Join" not in {n["Node Type"] for n in everything}, plan
    picked = next(n for n in everything if n.get("Subplan Name") == "CTE picked")
    assert picked["Plan Rows"] <= LIMIT, "the LIMIT known to the plan bounds picked"
    lock = next(n for n in _nodes(picked) if n["Node Type"] == "LockRows")
    assert not {"Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan"} & {
        n["Node Type"] for n in _nodes(lock)
    }


def test_the_limit_is_written_into_the_claim() -> None:
    text = claim_statement(12).as_string(None)
    assert "LIMIT 12" in text and "%(limit)s" not in text
    assert "%(agents)s" in text, "the other values stay parameters"
    assert claim_statement(12) is claim_statement(12), "one text per batch size, kept"
    with pytest.raises(ValueError):
        claim_statement(0)


def _reads_tasks(node: dict[str, Any]) -> bool:
    return node.get("Relation Name") == "tasks" and node["Node Type"] != "ModifyTable"


def _nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)
