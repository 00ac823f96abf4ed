"""The `conveyor` command, run as a user runs it: a real process, its output, its exit code."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import wait_for
from tests.processes import ROOT


def conveyor(
    *args: str, url: str | None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("CONVEYOR_DATABASE_URL", None)
    if url:
        environment["CONVEYOR_DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "conveyor.cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_help_lists_every_command() -> None:
    out = conveyor("--help", url=None).stdout
    for command in (
        "up",
        "worker",
        "migrate",
        "enqueue",
        "tasks",
        "task",
        "cancel",
        "retry",
        "prune",
    ):
        assert command in out


def test_migrate_is_idempotent(database_url: str) -> None:
    first = conveyor("migrate", url=database_url)
    assert first.returncode == 0 and "up to date" in first.stdout
    assert conveyor("migrate", url=database_url).returncode == 0


def test_enqueue_show_cancel_retry(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name) VALUES ('invoice')")
    enqueued = conveyor(
        "enqueue", "invoice", '{"doc": "a.pdf"}', "--priority", "3", url=database_url
    )
    assert enqueued.returncode == 0, enqueued.stderr
    task_id = enqueued.stdout.strip()
    shown = json.loads(conveyor("task", task_id, url=database_url).stdout)
    assert shown["payload"] == {"doc": "a.pdf"} and shown["priority"] == 3
    listed = conveyor("tasks", "--status", "enqueued", url=database_url).stdout
    assert task_id in listed and "invoice" in listed
    assert "cancelled" in conveyor("cancel", task_id, url=database_url).stdout
    assert "enqueued" in conveyor("retry", task_id, url=database_url).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["enqueue", "nobody", "{}"], "unknown agent 'nobody'"),
        (["enqueue", "invoice", "{not json"], "the payload is not JSON"),
        (["enqueue", "invoice", "{}", "--priority", "99999"], "priority must be between"),
        (["task", "999999"], "no task with id 999999"),
        (["retry", "999999"], "no task with id 999999"),
        (["worker", "--app", "no_such_module:app"], "cannot import 'no_such_module'"),
        (["worker", "--app", "tests.worker_app"], "--app must look like MODULE:APP"),
        (["worker", "--app", "tests.worker_app:nope"], "is not a conveyor.App"),
        (["worker", "--app", "tests.worker_app:app", "--agent", "ghost"], "declares no agent"),
    ],
)
def test_bad_input_is_a_clear_message_and_a_nonzero_exit(
    database_url: str, args: list[str], message: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name) VALUES ('invoice') ON CONFLICT DO NOTHING")
    result = conveyor(*args, url=database_url)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["prune", "--older-than", "soon"],
        ["worker", "--app", "x:y", "--concurrency", "0"],
        ["tasks", "--status", "running"],
        ["nonsense"],
    ],
)
def test_bad_arguments_are_refused_by_the_parser(args: list[str]) -> None:
    result = conveyor(*args, url="postgresql://unused")
    assert result.returncode == 2 and "usage:" in result.stderr


def test_an_unreachable_database_is_a_clear_error() -> None:
    result = conveyor("tasks", url="postgresql://postgres@127.0.0.1:1/none", timeout=90)
    assert result.returncode == 1
    assert "cannot connect to PostgreSQL" in result.stderr and "Traceback" not in result.stderr


def test_prune_deletes_old_finished_tasks(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name) VALUES ('a')")
        conn.execute(
            "INSERT INTO tasks (agent, status, finished_at) VALUES"
            " ('a', 'completed', now() - interval '40 days'),"
            " ('a', 'completed', now() - interval '1 day')"
        )
    result = conveyor("prune", "--older-than", "30d", url=database_url)
    assert result.returncode == 0 and "deleted 1 " in result.stdout


async def test_up_runs_the_demo_on_an_embedded_database_and_stops_cleanly() -> None:
    """The Quickstart's main command, on a machine with no CONVEYOR_DATABASE_URL."""
    home = Path(tempfile.mkdtemp(prefix="conveyor-home-"))
    home.chmod(0o755)  # the embedded server runs as its own user: it must get in
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CONVEYOR_HOME": str(home)}
    env.pop("CONVEYOR_DATABASE_URL", None)
    web_port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "conveyor.cli", "up", "--port", str(web_port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        port = await wait_for(lambda: _port(home), timeout=60, what="the embedded server")
        url = (
            f"postgresql://postgres:{(home / 'postgres' / 'password').read_text().strip()}"
            f"@127.0.0.1:{port}/postgres"
        )

        async def demo_finished() -> Any:
            try:
                async with await psycopg.AsyncConnection.connect(url) as conn:
                    # The demo documents, read by the offline extractor: all must complete.
                    cur = await conn.execute(
                        "SELECT count(*) FILTER (WHERE status = 'completed'), count(*),"
                        "       array_agg(DISTINCT result->>'type')"
                        " FROM tasks"
                    )
                    completed, total, types = await cur.fetchone()  # type: ignore[misc]
                    return total == 6 and completed == total and types
            except psycopg.Error:
                return False

        types = await wait_for(demo_finished, timeout=60, what="the demo documents")
        assert sorted(types) == ["contract", "invoice"]
        async with httpx.AsyncClient() as client:
            health = await client.get(f"http://127.0.0.1:{web_port}/healthz")
        assert health.json() == {"status": "ok", "database": "ok"}, "up serves the web app"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "embedded PostgreSQL" in out and "enqueued 6 demo documents" in out
    assert "document extractor: offline" in out
    assert "worker stopped" in out
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)  # the embedded server stopped with it


