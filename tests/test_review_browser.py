"""The review queue in a real browser: Debian's chromium driven by playwright, against a
real web server on loopback with named tokens, a real worker and a real database.

A reviewer signs in, finds the task on the Review page (live: it appears there without a
reload when its task completes), opens the review screen (the page rendered, the words
behind the fields outlined), corrects a field, and the task page shows the corrected
version and the audit trail. Two reviewers on one task: the second is told of the conflict
and nothing of theirs is written. Every check waits on the DOM (playwright's `expect`).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path

from playwright.async_api import Browser, Page, expect

from conveyor.documents.submit import submit_files
from conveyor.documents.types import Invoice, make_extraction
from conveyor.settings import Settings
from conveyor.testing.samples import make_invoice
from tests.browser import close_page, open_page, sign_in
from tests.conftest import wait_for
from tests.test_reviews import ALICE, BOB, TOKENS, Desk, desk


async def signed_in(browser: Browser, url: str, token: str) -> Page:
    """A reviewer's page, signed in with their token (its own context: its own cookie)."""
    page = await open_page(browser, width=1400, height=1000)
    await sign_in(page, url, token)
    return page


async def reviewed_invoice(d: Desk, tmp_path: Path, seed: int) -> tuple[int, str, str]:
    """A real invoice PDF, stored and extracted with a wrong total below the threshold:
    (task id, the machine's total, the right one)."""
    sample = make_invoice(seed)
    truth = sample.truth.model_dump(mode="json")
    right = truth["total"]
    wrong = str(Decimal(right) + 1)
    result = make_extraction(
        "invoice",
        Invoice.model_validate({**truth, "total": wrong}),
        fields={"number": 0.95, "total": 0.3},
        notes=[],
        pages=1,
        extractor="offline",
    ).model_dump(mode="json")
    path = tmp_path / sample.name
    path.write_bytes(sample.pdf)
    (submitted,) = await submit_files(d.app, [path], agent="invoice", rerun=True)
    d.documents[submitted.document.sha256] = result
    return submitted.task_id, wrong, right


async def completed(d: Desk, task_id: int) -> None:
    async def done() -> bool:
        return (await d.app.get_task_async(task_id)).status == "completed"

    await wait_for(done, timeout=30, what=f"task {task_id}")


async def test_a_reviewer_corrects_a_field_and_the_task_shows_the_version_and_trail(
    browser: Browser, settings: Settings, tmp_path: Path
) -> None:
    async with desk(dataclasses.replace(settings, api_tokens=TOKENS)) as (d, client):
        url = str(client.base_url).rstrip("/")
        page = await signed_in(browser, url, ALICE)
        try:
            # Polling practically off: only the event stream can show the new review.
            await page.goto(f"{url}/reviews?poll=3600")
            await expect(page.locator("#live")).to_have_text("live")
            await expect(page.locator("#queue tbody")).to_contain_text("nothing waits")

            task_id, wrong, right = await reviewed_invoice(d, tmp_path, 7)
            await completed(d, task_id)
            row = page.locator(f'#queue tr[data-task="{task_id}"]')
            await expect(row).to_be_visible()
            await expect(page.locator("#backlog")).to_contain_text("invoice")

            await row.locator("a.review-link").click()
            await page.wait_for_url(f"{url}/reviews/{task_id}")
            total = page.locator('input[name="total"]')
            await expect(total).to_have_value(wrong)
            await expect(page.locator("#checks")).to_contain_text("not the total")
            image = page.locator('.sheet[data-page="1"] img')
            await expect(image).to_be_visible()
            await page.wait_for_function(
                "() => document.querySelector('.sheet img').naturalWidth > 0"
            )
            assert await page.locator('.box[data-field="number"]').count() >= 1

            await total.fill(right)
            await page.click("#correct")
            await expect(page.locator("#message")).to_contain_text("1 field corrected")
            await expect(page.locator("#review-status")).to_have_text("corrected")
            await expect(page.locator("#versions")).to_contain_text("corrected by alice")

            await page.goto(f"{url}/tasks/{task_id}")
            await expect(page.locator(".card:has(h2:text-is('Result')) pre")).to_contain_text(
                f'"total": "{right}"'
            )
            audit = page.locator("#audit")
            await expect(audit).to_contain_text("version 1: the machine's")
            await expect(audit).to_contain_text("version 2: corrected by alice")
            await expect(audit).to_contain_text(f"{wrong} → {right}")

            await page.goto(f"{url}/reviews?poll=3600")
            await expect(page.locator("#queue tbody")).to_contain_text("nothing waits")
            reviewed = page.locator('#review-metrics tr[data-agent="invoice"]')
            await expect(reviewed).to_contain_text("total 0% of 1")
            await expect(reviewed).to_contain_text("number 100% of 1")
        finally:
            await close_page(page)


async def test_two_reviewers_on_one_task_the_second_gets_a_clear_conflict(
    browser: Browser, settings: Settings, tmp_path: Path
) -> None:
    async with desk(dataclasses.replace(settings, api_tokens=TOKENS)) as (d, client):
        url = str(client.base_url).rstrip("/")
        task_id, wrong, right = await reviewed_invoice(d, tmp_path, 8)
        await completed(d, task_id)
        alice_page = await signed_in(browser, url, ALICE)
        bob_page = await signed_in(browser, url, BOB)
        try:
            for page in (alice_page, bob_page):
                await page.goto(f"{url}/reviews/{task_id}")
                await expect(page.locator('input[name="total"]')).to_have_value(wrong)

            await bob_page.click("#accept")
            await expect(bob_page.locator("#message")).to_have_text("Accepted.")

            await alice_page.locator('input[name="total"]').fill(right)
            await alice_page.click("#correct")
            message = alice_page.locator("#message")
            await expect(message).to_contain_text("Conflict")
            await expect(message).to_contain_text("accepted by bob")
            await expect(alice_page.locator("#review-status")).to_have_text("accepted")

            answer = await client.get(
                f"/api/tasks/{task_id}", headers={"authorization": f"Bearer {BOB}"}
            )
            task = answer.json()
            assert task["result"]["data"]["total"] == wrong, "alice's correction was not written"
        finally:
            await close_page(alice_page)
            await close_page(bob_page)
