"""graphile-worker (Node.js) as a peer of bench_queue.py: the harness's side.

graphile-worker is an npm package, which no Python extra can hold: `installed()` puts it
with npm into a folder of its own, ~/.cache/conveyor-bench/graphile-worker (or
$BENCH_GRAPHILE_HOME), once, and runs it with the machine's Node.js. Without Node.js or npm
it returns a one-line reason and the benchmark runs without this peer.

Two subjects, one library: `batched` with the settings graphile-worker documents for
throughput (a local queue of 500 jobs, completions and failures written in batches, delay 0)
and `default` with its defaults. Both enqueue through graphile-worker's own SQL API
(`graphile_worker.add_job` per task, `graphile_worker.add_jobs` per batch), which is what its
Node.js `addJob`/`addJobs` call, from the harness's one psycopg connection. The worker is
graphile_worker.cjs, one Node.js process per worker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psycopg

VERSION = "0.18.0"
HERE = Path(__file__).resolve().parent
HOME = Path(
    os.environ.get("BENCH_GRAPHILE_HOME", Path.home() / ".cache/conveyor-bench/graphile-worker")
)
WORKER = HERE / "graphile_worker.cjs"
ENV_URL = "BENCH_DATABASE_URL"
INSTALL_TIMEOUT = 600.0


def installed() -> str | None:
    """None when graphile-worker VERSION is ready to run in HOME, else why it is not."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "graphile-worker skipped: Node.js and npm are needed (neither found on PATH)"
    package = HOME / "node_modules/graphile-worker/package.json"
    if package.exists() and json.loads(package.read_text()).get("version") == VERSION:
        return None
    HOME.mkdir(parents=True, exist_ok=True)
    manifest = HOME / "package.json"
    if not manifest.exists():
        manifest.write_text(json.dumps({"name": "conveyor-bench-graphile", "private": True}))
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", f"graphile-worker@{VERSION}"],
        cwd=HOME,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"graphile-worker skipped: npm install failed in {HOME}: {last}"
    return None


def node_env(url: str) -> dict[str, str]:
    return {ENV_URL: url, "NODE_PATH": str(HOME / "node_modules")}


class GraphileSubject:
    """graphile-worker VERSION, batched (its throughput settings) or with its defaults."""

    def __init__(self, batched: bool) -> None:
        self.batched = batched
        self.name = "graphile_batched" if batched else "graphile_default"

    async def open(self, url: str) -> None:
        self.url = url
        node = shutil.which("node") or "node"
        subprocess.run(
            [node, str(WORKER), "--schema-only"],
            env={**os.environ, **node_env(url)},
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.admin = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def close(self) -> None:
        await self.admin.close()

    async def reset(self) -> None:
        # Finished jobs are deleted; what is left of a run is its queues' rows.
        await self.admin.execute(
            "TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues"
        )

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        await self.admin.execute(
            "SELECT graphile_worker.add_jobs(array(SELECT json_populate_recordset("
            "null::graphile_worker.job_spec, %s::json)))",
            (json.dumps([{"identifier": "noop", "payload": p} for p in payloads]),),
        )

    async def enqueue_one(self, payload: dict[str, Any]) -> None:
        await self.admin.execute(
            "SELECT graphile_worker.add_job('noop', %s::json)", (json.dumps(payload),)
        )

    async def remaining(self) -> int:
        cur = await self.admin.execute("SELECT count(*) FROM graphile_worker._private_jobs")
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    def worker_command(self, concurrency: int, processes: int) -> tuple[list[str], dict[str, str]]:
        argv = [shutil.which("node") or "node", str(WORKER), "--concurrency", str(concurrency)]
        if self.batched:
            argv.append("--batched")
        return argv, node_env(self.url)

    def describe(self, concurrency: int, processes: int) -> str:
        pool = f"concurrency={concurrency}, maxPoolSize={concurrency + 2}"
        if self.batched:
            return f"{pool}, localQueue.size=500, completeJobBatchDelay=0, failJobBatchDelay=0"
        return f"{pool}, defaults otherwise (no local queue, one completion per statement)"
