"""Other web sites against Conveyor: cross-site posts from a real page in a real Chromium,
DNS rebinding, framing, and the sign-in (throttle, sessions, sign-out). Everything runs
against a real server on loopback and a real database; the attacker's page is served by a
second server on another port and loaded under another origin.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from playwright.async_api import Browser, Page, async_playwright, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from conveyor import App
from conveyor.settings import Settings
from conveyor.web import create_app
from conveyor.web.security import PAGE_POLICY
from conveyor.web.serve import make_server
from conveyor.web.sessions import COOKIE, LIFETIME, Sessions
from conveyor.web.throttle import FREE, MAX_DELAY
from tests.conftest import wait_for
from tests.test_documents import png

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TOKEN = "s3cret"


async def _noop(task: Any) -> None:
    return None


async def _started(server: uvicorn.Server, task: asyncio.Task[None]) -> int:
    while not server.started:
        if task.done():
            task.result()  # it failed to start: say why
        await asyncio.sleep(0.01)
    port: int = server.servers[0].sockets[0].getsockname()[1]
    return port


@asynccontextmanager
async def conveyor(
    settings: Settings, host: str = "127.0.0.1"
) -> AsyncIterator[tuple[str, App, FastAPI]]:
    """Conveyor's web app on a free port (no worker: tasks stay enqueued)."""
    app = App(settings=settings)
    app.agent("invoice")(_noop)
    api = create_app(app)
    server = make_server(api, host, 0, token=settings.api_token)
    task = asyncio.create_task(server.serve())
    port = await _started(server, task)
    try:
        yield f"http://127.0.0.1:{port}", app, api
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # Ctrl-C belongs to pytest


@asynccontextmanager
async def attacker(pages: dict[str, str]) -> AsyncIterator[int]:
    """Another site: serves `pages[path]` as HTML, with inline scripts (no CSP of ours)."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(pages[request.path_params["name"]])

    site = Starlette(routes=[Route("/{name}", page)])
    config = uvicorn.Config(site, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve())
    port = await _started(server, task)
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@asynccontextmanager
async def chromium(*args: str) -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*ARGS, *args]
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as browser:
        yield browser


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context()
    page = await context.new_page()
    yield page
    await context.close()


async def status_of(app: App, task_id: int) -> str:
    return str((await app.get_task_async(task_id)).status)


async def document_count(app: App) -> int:
    async with app.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM documents")
        row = await cur.fetchone()
        assert row is not None
        return int(row["n"])


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return str(body["error"]["code"])


# ---------------------------------------------------------------------------------------
# Cross-site requests from a real browser


ATTACK = """<!doctype html><title>cute cats</title>
<form id="cancel" method="post" action="{target}/api/tasks/{cancel}/cancel"></form>
<script>
  const target = "{target}";
  async function attack() {{
    // A plain form post (what any page can do), and "no-cors" fetches, which need no
    // permission from the target either: a retry, and an upload that would spend money.
    const upload = new FormData();
    upload.append("agent", "invoice");
    upload.append("files", new Blob([new Uint8Array({png})], {{type: "image/png"}}), "a.png");
    await Promise.allSettled([
      fetch(`${{target}}/api/tasks/{retry}/retry`, {{method: "POST", mode: "no-cors"}}),
      fetch(`${{target}}/api/documents`, {{method: "POST", mode: "no-cors", body: upload}}),
      fetch(`${{target}}/api/tasks`, {{method: "POST", mode: "no-cors",
             headers: {{"content-type": "text/plain"}}, body: '{{"agent": "invoice"}}'}}),
    ]);
    document.getElementById("cancel").submit();
  }}
  attack();
