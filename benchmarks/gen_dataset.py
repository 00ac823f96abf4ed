"""Fill a database with a realistic history: a million tasks and 1.3 million attempts.

    python benchmarks/gen_dataset.py postgresql://postgres@127.0.0.1:5432/conveyor_1m
    python benchmarks/gen_dataset.py URL --tasks 100000 --seed 7       # smaller
    python benchmarks/gen_dataset.py URL --rebuild    # triggers off, then one rebuild

Five agents and eight tenants (one in ten tasks has none) over the last 90 days, busier in
working hours; priorities; 90 % completed (with a confidence for the document agents), 6 %
failed, 4 % cancelled, and a live tail of enqueued and processing tasks. Attempts: most
tasks take one, some are retried after a failure, a throttled attempt or a lost lease;
each attempt has its model, tokens, LLM cost (from per-model prices) and compute cost (its
wall time at 0.05 USD/hour).

Rows go in by COPY, in chunks, oldest first (ids follow created_at, as they do in a real
queue). By default the rollup triggers maintain the rollups as the rows arrive, exactly as
they would for the real queue; with --rebuild the triggers are skipped
(session_replication_role = replica, which also skips the NOTIFYs) and
conveyor_rebuild_rollups() computes them once at the end. The database must be migrated
(`conveyor migrate`) or empty (it is migrated here); existing tasks are kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg

from conveyor.db.migrate import migrate

AGENTS = {  # name: (share, model, median input tokens, median seconds per attempt)
    "invoice": (0.40, "gpt-4o-mini", 1800, 6.0),
    "receipt": (0.20, "gpt-4o-mini", 900, 3.0),
    "contract": (0.20, "gpt-4o", 9000, 25.0),
    "filing": (0.10, "claude-3-5-sonnet", 14000, 40.0),
    "summary": (0.10, "gpt-4o", 4000, 12.0),
}
DOCUMENT_AGENTS = {"invoice", "receipt", "contract", "filing"}
PRICES = {  # model: (USD per input token, USD per output token)
    "gpt-4o-mini": (0.15e-6, 0.60e-6),
    "gpt-4o": (2.50e-6, 10.0e-6),
    "claude-3-5-sonnet": (3.0e-6, 15.0e-6),
}
TENANTS = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"]
COMPUTE_USD_PER_HOUR = 0.05
DAYS = 90
CHUNK = 100_000
LIVE_ENQUEUED = 2_500  # the youngest tasks: a backlog
LIVE_PROCESSING = 48

TASK_COLUMNS = (
    "id, agent, status, priority, payload, result, error, attempts, free_attempts, "
    "max_attempts, run_after, lease_expires_at, locked_by, tenant, created_at, started_at, "
    "finished_at"
)
ATTEMPT_COLUMNS = (
    "task_id, attempt, agent, worker_id, status, started_at, finished_at, model, "
    "input_tokens, output_tokens, llm_cost_usd, compute_cost_usd, error, reserved_tokens"
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def opt(value: object) -> str:
    return "\\N" if value is None else str(value)


def copy_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


@dataclass
class Rows:
    tasks: list[str]
    attempts: list[str]


class Generator:
    def __init__(self, n: int, seed: int, first_id: int, now: datetime) -> None:
        self.n = n
        self.rng = random.Random(seed)
        self.first_id = first_id
        self.now = now.timestamp()
        self.start = self.now - DAYS * 86400
        names = list(AGENTS)
        self.agents = names
        self.agent_weights = [AGENTS[a][0] for a in names]
        self.tenant_weights = [1 / (i + 1) for i in range(len(TENANTS))]
        self.times = self._creation_times()

    def _creation_times(self) -> list[float]:
        """n times over DAYS days, sorted, denser in working hours (UTC 7-19)."""
        rng = self.rng
        times = []
        while len(times) < self.n:
            t = rng.uniform(self.start, self.now - 60)
            hour = (t % 86400) / 3600
            if rng.random() < (1.0 if 7 <= hour < 19 else 0.35):
                times.append(t)
        times.sort()
        return times

    def chunk(self, lo: int, hi: int) -> Rows:
        tasks, attempts = [], []
        for i in range(lo, hi):
            self._task(i, tasks, attempts)
        return Rows(tasks, attempts)

    def _task(self, i: int, tasks: list[str], attempts: list[str]) -> None:
        rng = self.rng
        task_id = self.first_id + i
        agent = rng.choices(self.agents, self.agent_weights)[0]
        _, model, median_in, median_s = AGENTS[agent]
        tenant = None if rng.random() < 0.1 else rng.choices(TENANTS, self.tenant_weights)[0]
        created = self.times[i]
        priority = rng.choices((0, 5, -1), (0.85, 0.10, 0.05))[0]
        from_end = self.n - i
        if from_end <= LIVE_ENQUEUED:
            status = "enqueued"
        elif from_end <= LIVE_ENQUEUED + LIVE_PROCESSING:
            status = "processing"
        else:
            status = rng.choices(("completed", "failed", "cancelled"), (0.90, 0.06, 0.04))[0]
        n_attempts = rng.choices((1, 2, 3), (0.81, 0.15, 0.04))[0]
        if status == "enqueued":
            n_attempts = 0 if rng.random() < 0.9 else 1
        elif status == "cancelled" and rng.random() < 0.5:
            n_attempts = 0  # cancelled while it waited
        elif status == "failed":
            n_attempts = 3

        t = created + rng.lognormvariate(math.log(5), 1.0)  # waits in the queue
        first_start = None
        for k in range(1, n_attempts + 1):
            last = k == n_attempts
            if last and status == "processing":
                attempt_status = "running"
            elif last and status == "completed":
                attempt_status = "succeeded"
            elif last and status == "cancelled":
                attempt_status = "cancelled"
            elif status == "failed":
                attempt_status = rng.choices(("failed", "lost"), (0.85, 0.15))[0]
            elif status == "enqueued":
                attempt_status = "throttled"
            else:
                attempt_status = rng.choices(("failed", "throttled", "lost"), (0.5, 0.4, 0.1))[0]
            started = t
            first_start = first_start or started
            seconds = rng.lognormvariate(math.log(median_s), 0.6)
            if attempt_status == "throttled":
                seconds = rng.uniform(0.2, 1.5)
            finished = None if attempt_status == "running" else started + seconds
            tokens_in = tokens_out = None
            llm = compute = None
            if attempt_status in ("succeeded", "failed", "cancelled"):
                tokens_in = int(rng.lognormvariate(math.log(median_in), 0.5))
                tokens_out = int(tokens_in * rng.uniform(0.05, 0.25))
                price_in, price_out = PRICES[model]
                llm = f"{tokens_in * price_in + tokens_out * price_out:.6f}"
            if finished is not None:
                compute = f"{(finished - started) * COMPUTE_USD_PER_HOUR / 3600:.6f}"
            error = None
            if attempt_status == "failed":
                error = "extraction failed: totals do not add up"
            elif attempt_status == "lost":
                error = f"attempt {k} lost: worker w{rng.randint(1, 9)} stopped renewing its lease"
            attempts.append(
                "\t".join(
                    (
                        str(task_id),
                        str(k),
                        agent,
                        f"w{rng.randint(1, 9)}",
                        attempt_status,
                        ts(started),
                        opt(ts(finished) if finished is not None else None),
                        model,
                        opt(tokens_in),
                        opt(tokens_out),
                        opt(llm),
                        opt(compute),
                        opt(error),
                        str(median_in),
                    )
                )
            )
            t = (finished or started) + (rng.uniform(1, 30) if not last else 0)

        finished_at = None
        if status in ("completed", "failed", "cancelled"):
            finished_at = t if n_attempts else created + rng.uniform(5, 3600)
        result = None
        if status == "completed":
            fields: dict[str, object] = {"pages": rng.randint(1, 40)}
            if agent in DOCUMENT_AGENTS:
                fields["confidence"] = round(min(1.0, rng.betavariate(12, 1.5)), 3)
            result = json.dumps(fields)
        error = {
            "failed": "extraction failed: totals do not add up",
            "cancelled": "cancelled",
        }.get(status)
        mine = attempts[-n_attempts:] if n_attempts else []
        free = sum(1 for line in mine if "\tthrottled\t" in line)  # they spend no retry
        tasks.append(
            "\t".join(
                (
                    str(task_id),
                    agent,
                    status,
                    str(priority),
                    copy_text(json.dumps({"document_id": f"doc-{task_id:08d}"})),
                    opt(copy_text(result) if result is not None else None),
                    opt(error),
                    str(n_attempts),
                    str(free),
                    "3",
                    ts(created),
                    opt(ts(self.now + 60) if status == "processing" else None),
                    opt(f"w{rng.randint(1, 9)}" if status == "processing" else None),
                    opt(tenant),
                    ts(created),
                    opt(ts(first_start) if first_start is not None else None),
                    opt(ts(finished_at) if finished_at is not None else None),
                )
            )
        )


async def generate(url: str, n: int, seed: int, rebuild: bool) -> None:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    async with conn:
        await migrate(conn)  # type: ignore[arg-type]
        for name, (_, _, median_in, _) in AGENTS.items():
            await conn.execute(
                "INSERT INTO agents (name, max_concurrent, max_tpm) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO NOTHING",
                (name, 8 if name in ("contract", "filing") else None, 40 * median_in),
            )
        cur = await conn.execute(
            "SELECT coalesce(max(id), 0) + 1 AS first, now() AS now FROM tasks"
        )
        first, now = await cur.fetchone() or (1, datetime.now(UTC))
        if rebuild:
            await conn.execute("SET session_replication_role = replica")
        gen = Generator(n, seed, first, now)
        started = time.perf_counter()
        n_attempts = 0
        for lo in range(0, n, CHUNK):
            rows = gen.chunk(lo, min(n, lo + CHUNK))
            # One transaction per chunk: its tasks and their attempts appear together.
            async with conn.transaction():
                async with conn.cursor().copy(
                    f"COPY tasks ({TASK_COLUMNS}) FROM STDIN"  # constant text, no input
                ) as copy:
                    await copy.write("\n".join(rows.tasks) + "\n")
                async with conn.cursor().copy(
                    f"COPY task_attempts ({ATTEMPT_COLUMNS}) FROM STDIN"
                ) as copy:
                    await copy.write("\n".join(rows.attempts) + "\n")
            n_attempts += len(rows.attempts)
            log(f"{lo + len(rows.tasks):,} tasks, {n_attempts:,} attempts")
        await conn.execute(
            "SELECT setval(pg_get_serial_sequence('tasks', 'id'), (SELECT max(id) FROM tasks))"
        )
        if rebuild:
            await conn.execute("SET session_replication_role = origin")
            log("rebuilding the rollups")
            await conn.execute("SELECT conveyor_rebuild_rollups()")
        else:
            # The triggers appended deltas (migration 0014): fold them, as a worker would.
            await conn.execute("SELECT conveyor_rollup_fold()")
        log(f"loaded in {time.perf_counter() - started:.0f} s; VACUUM ANALYZE")
        await conn.execute("VACUUM ANALYZE tasks")
        await conn.execute("VACUUM ANALYZE task_attempts")
        await conn.execute("VACUUM ANALYZE task_rollups")
        await conn.execute("VACUUM ANALYZE task_histograms")
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM task_attempts),"
            " (SELECT count(*) FROM task_rollups), (SELECT count(*) FROM task_histograms)"
        )
        counts = await cur.fetchone()
        assert counts is not None
        log(
            f"done in {time.perf_counter() - started:.0f} s: {counts[0]:,} tasks, "
            f"{counts[1]:,} attempts, {counts[2]:,} rollup rows, {counts[3]:,} histogram rows"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the database to fill")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="skip the triggers while loading, then conveyor_rebuild_rollups()",
    )
    args = parser.parse_args()
    asyncio.run(generate(args.url, args.tasks, args.seed, args.rebuild))


if __name__ == "__main__":
    main()
