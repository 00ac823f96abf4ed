"""The real headless Chromium for the browser tests, set up once: Debian's /usr/bin/chromium
driven by playwright (no `playwright install`; `.ci/run` installs the package). Without it
the tests that use these fail; they never skip.

tests/conftest.py loads this module as a plugin: a test takes the fixtures `browser` (one
per test session, launched only if a test asks) and `page` (a fresh context per test,
1280 x 900), or opens pages of its own with `open_page`; `sign_in` passes /login with a
token. Every page records its script's errors and the Content-Security-Policy's refusals
(the pages run under a strict CSP), and `close_page` fails the test if there were any.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

CHROMIUM = "/usr/bin/chromium"
# How long an `expect` waits for the page to show what it must: a bound for a machine whose
# cores are taken by other work, not a latency (the event stream's latency is measured by
# benchmarks/bench_events.py). A check that passes returns as soon as the page shows it.
EXPECT_MS = 15_000
expect.set_options(timeout=EXPECT_MS)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    opened = await open_page(browser)
    yield opened
    await close_page(opened)


async def open_page(browser: Browser, *, width: int = 1280, height: int = 900) -> Page:
    """A page in a context of its own (its own cookies), recording its script's errors."""
    context = await browser.new_context(viewport={"width": width, "height": height})
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda m: errors.append(m.text) if "Content Security" in m.text else None)
    _ERRORS[id(opened)] = errors
    return opened


async def close_page(opened: Page) -> None:
    """Close the page's context; fail if its script failed while the test ran."""
    errors = _ERRORS.pop(id(opened), [])
    await opened.context.close()
    assert not errors, f"the page's script failed: {errors}"


async def sign_in(opened: Page, url: str, token: str) -> None:
    """Sign the page's context in with `token` through the /login form (a session cookie)."""
    await opened.goto(f"{url}/login")
    await opened.fill("input[name=token]", token)
    await opened.click("button[type=submit]")
    await opened.wait_for_url(f"{url}/")


# The errors of the open pages, by page: playwright's Page takes no attributes of ours.
_ERRORS: dict[int, list[str]] = {}
