"""GET /api/metrics (the dashboard's numbers), GET /api/costs (cost attribution, JSON or
CSV) and GET /metrics (Prometheus text exposition).

The numbers come from conveyor/metrics.py, which reads rollups kept by triggers; a request
costs a few small queries at any table size.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import BaseModel, Field

from conveyor import metrics
from conveyor.app import App
from conveyor.metrics import Filters, PrometheusData
from conveyor.states import TaskStatus
from conveyor.web.errors import ApiError
from conveyor.web.models import Text, Timestamp

AgentName = Annotated[Text | None, Query(max_length=100)]
TenantName = Annotated[
    Text | None, Query(max_length=255, description='a tenant; "" for tasks without one')
]


class TaskCounts(BaseModel):
    enqueued: int
    processing: int
    completed: int
    failed: int
    cancelled: int
    total: int


class Tokens(BaseModel):
    input: int
    output: int


class Cost(BaseModel):
    llm_usd: float
    compute_usd: float
    total_usd: float


class ResponseTime(BaseModel):
    p50: float | None = Field(
        description="median created -> finished of finished tasks, in ms (estimated from "
        "log-scale buckets, within a few percent)"
    )


class Confidence(BaseModel):
    mean: float | None
    count: int


class AgentLimits(BaseModel):
    max_concurrent: int | None
    max_tpm: int | None
    max_rpm: int | None


class AgentUsage(BaseModel):
    concurrent: int
    tpm: int
    rpm: int


class AgentThrottling(BaseModel):
    learned_tpm: int | None
    learned_concurrency: int | None
    request_factor: float
    paused_for_seconds: float


class AgentRow(BaseModel):
    agent: str
    in_flight: int
    queued: int
    limits: AgentLimits
    usage: AgentUsage
    throttling: AgentThrottling
    cost_usd: float


class Point(BaseModel):
    t: datetime
    completed: int
    failed: int
    cost_usd: float


class Series(BaseModel):
    bucket: Literal["hour", "day"]
    points: list[Point]


class Range(BaseModel):
    since: datetime | None = Field(description="the since used: rounded down to the hour")
    until: datetime | None = Field(description="the until used: rounded up to the hour")


class MetricsOut(BaseModel):
    tasks: TaskCounts
    tokens: Tokens
    cost: Cost
    response_time_ms: ResponseTime
    confidence: Confidence
    agents: list[AgentRow]
    series: Series
    range: Range
    generated_at: datetime


class CostRow(BaseModel):
    agent: str | None = None
    tenant: str | None = None
    day: str | None = None
    status: str | None = None
    model: str | None = None
    tasks: int
    attempts: int
    input_tokens: int
    output_tokens: int
    llm_usd: float
    compute_usd: float
    total_usd: float
    median_task_usd: float | None


class CostsOut(BaseModel):
    group_by: list[str]
    range: Range
    rows: list[CostRow]
    totals: CostRow


def _filters(
    since: datetime | None,
    until: datetime | None,
    agent: str | None,
    tenant: str | None,
    status: TaskStatus | None,
    model: str | None = None,
    root: int | None = None,
) -> Filters:
    if since is not None and until is not None and since >= until:
        raise ApiError(422, "invalid_request", "since must be before until")
    return Filters(
        since=since,
        until=until,
        agent=agent,
        tenant=tenant,
        status=status.value if status is not None else None,
        model=model,
        root=root,
    )


def router(app: App) -> APIRouter:
    api = APIRouter()

    @api.get("/api/metrics", response_model=MetricsOut, tags=["metrics"])
    async def get_metrics(
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        agent: AgentName = None,
        status: TaskStatus | None = None,
        tenant: TenantName = None,
    ) -> MetricsOut:
        """The dashboard's numbers for tasks created in [since, until) (rounded out to
        whole hours), of one agent, status and tenant if given."""
        filters = _filters(since, until, agent, tenant, status)
        async with app.connection() as conn:
            numbers = await metrics.summary(conn, filters)
        return MetricsOut.model_validate(numbers)

    @api.get(
        "/api/costs",
        response_model=CostsOut,
        tags=["metrics"],
        responses={200: {"content": {"text/csv": {}}}},
    )
    async def get_costs(
        group_by: Annotated[
            str | None,
            Query(
                max_length=100,
                description="comma-separated keys: agent, tenant, day, status, model",
            ),
        ] = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        agent: AgentName = None,
        status: TaskStatus | None = None,
        tenant: TenantName = None,
        model: Annotated[Text | None, Query(max_length=200)] = None,
        root: Annotated[
            int | None,
            Query(
                ge=1,
                le=2**63 - 1,
                description="a task nobody spawned: the costs of its tree (it and all its "
                "descendants) only",
            ),
        ] = None,
        format: Literal["json", "csv"] = "json",
    ) -> Any:
        """What tasks cost (LLM + compute, over all their attempts), grouped and filtered;
        `status` is the task's. Each task is counted once, under its own agent, tenant and
        status: a child's cost is in its own agent's row, never also in its parent's.
        `root` keeps one tree. `format=csv` answers a CSV file with a header row."""
        try:
            keys = metrics.parse_group_by(group_by)
        except ValueError as exc:
            raise ApiError(422, "invalid_request", str(exc)) from None
        filters = _filters(since, until, agent, tenant, status, model, root)
        async with app.connection() as conn:
            try:
                report = await metrics.costs(conn, filters, keys)
            except metrics.NotARoot as exc:
                raise ApiError(422, "invalid_request", str(exc)) from None
        if format == "csv":
            out = io.StringIO()
            csv.writer(out, lineterminator="\n").writerows(metrics.csv_lines(report))
            return Response(
                out.getvalue(),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": 'attachment; filename="conveyor-costs.csv"'},
            )
        return CostsOut.model_validate(report)

    @api.get("/metrics", tags=["operations"], response_class=Response)
    async def prometheus() -> Response:
        """Prometheus text exposition: tasks, attempts, tokens, cost, latency per agent."""
        async with app.connection() as conn:
            data = await metrics.prometheus_data(conn)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Snapshot(data))
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return api


class _Snapshot:
    """A collector over numbers already read: the database is read asynchronously before,
    and prometheus_client only formats them (its collectors are synchronous)."""

    def __init__(self, data: PrometheusData) -> None:
        self.data = data

    def collect(self) -> list[Metric]:
        tasks = GaugeMetricFamily(
            "conveyor_tasks",
            "Tasks by agent and status (finished ones include pruned history)",
            labels=["agent", "status"],
        )
        attempts = CounterMetricFamily(
            "conveyor_attempts", "Attempts started (claims)", labels=["agent"]
        )
        throttled = CounterMetricFamily(
            "conveyor_throttled_attempts", "Attempts the endpoint throttled", labels=["agent"]
        )
        tokens = CounterMetricFamily(
            "conveyor_tokens", "LLM tokens reported by attempts", labels=["agent", "direction"]
        )
        cost = CounterMetricFamily(
            "conveyor_cost_usd", "Cost of attempts in US dollars", labels=["agent", "kind"]
        )
        totals: dict[str, dict[str, float]] = {}
        for row in self.data.by_agent_status:
            tasks.add_metric([row["agent"], row["status"]], float(row["tasks"]))
            acc = totals.setdefault(row["agent"], dict.fromkeys(_COUNTED, 0.0))
            for name in _COUNTED:
                acc[name] += float(row[name] or 0)
        for agent, acc in sorted(totals.items()):
            attempts.add_metric([agent], acc["attempts"])
            throttled.add_metric([agent], acc["throttled"])
            tokens.add_metric([agent, "input"], acc["input_tokens"])
            tokens.add_metric([agent, "output"], acc["output_tokens"])
            cost.add_metric([agent, "llm"], acc["llm_usd"])
            cost.add_metric([agent, "compute"], acc["compute_usd"])
        latency = HistogramMetricFamily(
            "conveyor_task_duration_seconds",
            "Created to finished, of finished tasks (sum estimated from bucket midpoints)",
            labels=["agent"],
        )
        for agent, cumulative in sorted(self.data.latency.items()):
            latency.add_metric(
                [agent],
                [(_le(le), float(n)) for le, n in cumulative],
                self.data.latency_sum_estimate[agent],
            )
        budget = GaugeMetricFamily(
            "conveyor_agent_learned_token_budget",
            "Tokens per window the agent learned from 429s (agents that learned one)",
            labels=["agent"],
        )
        factor = GaugeMetricFamily(
            "conveyor_agent_request_factor",
            "Factor that 429s put on the agent's max_rpm (1: none)",
            labels=["agent"],
        )
        paused = GaugeMetricFamily(
            "conveyor_agent_paused_seconds",
            "Seconds the agent stays paused by an endpoint's Retry-After",
            labels=["agent"],
        )
        for agent, state in sorted(self.data.throttling.items()):
            if state["learned_tpm"] is not None:
                budget.add_metric([agent], float(state["learned_tpm"]))
            factor.add_metric([agent], state["request_factor"])
            paused.add_metric([agent], state["paused_for_seconds"])
        return [tasks, attempts, throttled, tokens, cost, latency, budget, factor, paused]


_COUNTED = ("attempts", "throttled", "input_tokens", "output_tokens", "llm_usd", "compute_usd")


def _le(value: float) -> str:
    return "+Inf" if value == float("inf") else f"{value:.6g}"
