"""The HTTP API over real HTTP, against a real server on loopback."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from conveyor import App, queue
from conveyor.settings import Settings
from tests.web import serving


async def _noop(task: Any) -> None:
    return None


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = App(settings=settings)
    app.agent("invoice")(_noop)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    error: dict[str, str] = body["error"]
    return error


async def test_create_then_read_a_task(client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/api/tasks",
        json={
            "agent": "invoice",
            "payload": {"doc": "a.pdf"},
            "priority": 5,
            "estimated_tokens": 1500,
            "idempotency_key": "inv-17",
        },
    )
    assert created.status_code == 201, created.text
    task = created.json()
    assert (task["status"], task["payload"], task["priority"]) == ("enqueued", {"doc": "a.pdf"}, 5)
    again = await client.post("/api/tasks", json={"agent": "invoice", "idempotency_key": "inv-17"})
    assert again.json()["id"] == task["id"], "idempotent"
    read = await client.get(f"/api/tasks/{task['id']}")
    assert read.status_code == 200 and read.json()["attempt_history"] == []


async def test_list_filters_and_pages_with_a_stable_cursor(client: httpx.AsyncClient) -> None:
    ids = [
        (await client.post("/api/tasks", json={"agent": "invoice", "payload": {"n": n}})).json()[
            "id"
        ]
        for n in range(7)
    ]
    await client.post(f"/api/tasks/{ids[0]}/cancel")
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/api/tasks", params=params)).json()
        seen += [t["id"] for t in page["items"]]
        if page["next_cursor"] is None:
            break
        cursor = page["next_cursor"]
        # A task created between pages does not shift the next page.
        await client.post("/api/tasks", json={"agent": "invoice"})
    assert seen == sorted(ids, reverse=True)
    cancelled = (await client.get("/api/tasks", params={"status": "cancelled"})).json()
    assert [t["id"] for t in cancelled["items"]] == [ids[0]]
    none_yet = (await client.get("/api/tasks", params={"until": "2000-01-01T00:00:00Z"})).json()
    assert none_yet == {"items": [], "next_cursor": None}
    recent = await client.get(
        "/api/tasks",
        params={"since": "2000-01-01T00:00:00+00:00", "agent": "invoice", "limit": 500},
    )
    assert len(recent.json()["items"]) == 7 + 2


async def test_cancel_and_retry(client: httpx.AsyncClient) -> None:
    task_id = (await client.post("/api/tasks", json={"agent": "invoice"})).json()["id"]
    retry_early = await client.post(f"/api/tasks/{task_id}/retry")
    assert retry_early.status_code == 409 and error_of(retry_early)["code"] == "conflict"
    assert (await client.post(f"/api/tasks/{task_id}/cancel")).json()["status"] == "cancelled"
    assert (await client.post(f"/api/tasks/{task_id}/retry")).json()["status"] == "enqueued"


@pytest.mark.parametrize(
    ("body", "status", "code", "names"),
    [
        ('{"agent": "invoice",', 400, "malformed_json", "not valid JSON"),
        ("{}", 422, "invalid_request", "agent"),
        ('{"agent": 7}', 422, "invalid_request", "agent"),
        ('{"agent": "invoice", "priority": "high"}', 422, "invalid_request", "priority"),
        ('{"agent": "invoice", "priority": 99999}', 422, "invalid_request", "priority"),
        (
            '{"agent": "invoice", "estimated_tokens": -1}',
            422,
            "invalid_request",
            "estimated_tokens",
        ),
        ('{"agent": "invoice", "run_after": "tomorrow"}', 422, "invalid_request", "run_after"),
        (
            '{"agent": "invoice", "run_after": "2030-01-01T00:00:00"}',
            422,
            "invalid_request",
            "run_after",
        ),
        ('{"agent": "invoice", "colour": "red"}', 422, "invalid_request", "colour"),
        ('{"agent": "invoice", "labels": {"a": 1}}', 422, "invalid_request", "labels"),
        ('{"agent": "nobody"}', 422, "unknown_agent", "nobody"),
        ('{"agent": "invoice", "payload": {"x": NaN}}', 422, "invalid_task", "not JSON"),
        ("[1, 2]", 422, "invalid_request", "body"),
    ],
)
async def test_bad_task_bodies_get_a_4xx_that_names_the_problem(
    client: httpx.AsyncClient, body: str, status: int, code: str, names: str
) -> None:
    response = await client.post(
        "/api/tasks", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code and names in error["message"]


@pytest.mark.parametrize(
    "task_id", ["abc", "-1", "0", "1.5", "99999999999999999999", "\uff11", "12345678901", "%20"]
)
async def test_unknown_ids_of_any_shape_are_404(client: httpx.AsyncClient, task_id: str) -> None:
    for method, path in (
        ("GET", f"/api/tasks/{task_id}"),
        ("POST", f"/api/tasks/{task_id}/cancel"),
        ("POST", f"/api/tasks/{task_id}/retry"),
    ):
        response = await client.request(method, path)
        assert response.status_code == 404, (method, path, response.text)
        assert error_of(response)["code"] == "not_found"


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"status": "running"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2030-13-01T00:00:00Z"}, "until"),
        ({"limit": 0}, "limit"),
        ({"limit": 100000}, "limit"),
        ({"cursor": "abc"}, "cursor"),
        ({"since": "2030-01-01T00:00:00"}, "since"),
    ],
)
async def test_bad_filters_are_422(
    client: httpx.AsyncClient, params: dict[str, Any], names: str
) -> None:
    response = await client.get("/api/tasks", params=params)
    assert response.status_code == 422
    assert names in error_of(response)["message"]


async def test_oversized_bodies_are_refused_without_reading_them(
    client: httpx.AsyncClient,
) -> None:
    big = b'{"agent": "invoice", "payload": "' + b"x" * (3 << 20) + b'"}'
    declared = await client.post(
        "/api/tasks", content=big, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413 and error_of(declared)["code"] == "too_large"

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(64):
            yield b"x" * (64 << 10)

    streamed = await client.post(
        "/api/tasks", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413


async def test_unknown_routes_and_methods_answer_json(client: httpx.AsyncClient) -> None:
    missing = await client.get("/api/nothing")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    wrong = await client.delete("/api/tasks")
    assert wrong.status_code == 405 and error_of(wrong)["code"] == "method_not_allowed"


async def test_health_and_openapi(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok", "database": "ok"}
    spec = (await client.get("/openapi.json")).json()
    assert "/api/tasks/{task_id}/cancel" in spec["paths"]
    assert (await client.get("/docs")).status_code == 200


async def test_a_token_protects_the_api(settings: Settings) -> None:
    app = App(settings=dataclasses.replace(settings, api_token="s3cret"))
    app.agent("invoice")(_noop)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        refused = await client.get("/api/tasks")
        assert refused.status_code == 401 and error_of(refused)["code"] == "unauthorized"
        assert refused.headers["www-authenticate"] == "Bearer"
        wrong = await client.get("/api/tasks", headers={"authorization": "Bearer guess"})
        assert wrong.status_code == 401
        ok = await client.get("/api/tasks", headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert (await client.get("/healthz")).status_code == 200, "health checks stay open"


async def test_a_task_created_over_http_is_run_by_a_worker(settings: Settings) -> None:
    from conveyor.worker import Worker
    from tests.conftest import wait_for

    app = App(settings=settings)

    @app.agent("upper")
    async def upper(task: Any) -> str:
        return str(task.payload["text"]).upper()

    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        task_id = (
            await client.post("/api/tasks", json={"agent": "upper", "payload": {"text": "hi"}})
        ).json()["id"]
        worker = Worker(app, concurrency=2)
        import asyncio

        run = asyncio.create_task(worker.run())

        async def done() -> Any:
            task = (await client.get(f"/api/tasks/{task_id}")).json()
            return task if task["status"] == "completed" else None

        task = await wait_for(done, what="the worker")
        worker.stop()
        await run
    assert task["result"] == "HI" and task["attempt_history"][0]["status"] == "succeeded"
    assert queue is not None


# Regressions: what the schemathesis run (tests/test_api_fuzz.py) and probing around it
# found answered with a 500. Each must be a 4xx that names the problem.


@pytest.mark.parametrize(
    ("body", "names", "what"),
    [
        ('{"agent": "invoice", "tenant": "a\\u0000b"}', "tenant", "NUL"),
        ('{"agent": "invoice", "idempotency_key": "\\u0000"}', "idempotency_key", "NUL"),
        ('{"agent": "invoice", "labels": {"k": "v\\u0000"}}', "labels", "NUL"),
        ('{"agent": "invoice", "labels": {"k\\u0000": "v"}}', "labels", "NUL"),
        ('{"agent": "invoice", "payload": {"a": [1, "\\u0000"]}}', "payload", "NUL"),
        ('{"agent": "invoice", "payload": {"k\\u0000": 1}}', "payload", "NUL"),
        ('{"agent": "x\\u0000"}', "agent", "NUL"),
        ('{"agent": "invoice", "payload": "\\ud800"}', "payload", "surrogate"),
        ('{"agent": "invoice", "labels": {"\\udfff": "v"}}', "labels", "surrogate"),
        ('{"agent": "invoice", "run_after": "0001-01-01T00:00:00+01:00"}', "run_after", "range"),
        ('{"agent": "invoice", "run_after": "9999-12-31T23:59:59-01:00"}', "run_after", "range"),
        ('{"agent": "invoice", "payload": ' + "[" * 201 + "]" * 201 + "}", "payload", "nested"),
    ],
)
async def test_what_postgresql_cannot_store_or_give_back_is_a_422(
    client: httpx.AsyncClient, body: str, names: str, what: str
) -> None:
    response = await client.post(
        "/api/tasks", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert names in error["message"] and what in error["message"], error


async def test_times_with_any_offset_and_deep_payloads_are_stored_and_read_back(
    client: httpx.AsyncClient,
) -> None:
    # PostgreSQL refuses offsets of 16 hours or more; ISO 8601 allows up to 23:59.
    created = await client.post(
        "/api/tasks", json={"agent": "invoice", "run_after": "2030-05-06T03:08:07-20:49"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["run_after"] == "2030-05-06T23:57:07Z"
    listed = await client.get("/api/tasks", params={"since": "2000-01-01T00:00:00-20:49"})
    assert listed.status_code == 200 and listed.json()["items"], listed.text
    # Nested as deep as the API takes, the payload still serializes in the answer.
    deep: Any = []
    for _ in range(199):
        deep = [deep]
    created = await client.post("/api/tasks", json={"agent": "invoice", "payload": deep})
    assert created.status_code == 201, created.text
    read = await client.get(f"/api/tasks/{created.json()['id']}")
    assert read.status_code == 200 and read.json()["payload"] == deep


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b'{"agent": "invoice", "tenant": "\xff"}', "not UTF-8"),
        (b'{"agent": "invoice", "payload": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested"),
        (b'{"agent": "invoice", "payload": ' + b"9" * 5000 + b"}", "digits"),
        (b'{"agent": "invoice",', "Expecting property name"),
    ],
)
async def test_bodies_json_cannot_read_are_400s_that_say_why(
    client: httpx.AsyncClient, body: bytes, names: str
) -> None:
    response = await client.post(
        "/api/tasks", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "malformed_json" and names in error["message"], error


async def test_a_nul_in_a_filter_is_a_422(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/tasks", params={"agent": "a\x00"})
    assert response.status_code == 422 and "agent" in error_of(response)["message"]


async def test_callbacks_refuse_what_postgresql_cannot_store(settings: Settings) -> None:
    from conveyor.external import attempt_secret, sign

    app = App(settings=settings)
    app.agent("invoice")(_noop)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        await app.enqueue_async("invoice", {})
        db = await app.database()
        async with db.connection() as conn:
            (claimed,) = await queue.claim(conn, worker_id="w", agents=["invoice"], limit=1)
            secret = attempt_secret(
                await queue.callback_key(conn), claimed.attempt_id, claimed.claim_token
            )

        async def post(body: bytes) -> httpx.Response:
            return await client.post(
                f"/api/callbacks/{claimed.attempt_id}",
                content=body,
                headers={"content-type": "application/json", **sign(secret, body)},
            )

        for body, names in [
            (b'{"status": "failed", "error": "a\\u0000"}', "error"),
            (b'{"status": "failed", "trace_id": "\\u0000"}', "trace_id"),
            (b'{"status": "succeeded", "usage": {"model": "\\u0000"}}', "usage.model"),
            (b'{"status": "succeeded", "result": {"k": "\\u0000"}}', "result"),
            (b'{"status": "succeeded", "result": [NaN]}', "result"),
            (b'{"status": "succeeded", "result": Infinity}', "result"),
        ]:
            response = await post(body)
            assert response.status_code == 422, (body, response.text)
            assert names in error_of(response)["message"], body
        done = await post(b'{"status": "succeeded", "result": {"ok": true}}')
        assert done.status_code == 200 and done.json()["task_status"] == "completed"


async def test_the_openapi_document_says_what_the_routes_answer(
    client: httpx.AsyncClient,
) -> None:
    spec = (await client.get("/openapi.json")).json()
    # The callback body was pydantic's schema pasted whole: its "#/$defs/..." references
    # resolved against the document's root, where there are none.
    assert "#/$defs/" not in json.dumps(spec)
    callback = spec["paths"]["/api/callbacks/{attempt_id}"]["post"]
    body = callback["requestBody"]["content"]["application/json"]["schema"]
    assert "input_tokens" in json.dumps(body["properties"]["usage"])
    assert {p["name"] for p in callback["parameters"]} >= {
        "X-Conveyor-Timestamp",
        "X-Conveyor-Signature",
    }
    # An unhealthy /healthz answers its own body with the 503, not an error.
    unhealthy = spec["paths"]["/healthz"]["get"]["responses"]["503"]
    assert unhealthy["content"]["application/json"]["schema"]["$ref"].endswith("/Health")


@pytest.mark.parametrize("path", ["/api/tasks/1%2F", "/api/tasks/a%2Fcancel%2F", "/api/tasks/"])
async def test_a_trailing_slash_is_a_404_not_a_redirect(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