</script>"""


@pytest.mark.parametrize("attacker_host", ["localhost", "127.0.0.1"])
async def test_a_page_of_another_origin_cannot_act(
    page: Page, settings: Settings, attacker_host: str
) -> None:
    """`localhost:B` is another site than `127.0.0.1:A`; `127.0.0.1:B` the same site
    (Sec-Fetch-Site: same-site) but another origin: both are refused."""
    async with conveyor(settings) as (url, app, _api):
        cancel = await app.enqueue_async("invoice", {})
        retry = await app.enqueue_async("invoice", {})
        await app.cancel_async(retry)
        html = ATTACK.format(target=url, cancel=cancel, retry=retry, png=list(png()))
        async with attacker({"cats": html}) as port:
            await page.goto(f"http://{attacker_host}:{port}/cats")
            # The form's post navigates to Conveyor's answer: after the fetches.
            await page.wait_for_url(f"{url}/api/tasks/{cancel}/cancel")
            assert '"code":"cross_origin"' in await page.content()
        assert await status_of(app, cancel) == "enqueued"
        assert await status_of(app, retry) == "cancelled"
        assert await document_count(app) == 0
        async with app.connection() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM tasks")
            assert await cur.fetchone() == {"n": 2}, "no task was created"

        # The same requests from Conveyor's own page are accepted.
        await page.goto(f"{url}/")
        answer = await page.evaluate(
            f"fetch('/api/tasks/{cancel}/cancel', {{method: 'POST'}}).then(r => r.status)"
        )
        assert answer == 200
        assert await status_of(app, cancel) == "cancelled"


async def test_a_rebound_name_is_refused(settings: Settings) -> None:
    """DNS rebinding for real: Chromium resolves evil.example to 127.0.0.1, so the page
    at http://evil.example:PORT/ is Conveyor's server under the attacker's name, and
    same-origin with the attacker's script. Its Host names no name of this server."""
    async with conveyor(settings) as (url, _app, _api):
        port = url.rsplit(":", 1)[1]
        async with chromium("--host-resolver-rules=MAP evil.example 127.0.0.1") as browser:
            page = await browser.new_page()
            answer = await page.goto(f"http://evil.example:{port}/api/tasks")
            assert answer is not None and answer.status == 421
            assert '"code":"unknown_host"' in await page.content()
            # The same server by its own name answers.
            answer = await page.goto(f"{url}/api/tasks")
            assert answer is not None and answer.status == 200


async def test_the_dashboard_cannot_be_framed_and_runs_under_its_policy(
    page: Page, settings: Settings
) -> None:
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    async with conveyor(settings) as (url, app, _api):
        await app.enqueue_async("invoice", {})
        # The whole dashboard, meters included, runs without a CSP violation.
        async with app.connection() as conn:
            await conn.execute("UPDATE agents SET max_concurrent = 4 WHERE name = 'invoice'")
        await page.goto(f"{url}/")
        await expect(page.locator('[data-tile="total"] .value')).to_have_text("1")
        await expect(page.locator("#agents .meter .fill").first).to_be_attached()
        width = await page.locator("#agents .meter .fill").first.evaluate("e => e.style.width")
        assert width == "0%"
        assert violations == []

        frame = f'<iframe id="f" src="{url}/"></iframe>'
        async with attacker({"frame": frame}) as port:
            await page.goto(f"http://localhost:{port}/frame")
            child = await wait_for(lambda: page.frames[1:], what="the frame")
            # Until it ends, the frame's URL is about:blank, then '' while it navigates (seen
            # under load): wait for where it ended, the error page or the dashboard.
            await wait_for(
                lambda: child[0].url.startswith(("chrome-error://", url)), what="its navigation"
            )
            assert child[0].url.startswith("chrome-error://"), "the dashboard was framed"


# ---------------------------------------------------------------------------------------
# The same rules over plain HTTP


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[tuple[str, App, httpx.AsyncClient]]:
    settings = dataclasses.replace(
        settings, public_url="https://conveyor.example.com", allowed_hosts=("ops.example.com",)
    )
    async with conveyor(settings) as (url, app, _api), httpx.AsyncClient(base_url=url) as client:
        yield url, app, client


