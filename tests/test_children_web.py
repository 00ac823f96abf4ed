"""A parent's progress over HTTP and on its task page, in the real headless Chromium:
GET /api/tasks/{id} shows its children done / total and the usage of its tree, and the
page moves as each child ends, without a reload."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from conveyor import App, Child, Spawn, Task, TaskStatus
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running
from tests.web import serving


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    gates = {key: asyncio.Event() for key in ("a", "b", "c")}
    app.gates = gates  # type: ignore[attr-defined]

    @app.agent("part")
    async def part(task: Task) -> int:
        await gates[task.payload["key"]].wait()
        task.report_usage(model="tiny", input_tokens=100, output_tokens=10)
        return 1

    @app.agent("whole")
    async def whole(task: Task) -> Any:
        children = await task.children()
        if not children:
            return Spawn([Child("part", {"key": k}, key=k) for k in gates])
        return sum(c.result for c in children)

    yield app
    await app.aclose()


@asynccontextmanager
async def three_children_running(
    app: App,
) -> AsyncIterator[tuple[int, str, httpx.AsyncClient, Worker]]:
    """A parent of agent `whole` whose three children run, held at their gates, with its
    worker, the web app's URL and an HTTP client to it: (parent, url, client, worker)."""
    parent = await app.enqueue_async("whole", {})
    async with (
        Running(Worker(app, concurrency=4)) as worker,
        serving(app) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):

        async def running() -> bool:
            body = (await client.get(f"/api/tasks/{parent}")).json()
            return bool(body["children"]["running"] == 3)

        await wait_for(running, timeout=30, what="three children running")
        yield parent, url, client, worker


async def test_a_parents_progress_shows_in_the_api_and_moves_on_its_page(
    app: App, page: Page
) -> None:
    gates = app.gates  # type: ignore[attr-defined]
    async with three_children_running(app) as (parent, url, client, _):
        children = (await client.get(f"/api/tasks/{parent}")).json()["children"]
        assert (children["total"], children["done"], children["waiting"]) == (3, 0, True)
        assert (await client.get(f"/api/tasks/{parent}")).json()["status"] == "processing"

        await page.goto(f"{url}/tasks/{parent}")
        progress = page.locator("#task-children")
        await expect(progress).to_contain_text("0 / 3 done")
        gates["a"].set()
        # Live: the parent's status has not changed, so the page did not reload.
        await expect(progress).to_contain_text("1 / 3 done")
        gates["b"].set()
        gates["c"].set()
        await wait_for(lambda: _completed(app, parent), timeout=30, what="the parent completed")
        await expect(progress).to_contain_text("3 / 3 done")
        body = (await client.get(f"/api/tasks/{parent}")).json()
        async with app.connection() as conn:
            cur = await conn.execute(
                "SELECT id FROM tasks WHERE parent_id = %s ORDER BY id LIMIT 1", (parent,)
            )
            first = await cur.fetchone()
        assert first is not None
        child = (await client.get(f"/api/tasks/{first['id']}")).json()["children"]
    assert body["result"] == 3
    assert [a["status"] for a in body["attempt_history"]] == ["spawned", "succeeded"]
    tree = body["children"]
    assert (tree["done"], tree["waiting"], tree["input_tokens"], tree["output_tokens"]) == (
        3,
        False,
        300,
        30,
    )
    assert (child["parent_id"], child["key"], child["depth"], child["total"]) == (
        parent,
        "a",
        1,
        0,
    )


async def test_the_dashboards_task_list_shows_a_parents_progress_live(app: App, page: Page) -> None:
    gates = app.gates  # type: ignore[attr-defined]
    async with three_children_running(app) as (parent, url, client, _):
        # Filtered to the parent's agent, and polling practically off: the children's
        # events, of another agent, must still move the parent's row, over the stream.
        await page.goto(f"{url}/?poll=3600&agent=whole")
        await expect(page.locator("#live")).to_have_attribute("data-state", "live")
        progress = page.locator(f'#recent tr[data-task="{parent}"] td.children')
        await expect(progress).to_have_text("0 / 3")
        await expect(page.locator("#recent tbody tr")).to_have_count(1)  # no child listed
        gates["a"].set()
        await expect(progress).to_have_text("1 / 3")
        gates["b"].set()
        await expect(progress).to_have_text("2 / 3")
        gates["c"].set()
        await wait_for(lambda: _completed(app, parent), timeout=30, what="the parent completed")
        await expect(progress).to_have_text("3 / 3")
        row = page.locator(f'#recent tr[data-task="{parent}"]')
        await expect(row).to_have_attribute("data-status", "completed")

        # Unfiltered, the children are listed too, each naming its parent.
        await page.goto(f"{url}/?poll=3600")
        children = page.locator("#recent td.children a.parent")
        await expect(children).to_have_count(3)
        await expect(children.first).to_have_text(f"of #{parent}")
        # Top-level only: the children leave the table, the parent stays, and the URL keeps it.
        await page.locator("#top-level").check()
        await expect(page.locator("#recent tbody tr")).to_have_count(1)
        await expect(page.locator(f'#recent tr[data-task="{parent}"]')).to_be_visible()
        assert "top_level=1" in page.url
        listed = (await client.get("/api/tasks", params={"top_level": "true"})).json()["items"]
        assert [t["id"] for t in listed] == [parent]
        await page.reload()
        await expect(page.locator("#top-level")).to_be_checked()
        await page.locator("#top-level").uncheck()
        await expect(children).to_have_count(3)
        await children.first.click()
        await page.wait_for_url(f"{url}/tasks/{parent}")
        await expect(page.locator("#task-children")).to_contain_text("3 / 3 done")


async def _completed(app: App, task_id: int) -> bool:
    return (await app.get_task_async(task_id)).status == TaskStatus.COMPLETED


async def test_cancel_over_http_cancels_the_waiting_parents_children(app: App) -> None:
    async with three_children_running(app) as (parent, _, client, worker):
        answer = await client.post(f"/api/tasks/{parent}/cancel")
        assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
        assert answer.json()["children"]["failed"] == 3, "cancelled children count as failed"
        await wait_for(lambda: not worker.slots.running, what="the children's agents stopped")
        again = await client.post(f"/api/tasks/{parent}/cancel")
        assert again.status_code == 200, "cancelling a cancelled task is not an error"
