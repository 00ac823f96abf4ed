"""The dashboard in a real browser: Debian's chromium driven by playwright, against a real
web server on loopback, a real worker in the loop and a real database.

No `playwright install`: the browser is the system's /usr/bin/chromium (`.ci/run` installs
it). Without it these tests fail; they never skip. Nothing here sleeps against the clock:
every check waits on the page's DOM with a timeout (playwright's `expect`).

CONVEYOR_DASHBOARD_SCREENSHOT=docs/dashboard.png saves the populated page there.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
from playwright.async_api import Page, expect

from conveyor import App, Task
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.browser import sign_in
from tests.conftest import wait_for
from tests.web import serving

TILES = (
    "total",
    "enqueued",
    "processing",
    "completed",
    "failed",
    "cancelled",
    "input_tokens",
    "output_tokens",
    "llm_usd",
    "compute_usd",
    "p50_ms",
    "confidence",
)


class Shop:
    """An App with agents whose work the test controls, its worker, and its server."""

    def __init__(self, settings: Settings) -> None:
        self.app = App(settings=settings)
        self.release = asyncio.Event()
        app = self.app

        # A compute rate far above contract's (the default), so that invoice's few ms of
        # compute still show in the tiles' two significant digits next to contract's 0.6 s.
        @app.agent("invoice", max_concurrent=4, max_tpm=90_000, compute_usd_per_hour=100)
        async def invoice(task: Task) -> dict[str, Any]:
            if task.payload.get("hold"):
                await self.release.wait()
            if task.payload.get("fail"):
                raise ValueError("the invoice has no total")
            task.report_usage(model="gpt-4o-mini", input_tokens=1000, output_tokens=200)
            return {"confidence": 0.9}

        @app.agent("contract", max_concurrent=2)
        async def contract(task: Task) -> dict[str, Any]:
            await asyncio.sleep(0.3)  # slower: a different median response time
            task.report_usage(model="gpt-4o", input_tokens=500, output_tokens=100)
            return {"confidence": 0.5}

    async def populate(self) -> dict[str, int]:
        """Tasks of every status for 'invoice', completed ones only for 'contract', so
        that a filter on either changes every number."""
        app = self.app
        done = [await app.enqueue_async("invoice", {}, tenant="acme") for _ in range(3)]
        done += [await app.enqueue_async("contract", {}, tenant="globex") for _ in range(2)]
        failed = await app.enqueue_async("invoice", {"fail": True}, max_attempts=1, tenant="acme")
        later = timedelta(hours=1)
        await app.enqueue_async("invoice", {}, run_after=later, tenant="acme")
        cancelled = await app.enqueue_async("invoice", {}, run_after=later, tenant="acme")
        await app.cancel_async(cancelled)
        held = await app.enqueue_async("invoice", {"hold": True}, tenant="acme")

        async def settled() -> bool:
            finished = [await app.get_task_async(t) for t in [*done, failed]]
            running = await app.get_task_async(held)
            return all(t.status in ("completed", "failed") for t in finished) and (
                running.status == "processing"
            )

        await wait_for(settled, timeout=60, what="the seeded tasks")
        return {"held": held, "done": done[0]}


@asynccontextmanager
async def shop(settings: Settings) -> AsyncIterator[tuple[Shop, str]]:
    """The server has an App of its own: its shutdown closes its pool, not the worker's."""
    s = Shop(settings)
    async with serving(App(settings=settings)) as url:
        worker = Worker(s.app, concurrency=4)
        running = asyncio.create_task(worker.run())
        try:
            await asyncio.wait_for(worker.wait_started(), 10)
            yield s, url
        finally:
            s.release.set()
            worker.stop()
            await asyncio.wait_for(running, 60)
            await s.app.aclose()