CROSS_ORIGIN = [
    {"origin": "null"},
    {"origin": "http://evil.example"},
    {"origin": "http://127.0.0.1:1"},  # the same host, another port
    {"origin": "https://127.0.0.1:{port}"},  # another scheme
    {"origin": "not an origin"},
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},  # 127.0.0.1:B and 127.0.0.1:A
    {"sec-fetch-site": "cross-site", "origin": "http://127.0.0.1:{port}"},
]
SAME_ORIGIN = [
    {},  # curl, scripts, the CLI: not a browser, no Origin
    {"origin": "http://127.0.0.1:{port}"},
    {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:{port}"},
    {"sec-fetch-site": "none"},  # the user's own navigation
    {"origin": "https://conveyor.example.com"},  # the page of PUBLIC_URL, behind a proxy
    {"host": "ops.example.com", "origin": "https://ops.example.com"},  # a TLS proxy
    {"host": "localhost:{port}", "origin": "http://localhost:{port}"},
    {"host": "[::1]:{port}", "origin": "http://[::1]:{port}"},
]
UNKNOWN_HOSTS = [
    "evil.example",
    "evil.example:{port}",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "a b",
    ":x",
]
KNOWN_HOSTS = [
    "localhost",
    "LOCALHOST:8000",
    "127.0.0.1",
    "[::1]",
    "10.1.2.3:80",  # an address cannot be rebound
    "conveyor.example.com",  # PUBLIC_URL's
    "ops.example.com",  # ALLOWED_HOSTS'
]


def _filled(headers: dict[str, str], url: str) -> dict[str, str]:
    port = url.rsplit(":", 1)[1]
    return {k: v.format(port=port) for k, v in headers.items()}


async def test_changes_from_other_origins_are_403(
    served: tuple[str, App, httpx.AsyncClient],
) -> None:
    url, app, client = served
    task_id = await app.enqueue_async("invoice", {})
    for headers in CROSS_ORIGIN:
        for path in (f"/api/tasks/{task_id}/cancel", "/api/tasks", "/api/documents", "/login"):
            answer = await client.post(path, headers=_filled(headers, url), json={})
            assert answer.status_code == 403, (headers, path, answer.text)
            assert error_code(answer) == "cross_origin"
        for method in ("PUT", "PATCH", "DELETE"):
            answer = await client.request(method, "/api/tasks", headers=_filled(headers, url))
            assert answer.status_code == 403, (headers, method, answer.text)
    assert await status_of(app, task_id) == "enqueued"
    assert (await client.get("/api/tasks", headers={"origin": "null"})).status_code == 200, (
        "reading is not refused: other sites cannot read the answer without CORS"
    )


async def test_changes_from_this_server_or_outside_a_browser_are_accepted(
    served: tuple[str, App, httpx.AsyncClient],
) -> None:
    url, app, client = served
    for headers in SAME_ORIGIN:
        task_id = await app.enqueue_async("invoice", {})
        answer = await client.post(f"/api/tasks/{task_id}/cancel", headers=_filled(headers, url))
        assert answer.status_code == 200, (headers, answer.text)
        assert await status_of(app, task_id) == "cancelled"


async def test_a_host_that_is_not_this_server_is_421(
    served: tuple[str, App, httpx.AsyncClient],
) -> None:
    url, app, client = served
    task_id = await app.enqueue_async("invoice", {})
    for host in UNKNOWN_HOSTS:
        for method, path in (
            ("GET", "/api/tasks"),
            ("GET", "/"),
            ("POST", f"/api/tasks/{task_id}/cancel"),
        ):
            headers = _filled({"host": host}, url)
            answer = await client.request(method, path, headers=headers)
            assert answer.status_code == 421, (host, method, path, answer.text)
            assert error_code(answer) == "unknown_host"
    assert await status_of(app, task_id) == "enqueued"
    for host in KNOWN_HOSTS:
        answer = await client.get("/api/tasks", headers={"host": host})
        assert answer.status_code == 200, (host, answer.text)


async def test_the_host_it_listens_on_and_any_host_when_asked(settings: Settings) -> None:
    async with (
        conveyor(settings, host="localhost") as (url, _app, _api),
        httpx.AsyncClient(base_url=url) as client,
    ):
        assert (await client.get("/healthz", headers={"host": "localhost"})).status_code == 200
    anything = dataclasses.replace(settings, allowed_hosts=("*",))
    async with conveyor(anything) as (url, _app, _api), httpx.AsyncClient(base_url=url) as client:
        assert (await client.get("/healthz", headers={"host": "evil.example"})).status_code == 200


async def test_every_answer_has_the_security_headers(
    served: tuple[str, App, httpx.AsyncClient],
) -> None:
    _url, _app, client = served
    for path in ("/", "/login", "/api/tasks", "/static/dashboard.js", "/nowhere", "/docs"):
        answer = await client.get(path)
        assert answer.headers["x-content-type-options"] == "nosniff", path
        assert answer.headers["x-frame-options"] == "DENY", path
        assert answer.headers["referrer-policy"] == "same-origin", path
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], path
    page = (await client.get("/")).headers["content-security-policy"]
    assert page == PAGE_POLICY and "unsafe-inline" not in page and "script-src 'self'" in page
    refused = await client.post("/api/tasks", headers={"origin": "null"})
    assert refused.headers["x-frame-options"] == "DENY", "refusals carry them too"
    # The pages hold no inline script for the policy to block.
    for path in ("/", "/login"):
        html = (await client.get(path)).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), html
        assert not re.search(r"<[^>]*\son[a-z]+\s*=", html), "no inline event handlers"


# ---------------------------------------------------------------------------------------
# Signing in


