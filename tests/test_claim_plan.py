"""The claim as a worker's connection runs it once psycopg has prepared it: from its generic
plan (queue.sql, planner_index_only), made with the LIMIT written into the text
(queue.claim_statement), and that whole plan is still index walks. With the LIMIT a
parameter the same generic plan merge-joined the UPDATE over all of tasks_pkey (about a
second per claim at 1,000,000 tasks waiting; benchmarks/claim_plan.py).

That is the claim with outcomes to write (a busy worker's, in the finish's transaction).
An idle worker's claim is one statement in autocommit, conveyor_claim()
(conveyor/sql/functions/claim.sql): the same claim in plpgsql, whose generic plan does not
know the LIMIT and fetches the picked rows by `id = ANY`; the last tests here keep the two
texts equal but for that line, and check that both claim the same rows."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

from conveyor.queue.exchange import claim_alone, claim_statement
from conveyor.sql import function_files
from conveyor.sql import queue as Q
from tests.conftest import claim_queue, table_reads

AGENTS = ["a", "b"]
LIMIT = 4
CLAIMS = 8  # past psycopg's prepare threshold (5), and PostgreSQL's five custom plans


async def claim(
    conn: Any, *, worker_id: str, agents: list[str], limit: int, limited_limit: int | None = None
) -> list[dict[str, Any]]:
    """The claim of queue.finish_and_claim's transaction (a busy worker's), without the
    outcomes it writes beside it: finish_and_claim with no outcome claims alone."""
    async with conn.transaction():
        await conn.execute(Q.planner_index_only)
        cur = await conn.execute(
            claim_statement(limit),
            {
                "worker_id": worker_id,
                "agents": sorted(agents),
                "limited_limit": limit if limited_limit is None else limited_limit,
            },
        )
        return list(await cur.fetchall())


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


async def planned_empty_then_filled(conn: Any, claiming: Any) -> None:
    """`claiming` run past its five custom plans on an empty queue's statistics, then 20,000
    tasks enqueued (nothing invalidates a plan before the next ANALYZE)."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a'), ('b')")
    await conn.execute("ANALYZE tasks")
    for _ in range(CLAIMS):
        assert await claiming(conn, worker_id="w", agents=AGENTS, limit=LIMIT) == []
    await conn.execute(
        """INSERT INTO tasks (agent, priority)
           SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, g % 10
           FROM generate_series(1, 20000) g"""
    )


async def test_a_plan_made_on_an_empty_queue_still_walks_indexes(conn: Any) -> None:
    """A worker that starts on an empty queue makes its plan from statistics that say so,
    and keeps it while the queue fills (nothing invalidates it before the next ANALYZE)."""
    await planned_empty_then_filled(conn, claim)
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


# The idle worker's claim, conveyor_claim().

# The one condition the function's UPDATE has and tasks_claim's has not.
BY_ANY = "t.id = ANY (ARRAY(SELECT task_id FROM picked)) AND "


def _statement(text: str) -> str:
    """A statement without its comment lines, blanks collapsed, parameters named p_*."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    text = " ".join(" ".join(lines).split()).rstrip(";")
    text = text.replace("%(agents)s::text[]", "p_agents")
    return re.sub(r"%\((\w+)\)s", r"p_\1", text)


def test_the_idle_claim_is_the_busy_claim_with_its_lookup_by_any() -> None:
    """The claim is written twice (a function body cannot be a prepared statement's text):
    they may differ by the function's `id = ANY` and nothing else."""
    script = function_files()["claim"]
    body = _statement(script.split("RETURN QUERY", 1)[1].split("END\n$$", 1)[0])
    assert body.count(BY_ANY) == 1
    assert body.replace(BY_ANY, "") == _statement(Q.tasks_claim)
    assert BY_ANY not in _statement(Q.tasks_claim), "the busy claim keeps its plain join"


async def test_the_idle_and_the_busy_claim_claim_the_same_rows(conn: Any) -> None:
    """On one queue (two plain agents, a limited one, priorities, a task not yet due), each
    claim rolled back before the other: the same tasks, attempts and reservations."""
    await claim_queue(conn)
    await conn.execute("INSERT INTO agents (name, max_concurrent) VALUES ('c', 3)")
    # The limited agent's tasks among the best of the queue, one of them not yet due.
    await conn.execute(
        """INSERT INTO tasks (agent, priority, estimated_tokens, run_after)
           SELECT 'c', 8 + g % 2, g * 10,
                  now() + CASE WHEN g = 1 THEN interval '1 hour' ELSE interval '0' END
           FROM generate_series(1, 8) g"""
    )
    agents = ["a", "b", "c"]
    limited = set()
    for limit, limited_limit in ((6, 2), (1, 1), (40, 5), (3, 0)):
        async with conn.transaction(force_rollback=True):
            idle = [
                (r.id, r.attempt, r.reserved_tokens)
                for r in await claim_alone(
                    conn, worker_id="w", agents=agents, limit=limit, limited_limit=limited_limit
                )
            ]
        async with conn.transaction(force_rollback=True):
            busy = [
                (r["id"], r["attempts"], r["reserved"])
                for r in await claim(
                    conn, worker_id="w", agents=agents, limit=limit, limited_limit=limited_limit
                )
            ]
        assert idle == busy and len(idle) == limit, (limit, limited_limit)
        limited |= {r for r in idle if r[0] > 20_000}
    assert len(limited) == 3, "the limited agent's tasks, at most its concurrency"


async def test_an_idle_claim_commits_in_autocommit(conn: Any) -> None:
    await claim_queue(conn)
    got = await claim_alone(conn, worker_id="w", agents=AGENTS, limit=LIMIT)
    assert len(got) == LIMIT
    assert [t.priority for t in got] == [5] * LIMIT, "the best first (0 or 5 enqueued)"
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


async def idle_claim_reads(conn: Any, n: int) -> list[dict[str, Any]]:
    """Claim alone n times; what each claim read of tasks (conftest.table_reads)."""
    reads = []
    claimed: list[Any] = []

    async def claim_once() -> None:
        claimed[:] = await claim_alone(conn, worker_id="w", agents=AGENTS, limit=LIMIT)

    for _ in range(n):
        reads.append((await table_reads(conn, claim_once))["tasks"])
        assert len(claimed) == LIMIT
    return reads


async def test_the_idle_claim_reads_what_it_claims_at_every_call(conn: Any) -> None:
    """Past the five custom plans, on the generic plan the function's settings force: the
    claim still reads only the rows it claims (a LIMIT-blind generic plan merge-joined the
    UPDATE over all of tasks_pkey: 20,000 rows fetched a claim)."""
    await claim_queue(conn)
    for reads in await idle_claim_reads(conn, CLAIMS):
        _assert_reads_what_it_claims(reads)


async def test_an_idle_claim_planned_on_an_empty_queue_still_reads_what_it_claims(
    conn: Any,
) -> None:
    await planned_empty_then_filled(conn, claim_alone)
    [reads] = await idle_claim_reads(conn, 1)
    _assert_reads_what_it_claims(reads)


def _assert_reads_what_it_claims(reads: dict[str, Any]) -> None:
    # A walk of the dequeue index per agent and the picked ids looked up in tasks_pkey:
    # a few rows per claimed one, no sequential scan.
    assert reads["seq_scan"] == 0, reads
    assert reads["idx_tup_fetch"] <= 4 * LIMIT * len(AGENTS), reads


async def test_the_idle_claim_carries_the_claims_settings(conn: Any) -> None:
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