def test_commands_on_the_embedded_server_print_their_output_not_the_servers_life() -> None:
    """`conveyor tasks` with no CONVEYOR_DATABASE_URL: the table on stdout, and stderr says
    nothing about the embedded server it adopted or started, left running or stopped."""
    from conveyor.db.embedded import EmbeddedPostgres

    home = Path(tempfile.mkdtemp(prefix="conveyor-home-"))
    home.chmod(0o755)  # the embedded server runs as its own user: it must get in
    env = {"CONVEYOR_HOME": str(home)}
    routine = re.compile(r"already running|still in use|started on|stopped in")
    server = EmbeddedPostgres(home / "postgres")
    try:
        # No server yet: the command initialises and starts one, and stops it at its end.
        alone = conveyor("tasks", url=None, env=env, timeout=120)
        assert alone.returncode == 0, alone.stderr
        assert alone.stdout.splitlines()[0].split() == [
            "id",
            "agent",
            "status",
            "priority",
            "attempts",
            "created",
            "took",
            "error",
        ]
        assert not routine.search(alone.stderr), alone.stderr
        assert not server.is_running()

        # A server that another process uses: the command adopts it and leaves it running.
        server.start()
        shared = conveyor("tasks", url=None, env=env)
        assert shared.returncode == 0, shared.stderr
        assert shared.stderr == ""
        assert server.is_running()

        # The lines are there for whoever asks for them.
        debug = conveyor("--log-level", "DEBUG", "tasks", url=None, env=env)
        assert "using the server already running" in debug.stderr
        assert "still in use by another process; leaving it" in debug.stderr
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port(home: Path) -> int | None:
    path = home / "postgres" / "port"
    return int(path.read_text()) if path.exists() and path.read_text().strip() else None


def test_limits_show_set_and_reset(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name, max_concurrent) VALUES ('invoice', 4)")
    shown = conveyor("limits", url=database_url)
    assert shown.returncode == 0 and "invoice" in shown.stdout and "0 / 4" in shown.stdout
    changed = conveyor(
        "limits",
        "set",
        "invoice",
        "--max-concurrent",
        "2",
        "--max-tpm",
        "90000",
        "--window",
        "30s",
        url=database_url,
    )
    assert changed.returncode == 0, changed.stderr
    assert "0 / 2" in changed.stdout and "0 / 90000" in changed.stdout
    assert "operator" in changed.stdout and "30s" in changed.stdout
    unknown = conveyor("limits", "set", "ghost", "--max-rpm", "3", url=database_url)
    assert unknown.returncode == 1 and "unknown agent 'ghost'" in unknown.stderr
    bad = conveyor("limits", "set", "invoice", "--max-tpm", "-5", url=database_url)
    assert bad.returncode == 2 and "must be 0 or more" in bad.stderr


