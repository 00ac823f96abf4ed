"""A tree's cost: GET /api/tasks shows each task's own cost and its tree's (and a parent's
progress), GET /api/costs?root=R breaks one tree's cost down, and the per-agent totals
count a child's cost once, under its own agent. Real worker, real server, real database:
a document (`whole`) spawns a section (`mid`) and two pages (`part`); the section spawns
two pages of its own, so the tree is two levels deep."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from conveyor import App, Child, Spawn, Task, TaskStatus
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running
from tests.web import serving

EXACT = 2e-6  # each figure is rounded to a millionth of a dollar


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)

    # Every task reports usage on every run, the parents on both of theirs (the spawn and
    # the merge): a parent's own cost is not zero, so counting it twice would show.
    @app.agent("part", compute_usd_per_hour=0)
    async def part(task: Task) -> int:
        task.report_usage(model="gpt-4o-mini", input_tokens=1000, output_tokens=100)
        return 1

    @app.agent("mid", compute_usd_per_hour=0)
    async def mid(task: Task) -> Any:
        task.report_usage(model="gpt-4o", input_tokens=200, output_tokens=20)
        children = await task.children()
        if not children:
            return Spawn([Child("part", {}, key=k) for k in ("m1", "m2")])
        return sum(c.result for c in children)

    @app.agent("whole", compute_usd_per_hour=0)
    async def whole(task: Task) -> Any:
        task.report_usage(model="gpt-4o", input_tokens=500, output_tokens=50)
        children = await task.children()
        if not children:
            return Spawn([Child("mid", {}, key="s"), *(Child("part", {}, key=k) for k in "ab")])
        return sum(c.result for c in children)

    yield app
    await app.aclose()


@pytest.fixture
async def tree(app: App) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    """A document's finished tree, a task outside it, and a client of the server."""
    root = await app.enqueue_async("whole", {}, tenant="acme")  # the children inherit it
    async with (
        Running(Worker(app, concurrency=4)),
        serving(app) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):

        async def done() -> bool:
            return (await app.get_task_async(root)).status == TaskStatus.COMPLETED

        await wait_for(done, timeout=60, what="the document's tree")
        lone = await app.enqueue_async("part", {})  # a task nobody spawned, outside the tree

        async def alone() -> bool:
            return (await app.get_task_async(lone)).status == TaskStatus.COMPLETED

        await wait_for(alone, timeout=30, what="the lone part")
        yield client, root


async def listed(client: httpx.AsyncClient) -> dict[int, dict[str, Any]]:
    answer = await client.get("/api/tasks", params={"limit": 50})
    assert answer.status_code == 200, answer.text
    return {item["id"]: item for item in answer.json()["items"]}


def usd(rows: list[dict[str, Any]]) -> float:
    return float(sum(r["total_usd"] for r in rows))


async def test_the_listing_shows_each_tasks_own_cost_its_trees_and_its_progress(
    tree: tuple[httpx.AsyncClient, int],
) -> None:
    client, root = tree
    items = await listed(client)
    assert len(items) == 7  # the document, its section, four pages, the lone page
    document = items[root]
    family = [i for i in items.values() if i["root_id"] == root]
    assert len(family) == 5
    section = next(i for i in family if i["agent"] == "mid")
    pages = [i for i in family if i["agent"] == "part"]
    (lone,) = [i for i in items.values() if i["id"] != root and i["root_id"] is None]

    # The document: 3 children, all done; its own cost is its two runs', its tree's is
    # everything but the lone page.
    assert document["children"] == {"total": 3, "done": 3, "failed": 0, "running": 0, "queued": 0}
    assert (document["parent_id"], document["root_id"]) == (None, None)
    assert document["cost"]["input_tokens"] == 1000  # 2 runs x 500
    assert document["tree_cost"]["input_tokens"] == 1000 + 2 * 200 + 4 * 1000
    assert document["tree_cost"]["output_tokens"] == 100 + 2 * 20 + 4 * 100
    everyone = [document, *family]
    assert document["tree_cost"]["total_usd"] == pytest.approx(
        sum(i["cost"]["total_usd"] for i in everyone), abs=EXACT
    )
    assert document["tree_cost"]["llm_usd"] > document["cost"]["llm_usd"] > 0

    # The section is a parent inside the tree: its tree is itself and its two pages.
    assert section["parent_id"] == root and section["children"]["total"] == 2
    under = [p for p in pages if p["parent_id"] == section["id"]]
    assert len(under) == 2
    assert section["tree_cost"]["input_tokens"] == 2 * 200 + 2 * 1000
    assert section["tree_cost"]["total_usd"] == pytest.approx(
        section["cost"]["total_usd"] + usd([p["cost"] for p in under]), abs=EXACT
    )
    # A task without children: no progress, and its tree is itself.
    for task in [*pages, lone]:
        assert task["children"] is None and task["tree_cost"] == task["cost"]
    assert lone["cost"]["input_tokens"] == 1000