@pytest.fixture
async def guarded(settings: Settings) -> AsyncIterator[tuple[App, FastAPI, httpx.AsyncClient]]:
    async with (
        conveyor(dataclasses.replace(settings, api_token=TOKEN)) as (url, app, api),
        httpx.AsyncClient(base_url=url) as client,
    ):
        yield app, api, client


async def sign_in(client: httpx.AsyncClient, token: str = TOKEN) -> httpx.Response:
    client.cookies.clear()
    return await client.post("/login", data={"token": token})


async def test_wrong_tokens_are_throttled(guarded: tuple[App, FastAPI, httpx.AsyncClient]) -> None:
    _app, api, client = guarded
    now = [1000.0]
    api.state.login_throttle.clock = lambda: now[0]
    statuses = [(await sign_in(client, f"guess{i}")).status_code for i in range(100)]
    # The free guesses and the one that closes the address are looked at; then nothing is.
    assert statuses == [401] * (FREE + 1) + [429] * (100 - FREE - 1)
    closed = await sign_in(client)
    assert closed.status_code == 429, "while closed, the right token is not looked at either"
    assert closed.headers["retry-after"] == "1" and "try again" in closed.text

    now[0] += 1.0
    assert (await sign_in(client, "guess")).status_code == 401
    twice = await sign_in(client)
    assert twice.status_code == 429 and twice.headers["retry-after"] == "2", "each wait doubles"
    now[0] += 2.0
    assert (await sign_in(client)).status_code == 303, "the right token opens it again"
    assert [(await sign_in(client, "typo")).status_code for _ in range(FREE)] == [401] * FREE

    for _ in range(30):  # the wait is capped
        now[0] += MAX_DELAY
        await sign_in(client, "guess")
    assert int((await sign_in(client)).headers["retry-after"]) == MAX_DELAY


async def test_each_sign_in_gets_its_own_cookie_that_expires(
    guarded: tuple[App, FastAPI, httpx.AsyncClient],
) -> None:
    _app, api, client = guarded
    values = []
    for _ in range(2):
        answer = await sign_in(client)
        assert answer.status_code == 303
        header = answer.headers["set-cookie"]
        assert f"Max-Age={int(LIFETIME)}" in header and "HttpOnly" in header
        assert "SameSite=strict" in header.replace("Strict", "strict")
        values.append(answer.cookies[COOKIE])
    assert values[0] != values[1] and TOKEN not in "".join(values)

    async def reads(value: str) -> int:
        client.cookies.clear()
        return (await client.get("/api/tasks", headers={"cookie": f"{COOKIE}={value}"})).status_code

    assert [await reads(v) for v in values] == [200, 200]
    session_id, expires, mac = values[0].split(".")
    assert await reads(f"{session_id}.{int(expires) + 3600}.{mac}") == 401, "altered"
    assert await reads(Sessions("another token").issue()) == 401, "another token's"

    sessions: Sessions = api.state.sessions
    real = sessions.clock
    sessions.clock = lambda: real() + LIFETIME + 1
    assert [await reads(v) for v in values] == [401, 401], "expired"


async def test_signing_out_ends_the_session(
    guarded: tuple[App, FastAPI, httpx.AsyncClient],
) -> None:
    _app, _api, client = guarded
    await sign_in(client)
    value = client.cookies[COOKIE]
    assert (await client.get("/api/tasks")).status_code == 200
    out = await client.post("/logout")
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert (
        'conveyor_session=""' in out.headers["set-cookie"]
        and "Max-Age=0" in out.headers["set-cookie"]
    )
    client.cookies.clear()
    refused = await client.get("/api/tasks", headers={"cookie": f"{COOKIE}={value}"})
    assert refused.status_code == 401, "the old cookie no longer reads"
    assert (await client.get("/", headers={"cookie": f"{COOKIE}={value}"})).headers[
        "location"
    ] == "/login"


async def test_signing_in_and_out_in_the_browser(page: Page, settings: Settings) -> None:
    async with conveyor(dataclasses.replace(settings, api_token=TOKEN)) as (url, _app, _api):
        await page.goto(f"{url}/")
        assert page.url.endswith("/login")
        await page.locator('input[name="token"]').fill(TOKEN)
        await page.locator('button[type="submit"]').click()
        await expect(page.locator("#live")).to_have_attribute("data-state", "live")
        await page.get_by_role("button", name="Sign out").click()
        await page.wait_for_url(f"{url}/login")
        assert await page.context.cookies() == []
        await page.goto(f"{url}/")
        assert page.url.endswith("/login")
