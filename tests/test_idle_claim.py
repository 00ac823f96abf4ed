"""An idle worker's claim: one statement in autocommit, conveyor_claim()
(conveyor/sql/functions/claim.sql), the claim of queue.sql tasks_claim run by plpgsql from
its generic plan, with planner_index_only's settings as the function's SET clauses. That
plan does not know the LIMIT (a parameter of the function), and still walks the indexes:
EXPLAINed through auto_explain, whose notices carry the plans of nested statements."""

from __future__ import annotations

import json
import re
from typing import Any

from conveyor.queue import claim
from conveyor.sql import function_files
from conveyor.sql import queue as Q

AGENTS = ["a", "b"]
LIMIT = 4
CLAIMS = 8


def _statement(text: str) -> str:
    """A statement without its comment lines, blanks collapsed, parameters as p_*."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    text = " ".join(" ".join(lines).split()).rstrip(";")
    text = text.replace("%(agents)s::text[]", "p_agents")
    return re.sub(r"%\((\w+)\)s", r"p_\1", text)


def test_the_function_runs_the_claim_of_queue_sql() -> None:
    """The claim's text is kept twice (a test of the schema EXPLAINs tasks_claim itself):
    they must not drift apart."""
    body = function_files()["claim"].split("RETURN QUERY", 1)[1].split("END\n$$", 1)[0]
    assert _statement(body) == _statement(Q.tasks_claim)


async def fill(conn: Any) -> None:
    """test_schema's claim queue: 20,000 tasks, a fifth enqueued."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute(
        """INSERT INTO tasks (agent, priority, status)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10,
                  CASE WHEN g % 5 = 0 THEN 'enqueued' ELSE 'completed' END
           FROM generate_series(1, 20000) g"""
    )
    await conn.execute("ANALYZE tasks")


async def explained_claims(conn: Any, n: int) -> list[dict[str, Any]]:
    """Claim n times; the plan of the claim inside conveyor_claim() at each."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    await conn.execute("LOAD 'auto_explain'")
    for setting, value in (
        ("log_min_duration", "0"),
        ("log_nested_statements", "on"),
        ("log_level", "notice"),
        ("log_format", "json"),
        ("log_analyze", "on"),
    ):
        await conn.execute(f"SET auto_explain.{setting} = {value}")
    plans = []
    for _ in range(n):
        notices.clear()
        await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT)
        [text] = [t for t in notices if "picked AS MATERIALIZED" in t]
        plans.append(json.loads(text[text.index("{") :])["Plan"])
    await conn.execute("SET auto_explain.log_min_duration = -1")
    return plans


async def test_an_idle_claim_claims_in_autocommit(conn: Any) -> None:
    await fill(conn)
    got = await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT)
    assert len(got) == LIMIT
    assert [t.priority for t in got] == [5] * LIMIT, "the best first"
    cur = await conn.execute(
        "SELECT count(*) AS n FROM tasks t JOIN task_attempts a ON a.task_id = t.id"
        " WHERE t.status = 'processing' AND t.locked_by = 'w' AND a.status = 'running'"
    )
    assert (await cur.fetchone())["n"] == LIMIT, "committed: tasks and attempts"
    assert conn.info.transaction_status.name == "IDLE"
    # The function's settings end with it: the connection's own are untouched.
    for setting in ("enable_seqscan", "enable_bitmapscan"):
        assert (await (await conn.execute(f"SHOW {setting}")).fetchone())[setting] == "on"
    cur = await conn.execute("SHOW plan_cache_mode")
    assert (await cur.fetchone())["plan_cache_mode"] == "auto"


async def test_the_function_claims_from_its_generic_plan_walking_indexes(conn: Any) -> None:
    await fill(conn)
    plans = await explained_claims(conn, CLAIMS)
    for plan in plans:
        _assert_index_walks(plan)
    # A generic plan: the LIMIT is a parameter in it, not the number (a custom plan's).
    limit_nodes = [n for n in _nodes(plans[-1]) if n["Node Type"] == "Limit"]
    assert limit_nodes and all(n["Plan Rows"] > LIMIT for n in limit_nodes), "not custom"


async def test_a_plan_made_on_an_empty_queue_still_walks_indexes(conn: Any) -> None:
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute("ANALYZE tasks")
    for _ in range(CLAIMS):
        assert await claim(conn, worker_id="w", agents=AGENTS, limit=LIMIT) == []
    await conn.execute(
        """INSERT INTO tasks (agent, priority)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10
           FROM generate_series(1, 20000) g"""
    )
    [plan] = await explained_claims(conn, 1)
    _assert_index_walks(plan)


def _assert_index_walks(plan: dict[str, Any]) -> None:
    everything = list(_nodes(plan))
    scans = sorted(
        (n["Node Type"], n.get("Index Name"))
        for n in everything
        if n.get("Relation Name") == "tasks" and n["Node Type"] != "ModifyTable"
    )
    # One walk of the dequeue index per agent, the picked ids looked up in tasks_pkey.
    assert scans == [("Index Scan", "tasks_dequeue_idx"), ("Index Scan", "tasks_pkey")], plan
    pkey = next(n for n in everything if n.get("Index Name") == "tasks_pkey")
    assert "ANY" in pkey.get("Index Cond", ""), "by the array of picked ids"
    # What is read of tasks is what is claimed: no join walking all of tasks_pkey.
    assert pkey["Actual Rows"] * pkey["Actual Loops"] <= LIMIT


def _nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


async def test_the_function_carries_the_claims_settings(conn: Any) -> None:
    """Whatever the connection's settings, the body is planned with these: no scan but the
    indexes, its generic plan, and no JIT (the generic plan's guessed LIMIT looks costly
    enough at a deep queue to compile it at every call)."""
    cur = await conn.execute("SELECT proconfig FROM pg_proc WHERE proname = 'conveyor_claim'")
    config = set((await cur.fetchone())["proconfig"])
    assert {
        "enable_seqscan=off",
        "enable_bitmapscan=off",
        "plan_cache_mode=force_generic_plan",
        "jit=off",
    } <= config
