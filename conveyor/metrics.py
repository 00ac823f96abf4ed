"""Metrics and cost attribution: the dashboard's numbers, cost breakdowns, Prometheus samples.

Plain async functions over a connection, each a few statements of `sql/metrics.sql`. They
read the rollups of finished tasks (migration 0006; the transactions that finish tasks
append their changes as deltas, migration 0014, which the workers fold in: each statement
reads the rollups and the unfolded deltas together, so it is exact whenever it runs) and
the live tasks (enqueued, processing) from the queue's own partial indexes, so that they
cost the same at a thousand tasks and at a million.

Ranges filter tasks by `created_at` and are rounded out to whole hours (the rollups' finest
grain); the range actually used is part of every answer. Medians are estimated from
log-scale histograms with ten buckets per decade (see `median`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, LiteralString

from conveyor import queue
from conveyor.db.pool import Connection
from conveyor.errors import TaskNotFound
from conveyor.sql import query

#: The fragments of sql/metrics.sql: a statement says `{name}` where one goes.
FRAGMENTS = ("cost_groups", "in_span", "created_in_range")  # in order: one holds another


@cache
def statement(name: str) -> LiteralString:
    """The statement `name` of sql/metrics.sql, each fragment it names put in its place
    (the fragments' comment lines stay in the file)."""
    text = query("metrics", name)
    for fragment in FRAGMENTS:
        body = query("metrics", fragment).splitlines()
        text = text.replace("{" + fragment + "}", "\n".join(x for x in body if x[:2] != "--"))
    return text


class _Statements:
    """Attribute access to them: `Q.series`."""

    def __getattr__(self, name: str) -> LiteralString:
        return statement(name)


Q = _Statements()

FINISHED = ("completed", "failed", "cancelled")
LIVE = ("enqueued", "processing")
STATUSES = ("enqueued", "processing", "completed", "failed", "cancelled")
GROUP_KEYS = ("agent", "tenant", "day", "status", "model")
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
#: The longest range whose series is drawn per hour; longer ones are per day.
HOURLY_SERIES_LIMIT = timedelta(days=2)


@dataclass(frozen=True)
class Filters:
    """What the numbers are about; None means no filter. `tenant` "" means no tenant;
    `root` is the id of a task nobody spawned: its tree's tasks only (costs only)."""

    since: datetime | None = None
    until: datetime | None = None
    agent: str | None = None
    tenant: str | None = None
    status: str | None = None
    model: str | None = None
    root: int | None = None


# ---------------------------------------------------------------------------------------
# Ranges


def _floor(t: datetime, step: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + ((t.astimezone(UTC) - epoch) // step) * step


def _ceil(t: datetime, step: timedelta) -> datetime:
    down = _floor(t, step)
    return down if down == t else down + step


@dataclass(frozen=True)
class Span:
    """A range rounded out to whole hours, and how it splits into rollup rows: whole UTC
    days [d0, d1) from the day rows, the hours before d0 and from d1 from the hour rows."""

    h0: datetime | None
    h1: datetime | None
    days: bool
    d0: datetime | None
    d1: datetime | None
    hours_a: tuple[datetime | None, datetime | None]
    hours_b: tuple[datetime | None, datetime | None]

    @classmethod
    def of(cls, since: datetime | None, until: datetime | None) -> Span:
        h0 = _floor(since, HOUR) if since else None
        h1 = _ceil(until, HOUR) if until else None
        d0 = _ceil(h0, DAY) if h0 else None
        d1 = _floor(h1, DAY) if h1 else None
        if d0 is not None and d1 is not None and d0 >= d1:
            # Within one day, or two partial ones: hour rows only.
            return cls(h0, h1, False, None, None, (h0, h1), (None, None))
        return cls(
            h0,
            h1,
            True,
            d0,
            d1,
            (h0, d0) if h0 is not None else (None, None),
            (d1, h1) if h1 is not None else (None, None),
        )

    @classmethod
    def hours_only(cls, h0: datetime, h1: datetime) -> Span:
        return cls(h0, h1, False, None, None, (h0, h1), (None, None))

    def params(self) -> dict[str, Any]:
        return {
            "h0": self.h0,
            "h1": self.h1,
            "days": self.days,
            "d0": self.d0,
            "d1": self.d1,
            "ha0": self.hours_a[0],
            "ha1": self.hours_a[1],
            "hb0": self.hours_b[0],
            "hb1": self.hours_b[1],
        }


def _params(filters: Filters, span: Span, **extra: Any) -> dict[str, Any]:
    return {
        **span.params(),
        "agent": filters.agent,
        "tenant": filters.tenant,
        "status": filters.status,
        "model": filters.model,
        "root": filters.root,
        **extra,
    }


# ---------------------------------------------------------------------------------------
# Medians from log-scale histograms


def bucket_bounds(bucket: int) -> tuple[float, float]:
    """The values bucket `bucket` holds: [0, 1) for 0, else [10^((b-1)/10), 10^(b/10))."""
    if bucket <= 0:
        return 0.0, 1.0
    return 10 ** ((bucket - 1) / 10), 10 ** (bucket / 10)


def median(counts: Mapping[int, int]) -> float | None:
    """The median of the values counted per bucket, interpolated within its bucket
    (geometrically: the buckets are log-scale). With buckets 26 % wide, it is within a few
    percent of the exact median of the same values. None without values."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = total / 2
    seen = 0
    for bucket in sorted(counts):
        n = counts[bucket]
        if n <= 0:
            continue
        if seen + n >= rank:
            low, high = bucket_bounds(bucket)
            share = (rank - seen) / n
            if bucket <= 0:
                return low + (high - low) * share
            return float(low * (high / low) ** share)
        seen += n
    low, high = bucket_bounds(max(counts))
    return high


# ---------------------------------------------------------------------------------------
# The dashboard's summary


def _num(value: Any) -> float:
    return float(value) if value is not None else 0.0


def _usd(value: Any) -> float:
    return round(float(value), 6) if value is not None else 0.0


async def summary(conn: Connection, filters: Filters) -> dict[str, Any]:
    """The numbers of GET /api/metrics (see conveyor/web/metrics.py for the shape)."""
    now = (await (await conn.execute("SELECT now() AS now")).fetchone() or {})["now"]
    span = Span.of(filters.since, filters.until)
    params = _params(filters, span)
    finished = await (await conn.execute(Q.rollups_by_agent_status, params)).fetchall()
    live = await (await conn.execute(Q.live_by_agent_status, params)).fetchall()
    latency_rows = await _histogram(conn, filters, {**params, **_no_groups()}, "latency", [])
    series = await _series(conn, filters, span, now)
    limits = await queue.agent_limits(conn)

    tasks = dict.fromkeys(STATUSES, 0)
    tokens = {"input": 0, "output": 0}
    llm = compute = 0.0
    confidence_sum, confidence_n = 0.0, 0
    per_agent: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"in_flight": 0, "queued": 0, "cost_usd": 0.0}
    )
    for row in [*finished, *live]:
        tasks[row["status"]] += int(row["tasks"])
        tokens["input"] += int(row["input_tokens"])
        tokens["output"] += int(row["output_tokens"])
        llm += _num(row["llm_usd"])
        compute += _num(row["compute_usd"])
        agent = per_agent[row["agent"]]
        agent["cost_usd"] += _num(row["llm_usd"]) + _num(row["compute_usd"])
        if row["status"] == "processing":
            agent["in_flight"] += int(row["tasks"])
        elif row["status"] == "enqueued":
            agent["queued"] += int(row["tasks"])
    for row in finished:
        confidence_sum += _num(row["confidence_sum"])
        confidence_n += int(row["confidence_n"])
    tasks["total"] = sum(tasks[s] for s in STATUSES)

    agents = []
    for lim in limits:
        name = lim["name"]
        if filters.agent is not None and name != filters.agent:
            continue
        seen = per_agent.get(name, {"in_flight": 0, "queued": 0, "cost_usd": 0.0})
        agents.append(
            {
                "agent": name,
                "in_flight": seen["in_flight"],
                "queued": seen["queued"],
                "limits": {
                    "max_concurrent": lim["max_concurrent"],
                    "max_tpm": lim["max_tpm"],
                    "max_rpm": lim["max_rpm"],
                },
                "usage": {
                    "concurrent": int(lim["running"]),
                    "tpm": int(lim["tokens"]),
                    "rpm": int(lim["requests"]),
                },
                "throttling": throttling(lim),
                "cost_usd": _usd(seen["cost_usd"]),
            }
        )

    return {
        "tasks": tasks,
        "tokens": tokens,
        "cost": {
            "llm_usd": _usd(llm),
            "compute_usd": _usd(compute),
            "total_usd": _usd(llm + compute),
        },
        "response_time_ms": {"p50": _round(median(_buckets(latency_rows)))},
        "confidence": {
            "mean": confidence_sum / confidence_n if confidence_n else None,
            "count": confidence_n,
        },
        "agents": agents,
        "series": series,
        "range": {"since": span.h0, "until": span.h1},
        "generated_at": now,
    }


def throttling(limits: Mapping[str, Any]) -> dict[str, Any]:
    """What 429s taught an agent (a row of queue.agent_limits): its learned token budget and
    concurrency cap (None: nothing learned), the factor on its max_rpm, and how long it
    stays paused by a Retry-After."""
    paused = limits["paused_for"]
    return {
        "learned_tpm": limits["learned_tpm"],
        "learned_concurrency": limits["learned_concurrency"],
        "request_factor": round(float(limits["throttle_factor"]), 3),
        "paused_for_seconds": round(max(0.0, float(paused)), 3) if paused is not None else 0.0,
    }


def _round(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None


def _buckets(rows: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for row in rows:
        counts[int(row["bucket"])] += int(row["tasks"])
    return counts


async def _histogram(
    conn: Connection,
    filters: Filters,
    params: dict[str, Any],
    kind: str,
    group_by: Sequence[str],
) -> list[Any]:
    """A histogram's buckets: from the per-agent histograms when neither tenant nor status
    filters or groups the request (the dashboard's usual questions), else the full ones."""
    coarse = (
        filters.tenant is None
        and filters.status is None
        and not {"tenant", "status"} & set(group_by)
    )
    query = Q.histogram_by_agent if coarse else Q.histogram
    return await (await conn.execute(query, {**params, "kind": kind})).fetchall()


def _no_groups() -> dict[str, bool]:
    return {f"by_{key}": False for key in GROUP_KEYS}


async def _series(conn: Connection, filters: Filters, span: Span, now: datetime) -> dict[str, Any]:
    """Throughput and cost over time: per hour for ranges of two days or less (an open end
    is now), else per day."""
    end = span.h1 if span.h1 is not None else _ceil(now, HOUR)
    hourly = span.h0 is not None and end - span.h0 <= HOURLY_SERIES_LIMIT
    if hourly:
        assert span.h0 is not None
        span = Span.hours_only(span.h0, max(end, span.h0 + HOUR))
    unit = "hour" if hourly else "day"
    rows = await (await conn.execute(Q.series, _params(filters, span, unit=unit))).fetchall()
    return {
        "bucket": unit,
        "points": [
            {
                "t": r["t"],
                "completed": int(r["completed"]),
                "failed": int(r["failed"]),
                "cost_usd": _usd(r["cost_usd"]),
            }
            for r in rows
        ],
    }


# ---------------------------------------------------------------------------------------
# Costs


def parse_group_by(text: str | None) -> list[str]:
    """'agent,day' -> ['agent', 'day']; raises ValueError naming an unknown key."""
    if not text:
        return []
    keys: list[str] = []
    for part in text.split(","):
        key = part.strip()
        if key not in GROUP_KEYS:
            raise ValueError(f"group_by: unknown key {key!r}; choose from {', '.join(GROUP_KEYS)}")
        if key not in keys:
            keys.append(key)
    return keys


class NotARoot(ValueError):
    """A tree's costs were asked of a task that is a child in another tree."""


async def costs(conn: Connection, filters: Filters, group_by: Sequence[str]) -> dict[str, Any]:
    """Cost per group of tasks, from the attempts (LLM + compute), so retries are charged
    to the task that caused them; `status` is the task's. Grouping or filtering by model,
    or one tree (`root`), reads the attempt rows (the rollups have neither models nor
    trees); everything else reads the rollups. Every task's cost is its own attempts',
    counted once, in its own groups: a child's under its own agent, not its parent's.
    Raises TaskNotFound for a root that is no task, NotARoot for one that is a child."""
    span = Span.of(filters.since, filters.until)
    groups = {f"by_{key}": key in group_by for key in GROUP_KEYS}
    params = _params(filters, span, **groups)
    if filters.root is not None:
        await _check_root(conn, filters.root)
        rows, totals = await _costs_from_rows(conn, params, group_by, Q.costs_of_tree)
    elif "model" in group_by or filters.model is not None:
        rows, totals = await _costs_from_rows(conn, params, group_by, Q.costs_by_model)
    else:
        rows, totals = await _costs_from_rollups(conn, params, group_by)
    return {
        "group_by": list(group_by),
        "range": {"since": span.h0, "until": span.h1},
        "rows": rows,
        "totals": totals,
    }


def _key(row: Mapping[str, Any], group_by: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_key_value(k, row[k]) for k in group_by)


def _key_value(key: str, value: Any) -> Any:
    if key == "day" and isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat()
    return value


def _money_row(
    keys: dict[str, Any], acc: Mapping[str, Any], median_usd: float | None
) -> dict[str, Any]:
    # Sums over no rows are NULL in SQL (a filter that matches nothing): they count as 0.
    llm, compute = _num(acc["llm_usd"]), _num(acc["compute_usd"])
    return {
        **keys,
        "tasks": int(acc["tasks"] or 0),
        "attempts": int(acc["attempts"] or 0),
        "input_tokens": int(acc["input_tokens"] or 0),
        "output_tokens": int(acc["output_tokens"] or 0),
        "llm_usd": _usd(llm),
        "compute_usd": _usd(compute),
        "total_usd": _usd(llm + compute),
        "median_task_usd": _usd(median_usd) if median_usd is not None else None,
    }


_SUMMED = ("tasks", "attempts", "input_tokens", "output_tokens", "llm_usd", "compute_usd")


async def _costs_from_rollups(
    conn: Connection, params: dict[str, Any], group_by: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    filters = Filters(tenant=params["tenant"], status=params["status"])
    finished = await (await conn.execute(Q.costs_rollups, params)).fetchall()
    live = await (await conn.execute(Q.costs_live, params)).fetchall()
    grouped = await _histogram(conn, filters, params, "cost", group_by)
    overall = await _histogram(conn, filters, {**params, **_no_groups()}, "cost", [])

    acc: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in [*finished, *live]:
        key = _key(row, group_by)
        into = acc.setdefault(key, dict.fromkeys(_SUMMED, Decimal(0)))
        for name in _SUMMED:
            into[name] += row[name] or 0
    hist: dict[tuple[Any, ...], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for row in grouped:
        hist[_key(row, group_by)][int(row["bucket"])] += int(row["tasks"])
    rows = []
    for key in sorted(acc, key=_sort_key):
        m = median(hist[key]) if key in hist else None
        rows.append(
            _money_row(
                dict(zip(group_by, key, strict=True)), acc[key], m / 1e6 if m is not None else None
            )
        )
    total = dict.fromkeys(_SUMMED, Decimal(0))
    for into in acc.values():
        for name in _SUMMED:
            total[name] += into[name]
    m = median(_buckets(overall))
    return rows, _money_row({}, total, m / 1e6 if m is not None else None)


async def _check_root(conn: Connection, task_id: int) -> None:
    row = await (await conn.execute(Q.tree_root, {"id": task_id})).fetchone()
    if row is None:
        raise TaskNotFound(task_id)
    if row["root_id"] is not None:
        raise NotARoot(
            f"root: task {task_id} is a child in the tree of task {row['root_id']}; "
            f"ask root={row['root_id']} for the whole tree"
        )


async def _costs_from_rows(
    conn: Connection, params: dict[str, Any], group_by: Sequence[str], statement: LiteralString
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async with conn.transaction():
        # A large plan would be JIT-compiled first, which costs more than it saves here.
        await conn.execute("SET LOCAL jit = off")
        result = await (await conn.execute(statement, params)).fetchall()
    rows, totals = [], None
    for row in sorted(result, key=lambda r: _sort_key(_key(r, group_by))):
        if row["is_total"]:
            totals = _money_row({}, row, _num(row["median_task_usd"]))
        else:
            keys = dict(zip(group_by, _key(row, group_by), strict=True))
            rows.append(_money_row(keys, row, _num(row["median_task_usd"])))
    if totals is None:  # no attempts at all: the grouping set () still answers one row
        totals = _money_row({}, dict.fromkeys(_SUMMED, 0), None)
    if not group_by:
        rows = [dict(totals)]
    return rows, totals


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    # None sorts first, and values of one key always have one type.
    return tuple((v is not None, v if v is not None else "") for v in key)


COST_COLUMNS = (
    "tasks",
    "attempts",
    "input_tokens",
    "output_tokens",
    "llm_usd",
    "compute_usd",
    "total_usd",
    "median_task_usd",
)


def csv_lines(report: Mapping[str, Any]) -> Iterable[list[str]]:
    """The rows of a costs report for CSV: a header, then one line per group."""
    columns = [*report["group_by"], *COST_COLUMNS]
    yield columns
    for row in report["rows"]:
        yield ["" if row.get(c) is None else str(row[c]) for c in columns]


# ---------------------------------------------------------------------------------------
# The usage of listed tasks and of their trees


def _usage(tokens_in: Any, tokens_out: Any, llm: Any, compute: Any) -> dict[str, Any]:
    return {
        "input_tokens": int(tokens_in),
        "output_tokens": int(tokens_out),
        "llm_usd": _usd(llm),
        "compute_usd": _usd(compute),
        "total_usd": _usd(_num(llm) + _num(compute)),
    }


async def task_usage(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """For each task of `ids` (a page of a listing): its parent and root, its children's
    progress (None without children), the usage and cost of its own attempts (`cost`) and
    of its tree (`tree_cost`: its own and all its descendants'; the same as `cost` for a
    task without children). Tasks that are no more are left out."""
    if not ids:
        return {}
    async with conn.transaction():
        # The walk's estimate is large enough for JIT, whose compiling took 0.5 s of a
        # statement that runs in 2 ms (benchmarks/bench_tree_costs.py).
        await conn.execute("SET LOCAL jit = off")
        rows = await (await conn.execute(Q.tasks_usage, {"ids": list(ids)})).fetchall()
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        own = (r["input_tokens"], r["output_tokens"], r["llm_usd"], r["compute_usd"])
        below = (
            r["below_input_tokens"],
            r["below_output_tokens"],
            r["below_llm_usd"],
            r["below_compute_usd"],
        )
        out[r["id"]] = {
            "parent_id": r["parent_id"],
            "root_id": r["root_id"],
            "children": {k: r[k] for k in ("total", "done", "failed", "running", "queued")}
            if r["total"]
            else None,
            "cost": _usage(*own),
            "tree_cost": _usage(*(a + b for a, b in zip(own, below, strict=True))),
        }
    return out


# ---------------------------------------------------------------------------------------
# Prometheus


#: Upper bounds (seconds) of the latency histogram's Prometheus buckets; each is an edge of
#: the rollups' log-scale buckets (10^(b/10) ms for b a multiple of 5), so counts are exact.
LATENCY_LE_SECONDS = tuple(10 ** (b / 10) / 1000 for b in range(20, 75, 5))


@dataclass(frozen=True)
class PrometheusData:
    by_agent_status: list[dict[str, Any]]
    latency: dict[str, list[tuple[float, int]]]  # agent -> cumulative (le, count), +Inf last
    latency_sum_estimate: dict[str, float]
    throttling: dict[str, dict[str, Any]]  # agent -> throttling(), for every agent


async def prometheus_data(conn: Connection) -> PrometheusData:
    """Everything /metrics exposes: the day rollups (all history) and the live tasks."""
    finished = await (await conn.execute(Q.prometheus_rollups)).fetchall()
    live = await (
        await conn.execute(Q.live_by_agent_status, _params(Filters(), Span.of(None, None)))
    ).fetchall()
    latency_rows = await (await conn.execute(Q.prometheus_latency)).fetchall()
    by_agent: dict[str, dict[int, int]] = defaultdict(dict)
    for row in latency_rows:
        by_agent[row["agent"]][int(row["bucket"])] = int(row["tasks"])
    latency: dict[str, list[tuple[float, int]]] = {}
    sums: dict[str, float] = {}
    for agent, counts in by_agent.items():
        cumulative = []
        for le in LATENCY_LE_SECONDS:
            # Bucket b holds values below 10^(b/10) ms; le = 10^(B/10) ms takes b <= B.
            edge = round(10 * math.log10(le * 1000))
            cumulative.append((le, sum(n for b, n in counts.items() if b <= edge)))
        cumulative.append((math.inf, sum(counts.values())))
        latency[agent] = cumulative
        # The sum of observations is not kept; each bucket's geometric midpoint stands in.
        sums[agent] = sum(n * _midpoint(b) / 1000 for b, n in counts.items())
    return PrometheusData(
        by_agent_status=[dict(r) for r in [*finished, *live]],
        latency=latency,
        latency_sum_estimate=sums,
        throttling={r["name"]: throttling(r) for r in await queue.agent_limits(conn)},
    )


def _midpoint(bucket: int) -> float:
    low, high = bucket_bounds(bucket)
    return (low + high) / 2 if bucket <= 0 else math.sqrt(low * high)


# ---------------------------------------------------------------------------------------
# `conveyor status`


async def overview(conn: Connection) -> dict[str, Any]:
    """Per agent: tasks by status (all history), limits and their use, and today's cost
    (of the tasks created since 00:00 UTC)."""
    now = (await (await conn.execute("SELECT now() AS now")).fetchone() or {})["now"]
    everything = _params(Filters(), Span.of(None, None))
    today = _params(Filters(), Span.of(_floor(now, DAY), None))
    rows = [
        *await (await conn.execute(Q.rollups_by_agent_status, everything)).fetchall(),
        *await (await conn.execute(Q.live_by_agent_status, everything)).fetchall(),
    ]
    today_rows = [
        *await (await conn.execute(Q.rollups_by_agent_status, today)).fetchall(),
        *await (await conn.execute(Q.live_by_agent_status, today)).fetchall(),
    ]
    limits = {r["name"]: r for r in await queue.agent_limits(conn)}
    agents: dict[str, dict[str, Any]] = {}
    for name in sorted({*limits, *(r["agent"] for r in rows)}):
        lim = limits.get(name)
        agents[name] = {
            "agent": name,
            "tasks": dict.fromkeys(STATUSES, 0),
            "limits": {
                "max_concurrent": lim["max_concurrent"] if lim else None,
                "max_tpm": lim["max_tpm"] if lim else None,
                "max_rpm": lim["max_rpm"] if lim else None,
            },
            "usage": {
                "concurrent": int(lim["running"]) if lim else 0,
                "tpm": int(lim["tokens"]) if lim else 0,
                "rpm": int(lim["requests"]) if lim else 0,
            },
            "cost_today_usd": 0.0,
        }
    for row in rows:
        agents[row["agent"]]["tasks"][row["status"]] += int(row["tasks"])
    llm = compute = 0.0
    for row in today_rows:
        spent = _num(row["llm_usd"]) + _num(row["compute_usd"])
        agents[row["agent"]]["cost_today_usd"] += spent
        llm += _num(row["llm_usd"])
        compute += _num(row["compute_usd"])
    for agent in agents.values():
        agent["cost_today_usd"] = _usd(agent["cost_today_usd"])
    return {
        "agents": list(agents.values()),
        "cost_today": {
            "since": _floor(now, DAY),
            "llm_usd": _usd(llm),
            "compute_usd": _usd(compute),
            "total_usd": _usd(llm + compute),
        },
        "generated_at": now,
    }