async def test_the_trees_figure_is_the_task_pages(tree: tuple[httpx.AsyncClient, int]) -> None:
    client, root = tree
    document = (await listed(client))[root]
    summary = (await client.get(f"/api/tasks/{root}")).json()["children"]
    assert (summary["input_tokens"], summary["output_tokens"]) == (
        document["tree_cost"]["input_tokens"],
        document["tree_cost"]["output_tokens"],
    )
    assert summary["llm_cost_usd"] + summary["compute_cost_usd"] == pytest.approx(
        document["tree_cost"]["total_usd"], abs=EXACT
    )


async def test_a_trees_costs_by_agent_and_model(tree: tuple[httpx.AsyncClient, int]) -> None:
    client, root = tree
    document = (await listed(client))[root]
    answer = await client.get("/api/costs", params={"root": root, "group_by": "agent"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    rows = {r["agent"]: r for r in body["rows"]}
    assert {a: (r["tasks"], r["attempts"], r["input_tokens"]) for a, r in rows.items()} == {
        "whole": (1, 2, 1000),
        "mid": (1, 2, 400),
        "part": (4, 4, 4000),  # the lone page is not in this tree
    }
    assert body["totals"]["total_usd"] == pytest.approx(
        document["tree_cost"]["total_usd"], abs=EXACT
    )
    assert body["totals"]["input_tokens"] == document["tree_cost"]["input_tokens"]

    by_model = await client.get("/api/costs", params={"root": root, "group_by": "model"})
    models = {r["model"]: r["input_tokens"] for r in by_model.json()["rows"]}
    assert models == {"gpt-4o": 1400, "gpt-4o-mini": 4000}
    one_agent = await client.get("/api/costs", params={"root": root, "agent": "part"})
    assert one_agent.json()["totals"]["tasks"] == 4

    csv = await client.get("/api/costs", params={"root": root, "format": "csv"})
    assert csv.status_code == 200 and csv.text.splitlines()[0].startswith("tasks,attempts")


async def test_per_agent_totals_count_a_childs_cost_once_under_its_own_agent(
    tree: tuple[httpx.AsyncClient, int],
) -> None:
    client, root = tree
    items = await listed(client)
    own: dict[str, float] = {}
    for item in items.values():
        own[item["agent"]] = own.get(item["agent"], 0.0) + item["cost"]["total_usd"]
    for params in ({"group_by": "agent"}, {"group_by": "agent,model"}):
        body = (await client.get("/api/costs", params=params)).json()
        by_agent: dict[str, float] = {}
        for row in body["rows"]:
            by_agent[row["agent"]] = by_agent.get(row["agent"], 0.0) + row["total_usd"]
        assert by_agent == pytest.approx(own, abs=EXACT), params
        assert body["totals"]["total_usd"] == pytest.approx(
            sum(i["cost"]["total_usd"] for i in items.values()), abs=EXACT
        )
        assert body["totals"]["input_tokens"] == 6400  # 1000 + 400 + 4000 + the lone 1000
    # Per tenant: the tree's tasks all in acme's row, once; the lone page has no tenant.
    document = items[root]
    lone = next(i for i in items.values() if i["id"] != root and i["root_id"] is None)
    tenants = (await client.get("/api/costs", params={"group_by": "tenant"})).json()["rows"]
    assert {r["tenant"]: (r["tasks"], r["input_tokens"]) for r in tenants} == {
        "acme": (6, document["tree_cost"]["input_tokens"]),
        "": (1, lone["cost"]["input_tokens"]),
    }
    # The dashboard's tiles and agents table: the same, from the rollups.
    metrics = (await client.get("/api/metrics")).json()
    assert metrics["tokens"]["input"] == 6400
    agents = {a["agent"]: a["cost_usd"] for a in metrics["agents"]}
    assert agents == pytest.approx(own, abs=EXACT)


async def test_bad_roots_are_refused(tree: tuple[httpx.AsyncClient, int]) -> None:
    client, root = tree
    child = next(i for i in (await listed(client)).values() if i["root_id"] == root)
    answer = await client.get("/api/costs", params={"root": child["id"]})
    assert answer.status_code == 422
    assert answer.json()["error"]["message"] == (
        f"root: task {child['id']} is a child in the tree of task {root}; "
        f"ask root={root} for the whole tree"
    )
    missing = await client.get("/api/costs", params={"root": 999_999_999})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    for bad in ("0", "-1", "x", str(2**63)):
        answer = await client.get("/api/costs", params={"root": bad})
        assert answer.status_code == 422, bad


async def test_the_family_figures_and_a_trees_costs_are_read_by_index(app: App, conn: Any) -> None:
    """20,000 finished tasks, the newest 2,200 of them 200 roots x 10 children: the page's
    figures and one tree's costs touch no table whole (house rule: an EXPLAIN per hot
    query). Rows are written in bulk with the triggers off: only the plan is looked at."""
    from conveyor import metrics

    await app.database()  # registers the agents the rows name
    await conn.execute("SET session_replication_role = replica")
    await conn.execute(
        """
        INSERT INTO tasks (agent, status, attempts, finished_at)
        SELECT 'part', 'completed', 1, now() FROM generate_series(1, 20000)
        """
    )
    await conn.execute(
        """
        WITH ids AS (SELECT min(id) AS first FROM tasks)
        UPDATE tasks t
        SET parent_id = t.id - (t.id - ids.first) % 11, root_id = t.id - (t.id - ids.first) % 11,
            child_key = 'c' || t.id, depth = 1
        FROM ids
        WHERE t.id - ids.first >= 20000 - 2200 AND (t.id - ids.first) % 11 <> 0
        """
    )
    await conn.execute(
        """
        INSERT INTO task_attempts (task_id, attempt, agent, status, model, input_tokens,
                                   output_tokens, llm_cost_usd, compute_cost_usd)
        SELECT id, 1, agent, 'succeeded', 'gpt-4o-mini', 10, 1, 0.001, 0 FROM tasks
        """
    )
    await conn.execute("SET session_replication_role = origin")
    await conn.execute("ANALYZE tasks, task_attempts")
    cur = await conn.execute(
        "SELECT DISTINCT root_id FROM tasks WHERE root_id IS NOT NULL ORDER BY 1 DESC LIMIT 50"
    )
    roots = [r["root_id"] for r in await cur.fetchall()]
    newest = await conn.execute("SELECT id FROM tasks ORDER BY id DESC LIMIT 50")
    page = [r["id"] for r in await newest.fetchall()]

    def whole_tables(plan: str) -> list[str]:
        return [line.strip() for line in plan.splitlines() if "Seq Scan" in line]

    for ids in (roots, page):
        plan = await explain(conn, metrics.Q.tasks_usage, {"ids": ids})
        assert not whole_tables(plan), plan
        assert "tasks_root_idx" in plan and "tasks_children_idx" in plan, plan
    full = roots[10]  # a root away from either end of the range: all 10 children
    figures = await metrics.task_usage(conn, [full])
    assert figures[full]["children"]["total"] == 10
    assert figures[full]["tree_cost"]["input_tokens"] == 11 * 10

    params = metrics._params(
        metrics.Filters(root=full),
        metrics.Span.of(None, None),
        **{f"by_{k}": k in ("agent", "model") for k in metrics.GROUP_KEYS},
    )
    plan = await explain(conn, metrics.Q.costs_of_tree, params)
    assert not whole_tables(plan), plan
    assert "tasks_root_idx" in plan, plan


async def explain(conn: Any, statement: str, params: dict[str, Any]) -> str:
    cur = await conn.execute("EXPLAIN " + statement, params)
    return "\n".join(r["QUERY PLAN"] for r in await cur.fetchall())
