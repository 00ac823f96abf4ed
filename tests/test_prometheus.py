"""GET /metrics: Prometheus text that its own parser reads, with the expected samples."""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from conveyor import App, queue
from tests import test_metrics as known
from tests.test_metrics import known_set

# The known set's fixtures: an App with two agents, and a client of a real server.
app = known.app
client = known.client


async def scrape(client: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


async def test_samples_of_a_known_set(app: App, conn: Any, client: httpx.AsyncClient) -> None:
    await known_set(app, conn)
    samples = await scrape(client)

    def get(name: str, **labels: str) -> float:
        return samples[name, tuple(sorted(labels.items()))]

    assert get("conveyor_tasks", agent="invoice", status="completed") == 1
    assert get("conveyor_tasks", agent="invoice", status="failed") == 1
    assert get("conveyor_tasks", agent="invoice", status="enqueued") == 1
    assert get("conveyor_tasks", agent="contract", status="processing") == 1
    assert get("conveyor_attempts_total", agent="invoice") == 3
    assert get("conveyor_attempts_total", agent="contract") == 2  # one finished, one running
    assert get("conveyor_throttled_attempts_total", agent="invoice") == 0
    assert get("conveyor_tokens_total", agent="invoice", direction="input") == 200
    assert get("conveyor_tokens_total", agent="contract", direction="output") == 40
    assert get("conveyor_cost_usd_total", agent="contract", kind="compute") == 0.004
    # Latency: contract has two finished tasks (4 s completed, 8 s cancelled).
    assert get("conveyor_task_duration_seconds_count", agent="contract") == 2
    assert get("conveyor_task_duration_seconds_bucket", agent="contract", le="3.16228") == 0
    assert get("conveyor_task_duration_seconds_bucket", agent="contract", le="10") == 2
    assert get("conveyor_task_duration_seconds_bucket", agent="contract", le="+Inf") == 2
    assert get("conveyor_task_duration_seconds_bucket", agent="invoice", le="1") == 0
    assert get("conveyor_task_duration_seconds_bucket", agent="invoice", le="3.16228") == 2


async def test_counters_survive_prune_and_retry(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    ids = await known_set(app, conn)
    before = await scrape(client)
    await app.retry_async(ids["t2"])  # failed -> enqueued: its attempts stay counted
    await conn.execute(
        "UPDATE tasks SET finished_at = finished_at - interval '40 days'"
        " WHERE status IN ('completed', 'cancelled')"
    )
    await conn.execute(
        "DELETE FROM task_attempts WHERE task_id IN"
        " (SELECT id FROM tasks WHERE status IN ('completed', 'cancelled'))"
    )
    after = await scrape(client)
    for name in ("conveyor_attempts_total", "conveyor_tokens_total", "conveyor_cost_usd_total"):
        assert {k: v for k, v in after.items() if k[0] == name} == {
            k: v for k, v in before.items() if k[0] == name
        }, name


async def test_what_429s_taught_an_agent_is_exposed(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    await known_set(app, conn)
    before = await scrape(client)
    assert ("conveyor_agent_learned_token_budget", (("agent", "invoice"),)) not in before
    assert before["conveyor_agent_request_factor", (("agent", "invoice"),)] == 1.0

    (window,) = [r["tokens"] for r in await queue.agent_limits(conn) if r["name"] == "invoice"]
    await queue.report_throttled(conn, {"invoice": 20.0})
    after = await scrape(client)
    learned = round(0.9 * window)  # 90 % of what its window held
    assert after["conveyor_agent_learned_token_budget", (("agent", "invoice"),)] == learned
    assert after["conveyor_agent_request_factor", (("agent", "invoice"),)] == 0.5
    assert 19 < after["conveyor_agent_paused_seconds", (("agent", "invoice"),)] <= 20
    response = await client.get("/api/metrics")
    (invoice,) = [a for a in response.json()["agents"] if a["agent"] == "invoice"]
    assert invoice["throttling"]["learned_tpm"] == learned
    assert invoice["throttling"]["request_factor"] == 0.5
    assert 19 < invoice["throttling"]["paused_for_seconds"] <= 20
