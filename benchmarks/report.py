"""The benchmark's report: the machine it ran on, and its medians as markdown tables."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import graphile
import psycopg
import timing

if TYPE_CHECKING:
    from bench_queue import Results

PACKAGES = ("conveyor", "procrastinate", "pgqueuer", "psycopg", "asyncpg", "uvloop")
SERVER_SETTINGS = (
    "shared_buffers",
    "fsync",
    "synchronous_commit",
    "wal_level",
    "autovacuum",
    "max_connections",
)


def machine(server: str) -> dict[str, str]:
    """What a reader needs to place the numbers: cores, versions, server settings, date."""
    with psycopg.connect(f"{server.rstrip('/')}/postgres") as conn:
        version = conn.execute("SHOW server_version").fetchone()
        settings = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s) ORDER BY name",
            (list(SERVER_SETTINGS),),
        ).fetchall()
    facts = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "nproc": str(len(os.sched_getaffinity(0))),
        "python": platform.python_version(),
        "postgresql": version[0] if version else "?",
        "server settings": ", ".join(f"{n}={s}{u or ''}" for n, s, u in settings),
    }
    for package in PACKAGES:
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    facts["graphile-worker"] = graphile.VERSION
    facts["node"] = _node_version()
    facts["conveyor source"] = _source_state()
    return facts


def _node_version() -> str:
    try:
        done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return "not installed"
    return done.stdout.strip() or "?"


def _source_state() -> str:
    """The commit the conveyor package was measured at, and whether it had local edits
    (the package is installed editable, so the working tree is what ran)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        edits = subprocess.run(
            ["git", "status", "--porcelain", "conveyor"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{commit}{' with uncommitted edits in conveyor/' if edits else ''}"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


# ---------------------------------------------------------------------------------------
# The main table


@dataclass(frozen=True)
class Row:
    metric: str
    label: str
    higher_is_better: bool
    target: str = ""
    # (Conveyor's median, its ratio to the best peer) -> whether the target is met
    meets: Callable[[float, float], bool] | None = None


# The targets of issue #16, as ratios to the best peer of the same repeat.
ROWS = (
    Row("bulk_enqueue", "Bulk enqueue, batches of 10,000 (tasks/s)", True,
        "≥ 2x best peer", lambda _, ratio: ratio >= 2),
    Row("single_enqueue", "Single enqueue, one call at a time (tasks/s)", True,
        "≥ 1.2x best peer", lambda _, ratio: ratio >= 1.2),
    Row("drain_1x1", "Drain, 1 process x concurrency 1 (tasks/s)", True,
        "≥ 1x best peer", lambda _, ratio: ratio >= 1),
    Row("drain_1x16", "Drain, 1 process x concurrency 16 (tasks/s)", True,
        "≥ 1x best peer", lambda _, ratio: ratio >= 1),
    Row("drain_2x16", "Drain, 2 processes x concurrency 16 (tasks/s)", True,
        "≥ 1x best peer", lambda _, ratio: ratio >= 1),
    Row("latency_p50", "Enqueue → start p50, idle worker (ms)", False,
        "< 2 ms and < 1x best peer", lambda c, ratio: c < 2 and ratio < 1),
    Row("latency_p99", "Enqueue → start p99, idle worker (ms)", False,
        "< 1x best peer", lambda _, ratio: ratio < 1),
)  # fmt: skip


def libraries(results: Results) -> list[str]:
    """Conveyor, then the peers in the order they ran."""
    seen = {lib: None for by_lib in results.samples.values() for lib in by_lib}
    return ["conveyor", *(lib for lib in seen if lib not in ("conveyor", "server"))]


def measured_rows(results: Results) -> list[Row]:
    return [row for row in ROWS if row.metric in results.samples]


def _number(value: float, metric: str) -> str:
    if metric.startswith("latency"):
        return f"{value:.1f}"
    return f"{value:,.0f}"


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    return {library: statistics.median(values) for library, values in samples.items()}


def paired_ratio(
    samples: dict[str, list[float]], higher_is_better: bool, peers: list[str] | None = None
) -> float:
    """Conveyor against the best peer of the same repeat, then the median over repeats.

    The libraries of one repeat ran seconds apart, the repeats minutes apart, so pairing
    within a repeat cancels most of the machine's drift.
    """
    pick = max if higher_is_better else min
    among = peers or [lib for lib in samples if lib != "conveyor"]
    ratios = [
        conveyor / pick(samples[peer][n] for peer in among)
        for n, conveyor in enumerate(samples["conveyor"])
    ]
    return statistics.median(ratios)


def _header(first: str, columns: list[str], tail: list[str]) -> list[str]:
    """A table's head: text first, the columns of numbers, then (main table) the ratio,
    the target and whether it was met."""
    cells = [first, *columns, *tail]
    aligns = ["---", *(["---:"] * len(columns)), *["---:", "---", ":---:"][: len(tail)]]
    return [f"| {' | '.join(cells)} |", f"| {' | '.join(aligns)} |"]


def main_table(results: Results) -> list[str]:
    libs = libraries(results)
    lines = _header("measure", libs, ["Conveyor ÷ best peer", "target", "met"])
    for row in measured_rows(results):
        samples = results.samples[row.metric]
        mid = medians(samples)
        ratio = paired_ratio(samples, row.higher_is_better)
        met = ""
        if row.meets is not None:
            met = "yes" if row.meets(mid["conveyor"], ratio) else "**no**"
        cells = [_number(mid[lib], row.metric) for lib in libs]
        lines.append(f"| {row.label} | {' | '.join(cells)} | {ratio:.2f}x | {row.target} | {met} |")
    return lines


def per_peer_table(results: Results) -> list[str]:
    """Conveyor over each peer alone, paired by repeat (median of the per-repeat ratios)."""
    peers = libraries(results)[1:]
    lines = _header("Conveyor ÷", peers, [])
    for row in measured_rows(results):
        samples = results.samples[row.metric]
        cells = [f"{paired_ratio(samples, row.higher_is_better, [p]):.2f}x" for p in peers]
        lines.append(f"| {row.label} | {' | '.join(cells)} |")
    return lines


def spread_table(results: Results) -> list[str]:
    """Lowest and highest repeat of each median, to show how much the machine moved."""
    libs = libraries(results)
    lines = _header("measure", libs, [])
    for row in measured_rows(results):
        samples = results.samples[row.metric]
        cells = [
            f"{_number(min(samples[lib]), row.metric)}-{_number(max(samples[lib]), row.metric)}"
            for lib in libs
        ]
        lines.append(f"| {row.label} | {' | '.join(cells)} |")
    return lines


def ceiling_table(results: Results) -> list[str]:
    mid = {metric: statistics.median(results.samples[metric]["server"]) for metric in
           ("pgbench_c2", "pgbench_c8")}  # fmt: skip
    drains = results.samples.get("drain_2x16")
    best_drain = max(medians(drains).values()) if drains else float("nan")
    return [
        "| pgbench, one-row UPDATE per transaction | 2 clients | 8 clients |",
        "| --- | ---: | ---: |",
        f"| transactions/s | {mid['pgbench_c2']:,.0f} | {mid['pgbench_c8']:,.0f} |",
        "",
        f"The best 2 x 16 drain above ({best_drain:,.0f} tasks/s) is "
        f"{best_drain / mid['pgbench_c2']:.2f}x the 2-client ceiling.",
    ]


def claim_table(results: Results) -> list[str]:
    lines = [
        "| tasks waiting | median µs per claim of 16 (client, with commit) | p90 µs "
        "| ÷ smallest depth | server execution ms (EXPLAIN ANALYZE) | shared buffers touched |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = statistics.median(results.claim_us[min(results.claim_us)])
    for depth, micros in sorted(results.claim_us.items()):
        mid = statistics.median(micros)
        p90 = timing.percentile(micros, 90)
        server = results.claim_server[depth]
        execution = statistics.median(c.execution_ms for c in server)
        buffers = statistics.median(c.buffers for c in server)
        lines.append(
            f"| {depth:,} | {mid:,.0f} | {p90:,.0f} | {mid / base:.2f} "
            f"| {execution:.2f} | {buffers:,.0f} |"
        )
    return lines


def dead_entries_table(results: Results) -> list[str]:
    lines = [
        f"| at {max(results.claim_us):,} waiting | server execution ms | shared buffers touched |",
        "| --- | ---: | ---: |",
    ]
    for label, cost in results.claim_dead.items():
        lines.append(f"| {label} | {cost.execution_ms:.2f} | {cost.buffers:,} |")
    return lines


def claim_section(results: Results) -> list[str]:
    if not results.claim_us:
        return []
    return [
        "### Conveyor's claim cost against queue depth",
        "",
        *claim_table(results),
        "",
        "The same claim after many tasks left the queue since the last VACUUM (their dead",
        "entries stay at the head of the dequeue index until a VACUUM):",
        "",
        *dead_entries_table(results),
        "",
        f"One claim at {max(results.claim_us):,} waiting tasks, EXPLAIN (ANALYZE, BUFFERS):",
        "",
        "```",
        results.claim_plan,
        "```",
        "",
    ]


def config_lines(results: Results) -> list[str]:
    lines = []
    for library, by_config in results.configs.items():
        described = "; ".join(f"{config}: {text}" for config, text in by_config.items())
        lines.append(f"- {library}: {described}")
    return lines


def markdown(results: Results) -> str:
    facts = results.machine
    plan = results.plan
    out = [
        f"## Queue benchmark, {facts['date']}",
        "",
        f"{facts['nproc']} cores ({facts['cpu']}), Python {facts['python']}, "
        f"PostgreSQL {facts['postgresql']} ({facts['server settings']}).",
        "Packages: " + ", ".join(f"{p} {facts[p]}" for p in PACKAGES) + "; graphile-worker "
        f"{facts.get('graphile-worker', '-')} on Node.js {facts.get('node', '-')}.",
        f"Conveyor source: {facts['conveyor source']}.",
        f"Medians of {plan.repeats} interleaved repeat(s); the ratio column is the median of "
        "the per-repeat ratios (Conveyor over the best peer of the same repeat: the faster "
        "for rates, the quicker for latencies, so above 1 is better for rates and below 1 "
        f"for latencies). The run took {results.seconds / 60:.1f} min.",
        "",
        *main_table(results),
        "",
        "Conveyor against each peer alone (median of the per-repeat ratios):",
        "",
        *per_peer_table(results),
        "",
        "Spread (lowest-highest repeat):",
        "",
        *spread_table(results),
        "",
        "### The server's ceiling",
        "",
        *ceiling_table(results),
        "",
        *claim_section(results),
        "### Worker configurations",
        "",
        *config_lines(results),
    ]
    return "\n".join(out)
