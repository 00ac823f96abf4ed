"""The live event stream: commit-to-client latency, and how many clients one web process serves.

    python benchmarks/bench_events.py [--server URL] [--changes 1000] [--clients 250,500,1000]

Everything runs as separate processes on this machine, in a fresh database created and
dropped here: one `conveyor web` (the process under test, with its one LISTEN
connection), SSE clients in a few processes of their own (raw asyncio streams, which read
a thousand streams on little CPU), a `conveyor worker` draining the queue, and this
process as the writer. Times are `time.time()`, one clock for every process here.

1. Latency: 1,000 status changes, each its own transaction (the enqueue of one task), a
   few ms apart; the commit time is taken right after COMMIT returns in the writer, the
   receive time when the client's read returns the bytes of that task's event.
2. Fan-out: N clients connected to the one web process, none filtering (every client gets
   every event), while a worker drains pre-enqueued no-op tasks at full speed (three events
   per task: enqueued in bulk, processing, completed). Probe tasks of an agent nobody
   works are enqueued 20 times a second; their latency is measured at every client. A
   client that is told to `refresh` (it fell behind and was coalesced) or is dropped
   counts as having missed the probes it did not get; both are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from scratch import fresh_database

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROBE_SENT: dict[int, float] = {}  # probe id -> time just before its INSERT was sent
PROBE = re.compile(rb'"id":(\d+),"agent":"probe"')


# ---------------------------------------------------------------------------------------
# The client process: N streams, the receive time of every probe event on each


class _Stream(asyncio.Protocol):
    """One SSE connection, parsed in data_received: no stream reader, no task, so that one
    process reads hundreds of streams on little CPU."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.seen: dict[int, float] = {}
        self.refreshes = 0
        self.closed = False
        self.started = asyncio.get_running_loop().create_future()
        self.tail = b""
        self.head = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(f"GET /api/events HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())

    def data_received(self, data: bytes) -> None:
        now = time.time()
        data = self.tail + data
        if self.head:
            if b"\r\n\r\n" not in data:
                self.tail = data
                return
            head, data = data.split(b"\r\n\r\n", 1)
            self.head = False
            if not self.started.done():
                self.started.set_result(b" 200 " in head.split(b"\r\n", 1)[0])
        for match in PROBE.finditer(data):
            self.seen.setdefault(int(match.group(1)), now)
        self.refreshes += data.count(b"event: refresh")
        self.tail = data[-64:]  # an event split across two reads

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.started.done():
            self.started.set_result(False)


async def client_main(url: str, count: int, seconds: float, out: Path) -> None:
    host, port = url.removeprefix("http://").split(":")
    loop = asyncio.get_running_loop()
    streams = []
    for _ in range(count):
        _, stream = await loop.create_connection(lambda: _Stream(host), host, int(port))
        streams.append(stream)
    for stream in streams:
        if not await stream.started:
            raise SystemExit("a stream was refused")
    print("ready", flush=True)
    cpu0, t0 = time.process_time(), time.time()
    await asyncio.sleep(seconds)
    cpu_share = (time.process_time() - cpu0) / (time.time() - t0)
    out.write_text(
        json.dumps(
            {
                "seen": [{str(k): v for k, v in s.seen.items()} for s in streams],
                "refreshes": [s.refreshes for s in streams],
                "closed": sum(s.closed for s in streams),
                "cpu_share": cpu_share,
            }
        )
    )


# ---------------------------------------------------------------------------------------
# The harness


def _env(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "CONVEYOR_DATABASE_URL": database_url,
        "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}",
        "CONVEYOR_LOG_FORMAT": "text",
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    def __init__(self, server: str) -> None:
        self.server = server
        self.name = f"bench_events_{secrets.token_hex(4)}"
        self.url = ""
        self.database = contextlib.ExitStack()
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Bench:
        self.url = self.database.enter_context(fresh_database(self.server, self.name))
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.database.close()

    def start(self, *args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, env=_env(self.url), cwd=ROOT, **kwargs)
        self.procs.append(proc)
        return proc

    def web(self) -> tuple[subprocess.Popen[bytes], str]:
        port = free_port()
        proc = self.start(
            sys.executable, "-m", "conveyor.cli", "web", "--port", str(port),
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    return proc, url
            except httpx.HTTPError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("the web process did not start")
            time.sleep(0.1)

    def clients(self, url: str, total: int, procs: int, seconds: float) -> list[Path]:
        outs, started = [], []
        for n in range(procs):
            share = total // procs + (1 if n < total % procs else 0)
            if not share:
                continue
            out = Path(tempfile.mkstemp(prefix="bench_events_", suffix=".json")[1])
            proc = self.start(
                sys.executable, str(Path(__file__)), "client", "--url", url,
                "--count", str(share), "--seconds", str(seconds), "--out", str(out),
                stdout=subprocess.PIPE,
            )  # fmt: skip
            outs.append(out)
            started.append(proc)
        for proc in started:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.strip() != b"ready":
                raise RuntimeError("a client process did not connect")
        self._clients = started
        return outs

    def wait_clients(self) -> None:
        for proc in self._clients:
            proc.wait(120)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latencies(outs: list[Path], committed: dict[int, float]) -> dict[str, Any]:
    lat, from_send, missed, refreshes, closed, streams = [], [], 0, 0, 0, 0
    client_cpu = []
    for out in outs:
        data = json.loads(out.read_text())
        out.unlink()
        refreshes += sum(data["refreshes"])
        client_cpu.append(round(data["cpu_share"], 2))
        closed += data["closed"]
        for seen in data["seen"]:
            streams += 1
            for task_id, at in committed.items():
                got = seen.get(str(task_id))
                if got is None:
                    missed += 1
                else:
                    lat.append((got - at) * 1000)
                    from_send.append((got - PROBE_SENT[task_id]) * 1000)
    return {
        "streams": streams,
        "samples": len(lat),
        "min_ms": round(min(lat), 2) if lat else None,
        "p50_ms": round(statistics.median(lat), 1) if lat else None,
        "p99_ms": round(percentile(lat, 0.99), 1) if lat else None,
        "max_ms": round(max(lat), 1) if lat else None,
        # From just before the INSERT was sent: an upper bound (it includes the commit).
        "from_send_p50_ms": round(statistics.median(from_send), 1) if lat else None,
        "from_send_p99_ms": round(percentile(from_send, 0.99), 1) if lat else None,
        "missed": missed,
        "refresh_events": refreshes,
        "dropped_streams": closed,
        "client_cpu_shares": client_cpu,
    }


async def probe(url: str, count: int, gap: float) -> dict[int, float]:
    """`count` status changes, one transaction each (an autocommit INSERT: its answer comes
    after the COMMIT); the time right after each answer."""
    committed: dict[int, float] = {}
    sent = PROBE_SENT
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    async with conn:
        for _ in range(count):
            before = time.time()
            cur = await conn.execute(
                "INSERT INTO tasks (agent, payload) VALUES ('probe', '{}') RETURNING id"
            )
            at = time.time()
            row = await cur.fetchone()
            assert row is not None
            committed[row[0]] = at
            sent[row[0]] = before
            await asyncio.sleep(gap)
    return committed


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from conveyor import App

    results: dict[str, Any] = {}
    with Bench(args.server) as bench:
        app = App(database_url=bench.url)
        app.agent("probe")(_nothing)
        app.agent("noop")(_nothing)
        await app.database()  # migrates, registers the agents
        web, url = bench.web()

        # 1. latency, one client, an idle queue
        outs = bench.clients(url, 1, 1, seconds=args.changes * args.gap + 5)
        committed = await probe(bench.url, args.changes, args.gap)
        bench.wait_clients()
        results["latency"] = latencies(outs, committed)
        print("latency", results["latency"], flush=True)

        # 2. fan-out while the queue drains
        results["fanout"] = []
        for clients in args.clients:
            async with app.connection() as conn:
                await conn.execute("DELETE FROM tasks WHERE agent = 'noop'")
            for _ in range(args.drain // 10_000):
                await app.enqueue_many_async([{"agent": "noop"} for _ in range(10_000)])
            outs = bench.clients(url, clients, args.procs, seconds=args.seconds + 4)
            cpu0 = cpu_seconds(web.pid)
            worker = bench.start(
                sys.executable, "-m", "conveyor.cli", "worker", "--app", "apps:app",
                "--concurrency", "32", "--agent", "noop",
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            started = time.time()
            committed = await probe(bench.url, int(args.seconds * 20), 0.05)
            elapsed = time.time() - started
            async with app.connection() as conn:
                cur = await conn.execute(
                    "SELECT count(*) AS n FROM tasks WHERE agent = 'noop' AND status = 'completed'"
                )
                row = await cur.fetchone()
            drained = row["n"] if row else 0
            cpu = cpu_seconds(web.pid) - cpu0
            worker.kill()  # the measurement is over; a drain on SIGTERM would only take time
            worker.wait(30)
            bench.wait_clients()
            result = latencies(outs, committed)
            result.update(
                clients=clients,
                drain_per_s=round(drained / elapsed),
                events_per_s=round(2 * drained / elapsed + 20),
                web_cpu_share=round(cpu / elapsed, 2),
            )
            if drained >= args.drain:
                result["note"] = "the queue ran dry before the end: raise --drain"
            results["fanout"].append(result)
            print("fanout", result, flush=True)
        web.send_signal(signal.SIGTERM)
        web.wait(30)
        await app.aclose()
    return results


async def _nothing(task: Any) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    client = sub.add_parser("client")
    client.add_argument("--url", required=True)
    client.add_argument("--count", type=int, required=True)
    client.add_argument("--seconds", type=float, required=True)
    client.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--server",
        default=os.environ.get(
            "CONVEYOR_BENCH_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--gap", type=float, default=0.01, help="seconds between changes")
    parser.add_argument(
        "--clients", type=lambda s: [int(x) for x in s.split(",")], default=[250, 500, 1000]
    )
    parser.add_argument("--procs", type=int, default=4, help="client processes")
    parser.add_argument("--seconds", type=float, default=15.0, help="per fan-out step")
    parser.add_argument("--drain", type=int, default=60_000, help="tasks to drain per step")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "client":
        asyncio.run(client_main(args.url, args.count, args.seconds, args.out))
        return
    results = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