async def seed_history(app: App) -> None:
    """For the screenshot: a day of tasks, created hour by hour (backdated rows), run now."""
    async with app.connection() as conn:
        await conn.execute(
            """
            INSERT INTO tasks (agent, payload, tenant, max_attempts, created_at)
            SELECT CASE WHEN i % 3 = 0 THEN 'contract' ELSE 'invoice' END,
                   jsonb_build_object('fail', (h + i) % 11 = 0),
                   CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                   1,
                   now() - make_interval(hours => h) + make_interval(secs => i)
            FROM generate_series(1, 22) AS h,
                 generate_series(1, 4 + (h * 7) % 9) AS i
            """
        )

    async def drained() -> bool:
        async with app.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM tasks WHERE status IN ('enqueued', 'processing')"
                " AND run_after < now() + interval '1 minute' AND NOT payload ? 'hold'"
            )
            row = await cur.fetchone()
            return row is not None and row["n"] == 0

    await wait_for(drained, timeout=180, what="the history's tasks")


async def tile(page: Page, name: str) -> str:
    return await page.locator(f'[data-tile="{name}"] .value').inner_text()


async def metrics(url: str, **params: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url) as client:
        answer = await client.get("/api/metrics", params=params)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


async def test_live_numbers_without_a_reload(page: Page, settings: Settings) -> None:
    async with shop(settings) as (s, url):
        ids = await s.populate()
        truth = await metrics(url)
        await page.goto(f"{url}/?poll=3600")  # after the first read, only the stream
        await expect(page.locator("#live")).to_have_attribute("data-state", "live")
        expected = {
            "total": "9",
            "enqueued": "1",
            "processing": "1",
            "completed": "5",
            "failed": "1",
            "cancelled": "1",
            "input_tokens": "4,000",
            "output_tokens": "800",
            "confidence": "0.74",
        }
        for name, text in expected.items():
            await expect(page.locator(f'[data-tile="{name}"] .value')).to_have_text(text)
        assert truth["tasks"]["total"] == 9 and truth["tokens"]["input"] == 4000
        for name in ("llm_usd", "compute_usd", "p50_ms"):
            assert (await tile(page, name)) not in ("—", "$0"), name
        agents = page.locator("#agents tbody tr")
        await expect(agents).to_have_count(2)
        await expect(page.locator('#agents tr[data-agent="invoice"] td').nth(1)).to_have_text("1")

        # An enqueue appears without a reload: the tile and a row of its own.
        new = await s.app.enqueue_async("contract", {}, tenant="globex")
        row = page.locator(f'#recent tr[data-task="{new}"]')
        await expect(row).to_be_visible()
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("10")
        # ... and so does a completion, however long the worker took to get there.
        s.release.set()

        async def both_completed() -> bool:
            tasks = [await s.app.get_task_async(t) for t in (new, ids["held"])]
            return all(t.status == "completed" for t in tasks)

        await wait_for(both_completed, timeout=30, interval=0.01, what="the completions")
        held = page.locator(f'#recent tr[data-task="{ids["held"]}"]')
        await expect(held).to_have_attribute("data-status", "completed")
        await expect(row).to_have_attribute("data-status", "completed")
        await expect(page.locator('[data-tile="completed"] .value')).to_have_text("7")
        assert await page.locator("#chart svg rect").count() > 0

        shot = os.environ.get("CONVEYOR_DASHBOARD_SCREENSHOT")
        if shot:
            await seed_history(s.app)
            since = (datetime.now(UTC) - timedelta(hours=23)).replace(minute=0, second=0)
            await page.goto(f"{url}/?since={quote(since.isoformat())}")
            await expect(page.locator('[data-tile="total"] .value')).not_to_have_text("—")
            await page.locator("#costs-run").click()
            await expect(page.locator("#costs-table")).to_be_visible()
            await page.screenshot(path=shot, full_page=True)


