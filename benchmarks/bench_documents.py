"""Document stores: upload and read throughput of each against the local folder, the web
process's memory for a 100 MB upload, and PostgreSQL's tables after 10,000 documents.

    python benchmarks/bench_documents.py [--server URL] [--big-mb 100] [--docs 10000]
        [--doc-kb 20] [--stores folder,postgresql,s3] [--json out.json]

Everything runs on this machine, in a fresh database created and dropped here.

1. Per store (CONVEYOR_DOCUMENTS_URL: a folder, PostgreSQL, S3 on moto's standalone
   server over loopback), in a database of its own: one `conveyor web` process. Its idle
   memory is its RSS after start-up and one small upload (imports done, pool open); then
   a `--big-mb` PDF (one page, one stream of random bytes: incompressible, as scans are)
   is uploaded over HTTP, streamed from disk by this process, while a thread samples the
   web process's RSS every 5 ms; the peak above idle is reported, with VmHWM as a
   cross-check. Then 20 files of 5 MB, one request each. Read: from this process,
   `document_file` into an empty CONVEYOR_HOME (what a worker on another machine does: a
   folder is read in place, the others are fetched and checked by sha256), then the file
   read whole; cold, then warm (the worker's cache).
2. PostgreSQL at `--docs` documents of `--doc-kb` KB (through `submit_files`, 100 a call):
   the sizes of document_chunks (with its TOAST table), documents and the tasks index;
   then half of the tasks deleted and the documents pruned, VACUUM, and as many new
   documents again, to show whether the space is reused.

moto keeps objects in memory: the S3 numbers measure Conveyor's path through s3fs and
HTTP, not S3's own speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import psycopg
from scratch import fresh_database

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

MIB = 1 << 20
PNG_HEAD = b"\x89PNG\r\n\x1a\n" + bytes(24)
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def big_pdf(path: Path, size: int) -> None:
    """A valid one-page PDF of about `size` bytes: its content stream is random bytes."""
    with path.open("wb") as out:
        offsets = []
        out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
        for body in (
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        ):
            offsets.append(out.tell())
            out.write(f"{len(offsets)} 0 obj\n".encode() + body + b"\nendobj\n")
        offsets.append(out.tell())
        out.write(f"4 0 obj\n<< /Length {size} >>\nstream\n".encode())
        left = size
        while left:
            piece = os.urandom(min(MIB, left))
            out.write(piece)
            left -= len(piece)
        out.write(b"\nendstream\nendobj\n")
        xref = out.tell()
        out.write(b"xref\n0 5\n0000000000 65535 f \n")
        for offset in offsets:
            out.write(f"{offset:010d} 00000 n \n".encode())
        out.write(f"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())


def rss(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for {pid}")


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, rss(self.pid))
            self.done.wait(0.005)


class Bench:
    def __init__(self, server: str, work: Path) -> None:
        self.server = server
        self.name = f"bench_documents_{secrets.token_hex(4)}"
        self.url = ""
        self.database = contextlib.ExitStack()
        self.work = work
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

    def moto(self) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                return url
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto did not start")

    def web(self, home: Path, store: str, env: dict[str, str]) -> tuple[int, str]:
        port = free_port()
        environment = {
            **os.environ,
            **env,
            "CONVEYOR_DATABASE_URL": self.url,
            "CONVEYOR_HOME": str(home),
            "CONVEYOR_DOCUMENTS_URL": store,
            "CONVEYOR_MAX_UPLOAD_BYTES": str(200 * MIB),
            "PYTHONPATH": str(ROOT),
        }
        command = ["web", "--app", "conveyor.demo:app", "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "conveyor.cli", *command],
            env=environment,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    return proc.pid, base
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"conveyor web exited ({proc.returncode})")
            time.sleep(0.1)
        raise RuntimeError("conveyor web did not start")


def post_file(base: str, path: Path, name: str) -> tuple[float, dict[str, Any]]:
    with path.open("rb") as file:
        started = time.perf_counter()
        response = httpx.post(
            f"{base}/api/documents",
            data={"agent": "document", "rerun": "true"},
            files=[("files", (name, file, "application/octet-stream"))],
            timeout=600,
        )
        elapsed = time.perf_counter() - started
    response.raise_for_status()
    answer: dict[str, Any] = response.json()[0]
    return elapsed, answer


async def read_back(url: str, home: Path, sha256: str, env: dict[str, str]) -> tuple[float, float]:
    """Seconds for document_file + a whole read, cold (empty home) then warm."""
    from conveyor import App
    from conveyor.documents.stores.reader import document_file
    from conveyor.settings import Settings

    os.environ.update(env)
    settings = Settings(database_url=url, home=home)
    app = App(settings=settings)
    times = []
    try:
        db = await app.database()
        for _ in range(2):
            started = time.perf_counter()
            path = await document_file(db, settings, sha256)
            read = 0
            with path.open("rb") as file:
                while data := file.read(MIB):
                    read += len(data)
            times.append(time.perf_counter() - started)
            assert read == path.stat().st_size
    finally:
        await app.aclose()
    return times[0], times[1]


def store_run(bench: Bench, kind: str, big: Path, small: list[Path]) -> dict[str, Any]:
    env: dict[str, str] = {}
    home = bench.work / f"web-{kind}"
    if kind == "folder":
        store = f"file://{bench.work / 'shared'}"
    elif kind == "postgresql":
        store = "postgresql"
    else:
        env = {**S3_ENV, "AWS_ENDPOINT_URL": bench.moto()}
        os.environ.update(env)
        import s3fs  # type: ignore[import-untyped]

        s3fs.S3FileSystem(skip_instance_cache=True).mkdir("bench-documents")
        store = "s3://bench-documents/docs"
    pid, base = bench.web(home, store, env)
    warm = bench.work / "warm.png"
    warm.write_bytes(PNG_HEAD + os.urandom(1000))
    post_file(base, warm, "warm.png")
    idle = rss(pid)
    sampler = Sampler(pid)
    sampler.start()
    big_seconds, answer = post_file(base, big, "big.pdf")
    sampler.done.set()
    sampler.join()
    hwm = rss(pid, "VmHWM")
    small_seconds = sum(post_file(base, p, p.name)[0] for p in small)
    small_bytes = sum(p.stat().st_size for p in small)
    cold, warm_read = asyncio.run(
        read_back(bench.url, bench.work / f"reader-{kind}", answer["document"]["sha256"], env)
    )
    size = big.stat().st_size
    return {
        "store": kind,
        "big_mb": size / MIB,
        "upload_big_mb_s": size / MIB / big_seconds,
        "upload_5mb_mb_s": small_bytes / MIB / small_seconds,
        "read_cold_mb_s": size / MIB / cold,
        "read_warm_mb_s": size / MIB / warm_read,
        "web_idle_mb": idle / MIB,
        "web_peak_above_idle_mb": (sampler.peak - idle) / MIB,
        "web_vmhwm_above_idle_mb": (hwm - idle) / MIB,
    }


async def table_run(url: str, work: Path, docs: int, doc_kb: int) -> dict[str, Any]:
    from conveyor import App
    from conveyor.documents.stores.prune import prune_documents
    from conveyor.documents.submit import submit_files
    from conveyor.settings import Settings

    settings = Settings(database_url=url, home=work / "tables")
    app = App(settings=settings)

    async def noop(task: Any) -> None:
        return None

    app.agent("bench_docs")(noop)
    out: dict[str, Any] = {"docs": docs, "doc_kb": doc_kb}
    folder = work / "files"
    folder.mkdir(exist_ok=True)

    async def add(count: int) -> float:
        started = time.perf_counter()
        for start in range(0, count, 100):
            paths = []
            for i in range(min(100, count - start)):
                path = folder / f"{i}.png"
                path.write_bytes(PNG_HEAD + os.urandom(doc_kb * 1024 - len(PNG_HEAD)))
                paths.append(path)
            await submit_files(app, paths, agent="bench_docs")
        return time.perf_counter() - started

    async def sizes(conn: psycopg.AsyncConnection[Any]) -> dict[str, Any]:
        cur = await conn.execute(
            """
            SELECT pg_total_relation_size('document_chunks') AS chunks_total,
                   pg_relation_size(c.reltoastrelid) AS chunks_toast,
                   pg_total_relation_size('documents') AS documents_total,
                   pg_relation_size('tasks_document_idx') AS tasks_document_idx,
                   (SELECT n_dead_tup FROM pg_stat_all_tables WHERE relid = c.reltoastrelid)
                       AS toast_dead_tuples,
                   (SELECT count(*) FROM documents) AS documents
            FROM pg_class c WHERE c.relname = 'document_chunks'
            """
        )
        row = await cur.fetchone()
        assert row is not None
        return dict(row)

    try:
        await app.database()
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=psycopg.rows.dict_row
        ) as conn:
            seconds = await add(docs)
            out["insert_docs_per_s"] = docs / seconds
            out["after_insert"] = await sizes(conn)
            await conn.execute(
                "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks ORDER BY id LIMIT %s)",
                [docs // 2],
            )
            started = time.perf_counter()
            out["pruned"] = await prune_documents(await app.database())
            out["prune_seconds"] = time.perf_counter() - started
            await conn.execute("ANALYZE document_chunks")
            out["after_prune"] = await sizes(conn)
            started = time.perf_counter()
            await conn.execute("VACUUM document_chunks")
            out["vacuum_seconds"] = time.perf_counter() - started
            out["after_vacuum"] = await sizes(conn)
            await add(docs // 2)
            out["after_refill"] = await sizes(conn)
    finally:
        await app.aclose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--server",
        default=os.environ.get(
            "CONVEYOR_BENCH_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--doc-kb", type=int, default=20)
    parser.add_argument("--stores", default="folder,postgresql,s3")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {"stores": []}
    with tempfile.TemporaryDirectory(prefix="bench-documents-") as tmp:
        work = Path(tmp)
        big = work / "big.pdf"
        big_pdf(big, args.big_mb * MIB)
        small = []
        for i in range(20):
            path = work / f"small-{i}.png"
            path.write_bytes(PNG_HEAD + os.urandom(5 * MIB))
            small.append(path)
        for kind in args.stores.split(","):
            # A database each: the same bytes uploaded again would be found in the store
            # of the run before (content addressing), and measure nothing.
            with Bench(args.server, work) as bench:
                result = store_run(bench, kind, big, small)
            results["stores"].append(result)
            print(json.dumps(result), flush=True)
        if args.docs:
            with Bench(args.server, work) as bench:
                results["tables"] = asyncio.run(table_run(bench.url, work, args.docs, args.doc_kb))
                print(json.dumps(results["tables"], default=str), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
