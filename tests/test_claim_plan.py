"""The claim as workers run it: prepared, from its generic plan (queue.sql,
planner_index_only), still an ordered walk of tasks_dequeue_idx, and really generic."""

from __future__ import annotations

import re
from typing import Any

import psycopg

from conveyor.queue import claim
from conveyor.sql import queue as Q

PARAMS = {"worker_id": "w", "agents": ["a", "b"], "limit": 10, "limited_limit": 10}
TYPES = {"worker_id": "text", "agents": "text[]", "limit": "int", "limited_limit": "int"}


def numbered(query: str) -> tuple[str, list[str]]:
    """The query with psycopg's %(name)s placeholders as $1, $2, ... (first use order),
    for PREPARE; and the names in that order."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, query).replace("%%", "%"), names


async def fill(conn: Any) -> None:
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute(
        """INSERT INTO tasks (agent, priority, status)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10,
                  CASE WHEN g % 5 = 0 THEN 'enqueued' ELSE 'completed' END
           FROM generate_series(1, 20000) g"""
    )
    await conn.execute("ANALYZE tasks")


async def test_the_generic_plan_of_the_claim_walks_the_dequeue_index(conn: Any) -> None:
    await fill(conn)
    text, names = numbered(Q.tasks_claim)
    types = ", ".join(TYPES[n] for n in names)
    await conn.execute(psycopg.sql.SQL(f"PREPARE claim ({types}) AS {text}"))  # type: ignore[arg-type]
    async with conn.transaction(force_rollback=True):
        await conn.execute(Q.planner_index_only)
        cur = await conn.execute(
            psycopg.sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE claim ({})").format(
                psycopg.sql.SQL(", ").join(psycopg.sql.Literal(PARAMS[n]) for n in names)
            )
        )
        plan = (await cur.fetchone())["QUERY PLAN"][0]["Plan"]
        cur = await conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'claim'"
        )
        assert await cur.fetchone() == {"generic_plans": 1, "custom_plans": 0}
    picked = next(n for n in _nodes(plan) if n.get("Subplan Name") == "CTE picked")
    scans = [n for n in _nodes(picked) if n.get("Relation Name") == "tasks"]
    assert [(n["Node Type"], n["Index Name"]) for n in scans] == [
        ("Index Scan", "tasks_dequeue_idx")
    ], picked
    lock = next(n for n in _nodes(picked) if n["Node Type"] == "LockRows")
    assert not {"Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan"} & {
        n["Node Type"] for n in _nodes(lock)
    }


async def test_a_connection_claims_from_one_plan(conn: Any) -> None:
    """Past psycopg's prepare threshold every claim of a connection runs the generic plan:
    none is planned again for its own parameters (a custom plan)."""
    await fill(conn)
    conn.prepare_threshold = 0  # prepared from the first execution, as after five
    for _ in range(8):
        assert len(await claim(conn, worker_id="w", agents=["a", "b"], limit=4)) == 4
    cur = await conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        " WHERE statement LIKE '%%picked AS MATERIALIZED%%'"
        " AND statement NOT LIKE '%%pg_prepared_statements%%'"  # this query itself
    )
    assert await cur.fetchall() == [{"generic_plans": 8, "custom_plans": 0}]


def _nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)