async def test_polling_when_the_stream_is_blocked(page: Page, settings: Settings) -> None:
    async with shop(settings) as (s, url):
        await s.populate()
        await page.route("**/api/events*", lambda route: route.abort())
        await page.goto(f"{url}/?poll=0.3")
        await expect(page.locator("#live")).to_have_attribute("data-state", "polling")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("9")
        await s.app.enqueue_async("contract", {})
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("10")
        await expect(page.locator("#live")).to_have_attribute("data-state", "polling")


async def test_filters_change_every_tile(page: Page, settings: Settings) -> None:
    async with shop(settings) as (s, url):
        await s.populate()
        await page.goto(f"{url}/?poll=60")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("9")
        before = {name: await tile(page, name) for name in TILES}

        await page.locator('input[name="agent"]').fill("contract")
        await page.locator('input[name="agent"]').dispatch_event("change")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("2")
        await expect(page.locator('[data-tile="confidence"] .value')).to_have_text("0.50")
        after = {name: await tile(page, name) for name in TILES}
        same = [name for name in TILES if before[name] == after[name]]
        assert not same, f"tiles the agent filter did not change: {same}"
        await expect(page.locator("#agents tbody tr")).to_have_count(1)
        await expect(page.locator("#recent tbody tr")).to_have_count(2)
        assert "agent=contract" in page.url  # a filtered view can be shared as a link

        # A status filter and a tenant filter are obeyed as well.
        await page.locator('select[name="status"]').select_option("completed")
        await page.locator('input[name="agent"]').fill("")
        await page.locator('input[name="agent"]').dispatch_event("change")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("5")
        await page.locator('input[name="tenant"]').fill("globex")
        await page.locator('input[name="tenant"]').dispatch_event("change")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("2")
        await expect(page.locator("#recent tbody tr")).to_have_count(2)

        # The cost breakdown runs when asked, for the same filters.
        await page.locator("#costs-run").click()
        await expect(page.locator("#costs-table tbody tr").first).to_contain_text("contract")


async def test_the_task_page_shows_its_attempts(page: Page, settings: Settings) -> None:
    async with shop(settings) as (s, url):
        ids = await s.populate()
        await page.goto(f"{url}/tasks/{ids['done']}")
        attempts = page.locator("#attempts tbody tr")
        await expect(attempts).to_have_count(1)
        await expect(attempts.first).to_contain_text("succeeded")
        await expect(attempts.first).to_contain_text("1,000 / 200")
        await expect(attempts.first).to_contain_text("gpt-4o-mini")
        missing = await page.goto(f"{url}/tasks/999999")
        assert missing is not None and missing.status == 404


async def test_a_narrow_screen_does_not_scroll_sideways(page: Page, settings: Settings) -> None:
    async with shop(settings) as (s, url):
        await s.populate()
        await page.set_viewport_size({"width": 390, "height": 800})
        await page.goto(f"{url}/")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("9")
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390


async def test_with_a_token_the_browser_signs_in(page: Page, settings: Settings) -> None:
    from dataclasses import replace

    async with shop(replace(settings, api_token="s3cret")) as (s, url):
        await s.populate()
        await page.goto(f"{url}/")
        assert page.url.endswith("/login")
        await sign_in(page, url, "s3cret")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("9")
        await expect(page.locator("#live")).to_have_attribute("data-state", "live")
        cookies = await page.context.cookies()
        assert [c["httpOnly"] for c in cookies] == [True] and "s3cret" not in str(cookies)
        # The cookie reads; it does not act.
        status = await page.evaluate(
            "fetch('/api/tasks', {method: 'POST', headers: {'content-type': 'application/json'},"
            " body: JSON.stringify({agent: 'invoice'})}).then(r => r.status)"
        )
        assert status == 401


def test_task_page_times_are_shown_in_utc_whatever_the_session_zone() -> None:
    from datetime import datetime, timedelta, timezone

    from conveyor.web.dashboard import _time

    berlin = datetime(2026, 11, 30, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert ">2026-11-30 10:00:00 UTC<" in _time(berlin)