def test_limits_show_what_throttling_did(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO agents (name, max_rpm, throttle_factor, throttled_at, learned_tpm,"
            " paused_until) VALUES ('invoice', 60, 0.5, now(), 5400, now() + interval '30 s')"
        )
    shown = conveyor("limits", url=database_url)
    assert shown.returncode == 0, shown.stderr
    assert "(learned 5400)" in shown.stdout
    assert re.search(r"paused \d+\.\ds", shown.stdout) and "requests x0.50" in shown.stdout


def test_web_refuses_to_listen_beyond_loopback_without_a_token(database_url: str) -> None:
    result = conveyor("web", "--host", "0.0.0.0", "--port", "0", url=database_url)
    assert result.returncode == 1
    assert "refusing to listen on 0.0.0.0 without CONVEYOR_API_TOKEN" in result.stderr


@pytest.mark.parametrize("signals", [1, 2], ids=["drain", "drain-then-stop-now"])
async def test_web_serves_the_api_and_stops_on_sigterm(database_url: str, signals: int) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CONVEYOR_DATABASE_URL": database_url}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "conveyor.cli",
            "web",
            "--app",
            "tests.worker_app:app",
            "--port",
            str(port),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        async def healthy() -> bool:
            try:
                async with httpx.AsyncClient() as client:
                    answer = await client.get(f"http://127.0.0.1:{port}/healthz")
                    return answer.status_code == 200
            except httpx.TransportError:
                return False

        await wait_for(healthy, timeout=30, what="the web app")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            created = await client.post("/api/tasks", json={"agent": "noop"})
        assert created.status_code == 201, "the --app's agents are registered"
        proc.send_signal(signal.SIGTERM)
        seen = []
        if signals == 2:  # the second signal once the first is being handled (not merged)
            assert proc.stdout is not None
            while "draining" not in (line := proc.stdout.readline()):
                assert line, "the server exited without saying it drains"
                seen.append(line)
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        out = "".join(seen) + out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "Traceback" not in out, out


def _pdf(path: Path, pages: int = 1) -> Path:
    import pypdfium2  # type: ignore[import-untyped]

    document = pypdfium2.PdfDocument.new()
    for _ in range(pages):
        document.new_page(200, 200)
    document.save(str(path))
    return path


def test_submit_stores_files_and_waits_for_their_tasks(database_url: str, tmp_path: Path) -> None:
    """`conveyor submit --wait` with a real worker process doing the work."""
    from tests.processes import WorkerProcess

    a, b = _pdf(tmp_path / "a.pdf"), _pdf(tmp_path / "b.pdf", pages=2)
    env = {"CONVEYOR_HOME": str(tmp_path / "home")}
    worker = WorkerProcess(database_url, concurrency=2, env=env)
    try:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("INSERT INTO agents (name) VALUES ('pages') ON CONFLICT DO NOTHING")
        done = conveyor(
            "submit", str(a), str(b), "--agent", "pages", "--wait", url=database_url, env=env
        )
        assert done.returncode == 0, done.stderr
        assert "a.pdf: task" in done.stdout and done.stdout.count(": completed") == 2
        again = conveyor("submit", str(a), "--agent", "pages", url=database_url, env=env)
        assert "already submitted" in again.stdout
    finally:
        worker.close()
    with psycopg.connect(database_url) as conn:
        pages = conn.execute("SELECT result FROM tasks ORDER BY id").fetchall()
    assert sorted(r[0]["pages"] for r in pages) == [1, 2]


def test_submit_refuses_what_it_cannot_take(database_url: str, tmp_path: Path) -> None:
    text = tmp_path / "notes.pdf"
    text.write_text("not a pdf at all")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO agents (name) VALUES ('pages') ON CONFLICT DO NOTHING")
    env = {"CONVEYOR_HOME": str(tmp_path / "home")}
    refused = conveyor("submit", str(text), "--agent", "pages", url=database_url, env=env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "text/plain" in refused.stderr or "not" in refused.stderr
    missing = conveyor(
        "submit", str(tmp_path / "nope.pdf"), "--agent", "pages", url=database_url, env=env
    )
    assert missing.returncode == 1 and "nope.pdf" in missing.stderr
    no_agent = conveyor("submit", str(text), url=database_url, env=env)
    assert no_agent.returncode == 1 and "--agent" in no_agent.stderr
