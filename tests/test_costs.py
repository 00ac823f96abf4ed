"""GET /api/costs: grouped and filtered costs from the attempts, CSV export, bad input."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import httpx
import pytest

from conveyor import App
from tests import test_metrics as known
from tests.test_metrics import NOW, known_set

# The known set's fixtures: an App with two agents, and a client of a real server.
app = known.app
client = known.client


async def costs(client: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await client.get("/api/costs", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def by(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in keys): r for r in rows}


async def test_costs_by_agent_and_status_charge_retries_to_their_task(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    await known_set(app, conn)
    body = await costs(client, group_by="agent,status")
    assert body["group_by"] == ["agent", "status"]
    rows = by(body["rows"], "agent", "status")
    assert set(rows) == {
        ("contract", "cancelled"),
        ("contract", "completed"),
        ("contract", "processing"),
        ("invoice", "completed"),
        ("invoice", "enqueued"),
        ("invoice", "failed"),
    }
    failed = rows["invoice", "failed"]  # one task, two attempts: both charged to it
    assert (failed["tasks"], failed["attempts"]) == (1, 2)
    assert (failed["input_tokens"], failed["output_tokens"]) == (100, 10)
    assert failed["llm_usd"] == 0.004 and failed["total_usd"] == 0.004
    assert failed["median_task_usd"] == pytest.approx(0.004, rel=0.26)
    completed = rows["contract", "completed"]
    assert (completed["llm_usd"], completed["compute_usd"], completed["total_usd"]) == (
        0.05,
        0.004,
        0.054,
    )
    assert rows["invoice", "enqueued"]["attempts"] == 0
    assert body["totals"]["tasks"] == 6 and body["totals"]["attempts"] == 5
    assert body["totals"]["total_usd"] == 0.068


async def test_filters_answer_the_usual_questions(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    await known_set(app, conn)
    week = (NOW - timedelta(days=7)).isoformat()
    # "What did failed tasks cost over the last seven days?"
    failed = await costs(client, status="failed", since=week)
    assert failed["totals"]["total_usd"] == 0.004 and failed["totals"]["tasks"] == 1
    assert failed["rows"] == [failed["totals"]]
    # "Median spend per task for agent X this month."
    month = await costs(client, agent="contract", status="completed", since=week)
    assert month["totals"]["median_task_usd"] == pytest.approx(0.054, rel=0.26)
    tenant = await costs(client, tenant="acme", group_by="tenant")
    assert [(r["tenant"], r["tasks"], r["total_usd"]) for r in tenant["rows"]] == [
        ("acme", 3, 0.014)
    ]
    nothing = await costs(client, until=(NOW - timedelta(days=30)).isoformat())
    assert nothing["totals"]["tasks"] == 0 and nothing["totals"]["median_task_usd"] is None


async def test_costs_by_model_and_day_read_the_attempts(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    await known_set(app, conn)
    body = await costs(client, group_by="model,day")
    rows = by(body["rows"], "model")
    day = NOW.date().isoformat()
    if (NOW - timedelta(hours=1)).date() != NOW.date():  # just after midnight UTC
        day = (NOW - timedelta(hours=1)).date().isoformat()
    assert rows["m-small",]["day"] in {day, NOW.date().isoformat()}
    small = rows["m-small",]
    assert (small["tasks"], small["attempts"], small["llm_usd"]) == (2, 3, 0.014)
    assert rows["m-big",]["total_usd"] == 0.054
    only_big = await costs(client, model="m-big")
    assert only_big["totals"]["tasks"] == 1 and only_big["totals"]["total_usd"] == 0.054
    # A model no attempt used: an empty answer with zero totals, not a 500.
    none = await costs(client, model="no-such-model", group_by="model")
    assert none["rows"] == [] and none["totals"]["tasks"] == 0
    assert none["totals"]["total_usd"] == 0


async def test_csv_export_has_a_header_and_a_line_per_group(
    app: App, conn: Any, client: httpx.AsyncClient
) -> None:
    await known_set(app, conn)
    response = await client.get("/api/costs", params={"group_by": "agent", "format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    lines = list(csv.reader(io.StringIO(response.text)))
    assert lines[0] == [
        "agent",
        "tasks",
        "attempts",
        "input_tokens",
        "output_tokens",
        "llm_usd",
        "compute_usd",
        "total_usd",
        "median_task_usd",
    ]
    table = {line[0]: line for line in lines[1:]}
    assert set(table) == {"contract", "invoice"}
    assert table["invoice"][1:3] == ["3", "3"] and float(table["invoice"][7]) == 0.014


@pytest.mark.parametrize(
    "params",
    [
        {"group_by": "agent,colour"},
        {"format": "xml"},
        {"status": "lost"},
        {"since": "2026-13-01T00:00:00Z"},
        {"until": "2026-01-01T00:00:00Z", "since": "2026-02-01T00:00:00Z"},
        {"model": "m" * 201},
    ],
)
async def test_bad_parameters_are_a_422_json_error(
    client: httpx.AsyncClient, params: dict[str, str]
) -> None:
    response = await client.get("/api/costs", params=params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"]
