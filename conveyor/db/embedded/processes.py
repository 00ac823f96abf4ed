"""The server's processes as the OS sees them: alive or not, which postmaster, its
children, ``postmaster.pid``, and how to get rid of one we don't trust (Linux /proc;
``ps`` or nothing elsewhere)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conveyor.db.embedded.layout import EmbeddedPostgresError

logger = logging.getLogger(__name__)


def poll(condition: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Wait until ``condition()`` is true; False if it still isn't after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process; a zombie (exited, not yet reaped) counts as dead."""
    if pid <= 0:  # kill(0, ...) would mean our process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, belongs to another user
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc (macOS): trust kill(); else it's gone
    except OSError:
        return True
    state = proc_stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


def cmdline(pid: int) -> list[str] | None:
    """The argv of ``pid``, or None if unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
        out = subprocess.run(
            ["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
        ).stdout.strip()
        return out.split() if out else None
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def binaries_gone(pid: int) -> bool:
    """Whether the program `pid` runs was deleted or replaced since it started (Linux shows
    its link as "... (deleted)"). A postmaster in that state runs on, but its new backends
    cannot load PostgreSQL's own libraries (`could not access file "plpgsql"`)."""
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith(" (deleted)")
    except OSError:
        return False  # no /proc, or not ours to read: nothing is known against it


def is_postmaster_of(pid: int, pgdata: Path) -> bool:
    """Whether ``pid`` is a postmaster (``.../postgres -D <dir> ...``) for ``pgdata``.

    ``pgdata`` must be resolved; ``<dir>`` is resolved too, so another spelling of the same
    folder (a symlink) is recognised: never mistake a live server for a stale one.
    """
    argv = cmdline(pid)
    if not argv or Path(argv[0]).name != "postgres":
        return False
    for flag, value in itertools.pairwise(argv):
        if flag == "-D":
            with contextlib.suppress(OSError):
                return value == str(pgdata) or Path(value).resolve() == pgdata
    return False


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc; empty elsewhere)."""
    kids: list[int] = []
    proc = Path("/proc")
    if not proc.exists():
        return kids
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if len(fields) > 1 and int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def server_processes(pgdata: Path) -> list[int]:
    """Live PostgreSQL processes of the cluster in ``pgdata``: postmaster and children.

    A postmaster and every process it forks chdir into the data directory, so we look for
    processes named postgres whose working directory is ``pgdata`` (Linux /proc; empty
    elsewhere).  This also finds the children a SIGKILLed postmaster leaves behind.
    """
    proc = Path("/proc")
    if not proc.exists():
        return []
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(pgdata):
                continue
        except OSError:
            continue
        pid = int(entry.name)
        argv = cmdline(pid)
        if not argv or not (Path(argv[0]).name == "postgres" or argv[0].startswith("postgres:")):
            continue
        if pid_alive(pid):
            found.append(pid)
    return found


def kill_all(pids: list[int], timeout: float) -> None:
    """SIGKILL ``pids`` and wait until they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if not poll(lambda: not any(pid_alive(p) for p in pids), timeout):
        raise EmbeddedPostgresError(f"could not kill stale PostgreSQL processes {pids}")


def kill_postmaster(pid: int, timeout: float) -> None:
    """Stop a postmaster we don't trust: SIGQUIT (immediate shutdown), then SIGKILL.

    SIGQUIT makes the postmaster kill its children and exit without a checkpoint (crash
    recovery runs at the next start).  If it doesn't go in time we SIGKILL it and its children:
    children left behind would keep the shared memory attached and the next start would fail
    with "pre-existing shared memory block is still in use".
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGQUIT)
    if poll(lambda: not pid_alive(pid), timeout):
        return
    logger.warning("embedded PostgreSQL: postmaster %d ignored SIGQUIT; killing it", pid)
    kill_all([pid, *children(pid)], timeout)


@dataclass(frozen=True)
class PidFile:
    """What matters in ``pgdata/postmaster.pid`` (written by the postmaster, line by line)."""

    pid: int
    port: int | None
    status: str  # "starting", "ready", "stopping", "standby"; "" while still being written

    @classmethod
    def read(cls, pgdata: Path) -> PidFile | None:
        """None if there is no pid file; pid 0 if it is unreadable garbage."""
        try:
            lines = (pgdata / "postmaster.pid").read_text().splitlines()
        except FileNotFoundError:
            return None
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            return cls(0, None, "")
        port = int(lines[3]) if len(lines) > 3 and lines[3].strip().isdigit() else None
        status = lines[7].strip() if len(lines) > 7 else ""
        return cls(pid, port, status)
