"""The server itself: start (adopting a healthy one, cleaning up a broken one), restart,
stop, and sharing it between processes, the last to leave stopping it."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shlex
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from conveyor.db.embedded import datadir, health
from conveyor.db.embedded.binaries import install_for, run_tool
from conveyor.db.embedded.layout import (
    DB_NAME,
    DB_USER,
    HOST,
    LOG_ROTATE_BYTES,
    PGDATA,
    EmbeddedPostgresError,
)
from conveyor.db.embedded.locks import Attachment, flock
from conveyor.db.embedded.osuser import ServerUser, give_to
from conveyor.db.embedded.ports import choose_port, port_free
from conveyor.db.embedded.processes import (
    PidFile,
    is_postmaster_of,
    kill_all,
    kill_postmaster,
    pid_alive,
    poll,
    server_processes,
)

logger = logging.getLogger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server whose files all live in ``data_dir``, listening on 127.0.0.1.

    Args:
        data_dir: a folder dedicated to this server, e.g. ``$CONVEYOR_HOME/postgres``; created
            if missing.  When root, its parents must be searchable by the ``pgserver`` user.
        port: the TCP port; default: the one recorded in ``data_dir/port``, else a free one.
        settings: extra server settings (``-c name=value``) used when *this* process starts
            the server (not when it adopts one already running), e.g. ``{"fsync": "off"}``.
        timeout: seconds allowed for a start or a stop.

    Thread-safe; several processes may use the same ``data_dir`` (see the package docstring).
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        settings: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        # Resolved, so that all processes name the cluster alike (see is_postmaster_of).
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.pgdata = self.data_dir / PGDATA
        self.log_path = self.data_dir / "postgres.log"
        self._requested_port = port
        self._settings = dict(settings or {})
        for name in self._settings:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
                raise ValueError(f"not a PostgreSQL setting name: {name!r}")
        self._timeout = timeout
        self._port: int | None = None
        self._password: str | None = None
        self._attachment = Attachment(self.data_dir / "attach.lock")
        self._atexit_registered = False
        self._mutex = threading.RLock()
        self._server_user: ServerUser | None = None

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
            self._password = datadir.read_password(self.data_dir)
            if self._port is None:  # not started by us: keep the port it runs on, if it does
                pidfile = PidFile.read(self.pgdata)
                self._port = (
                    pidfile.port if pidfile and pidfile.port else datadir.read_port(self.data_dir)
                )
            self._stop_server()
            if self._port is None:
                self._port = self._pick_port()
            # Our own server just released the port; a stranger grabbing it meanwhile is
            # unlikely, but possible: allow a short wait, then fail rather than move.
            port = self._port
            if not poll(lambda: port_free(port), 5.0):
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
                self._attachment.detach()
                return
            with self._locked():
                self._stop_server()
                self._attachment.detach()

    def release(self) -> None:
        """Stop using the server; stop it too if no other process uses it.  Runs at exit."""
        with self._mutex:
            if not self._attachment.held:
                return
            if self._attachment.inherited or not self.data_dir.exists():
                self._attachment.forget()  # a forked child (its parent owns the lock), or gone
                return
            with self._locked():
                self._attachment.detach()
                if self._attachment.others_attached():
                    logger.debug("embedded PostgreSQL: still in use by another process; leaving it")
                else:
                    self._stop_server()

    def is_running(self) -> bool:
        """Whether a server for this data dir answers on its port (a real connection)."""
        pidfile = PidFile.read(self.pgdata)
        if pidfile is None or pidfile.port is None or not pid_alive(pidfile.pid):
            return False
        try:
            self._password = self._password or datadir.read_password(self.data_dir)
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
        self._server_user = datadir.prepare(self.data_dir, self._server_user)
        with flock(self.data_dir / "lock", timeout=2 * self._timeout + 30):
            yield

    def _attach(self) -> None:
        """Count this process as a user of the server (until release, or exit)."""
        self._attachment.attach()
        if not self._atexit_registered:
            atexit.register(self._release_at_exit)
            self._atexit_registered = True

    def _release_at_exit(self) -> None:
        try:
            self.release()
        except Exception:
            logger.exception("embedded PostgreSQL: could not stop the server at exit")

    # ---- setup ----------------------------------------------------------------------------

    def _ensure_initialized(self) -> None:
        """initdb, once (see datadir.initialize).  Called under the lock."""
        password = datadir.initialize(self.data_dir, self._server_user, self._timeout)
        if password is not None:
            self._password = password

    def _pick_port(self) -> int:
        """The port to start on: the requested one, else the recorded one, else a new one."""
        if self._requested_port is not None:
            port = self._requested_port
            if not port_free(port):
                raise EmbeddedPostgresError(f"port {port} on {HOST} is already in use")
        else:
            recorded = datadir.read_port(self.data_dir)
            if recorded is not None and port_free(recorded):
                port = recorded
            else:
                port = choose_port()
                if recorded is not None:
                    logger.warning(
                        "embedded PostgreSQL: port %d is taken by another program; moving to %d",
                        recorded, port,
                    )  # fmt: skip
        datadir.record_port(self.data_dir, port)
        return port

    # ---- running --------------------------------------------------------------------------

    def _url(self, port: int, password: str | None = None) -> str:
        secret = password if password is not None else self._password
        return f"postgresql://{DB_USER}:{secret}@{HOST}:{port}/{DB_NAME}"

    def _probe(self, port: int) -> str | None:
        """None if our cluster answers on ``port``; else why not."""
        return health.probe(self._url(port), port, self.pgdata)

    def _ensure_running(self) -> None:
        """Adopt a healthy server, or clean up and start one.  Called under the lock."""
        self._password = datadir.read_password(self.data_dir)
        pidfile = PidFile.read(self.pgdata)
        if pidfile is not None:
            reason = health.check_existing(pidfile, self.pgdata, self._timeout, self._probe)
            if reason is None:
                assert pidfile.port is not None
                if self._requested_port not in (None, pidfile.port):
                    raise EmbeddedPostgresError(
                        f"the embedded PostgreSQL for {self.data_dir} already runs on port "
                        f"{pidfile.port}, not {self._requested_port}; stop it first"
                    )
                datadir.record_port(self.data_dir, pidfile.port)
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

    def _clean_up(self, pidfile: PidFile | None) -> None:
        """Get rid of a broken or dead server, before starting a new one.

        Kills its postmaster (SIGQUIT, then SIGKILL), then any children a dead postmaster left
        behind -- they would keep the shared memory attached, and the new server would refuse
        to start ("pre-existing shared memory block is still in use") -- and removes
        postmaster.pid: PostgreSQL refuses to start if that names a live process of the server
        user (a recycled pid, or an unreaped zombie), so we don't leave that call to it.
        """
        pid_in_file = pidfile.pid if pidfile is not None else 0
        if pid_alive(pid_in_file) and is_postmaster_of(pid_in_file, self.pgdata):
            kill_postmaster(pid_in_file, 5.0)
        for pid in server_processes(self.pgdata):
            if is_postmaster_of(pid, self.pgdata):
                logger.warning("embedded PostgreSQL: stopping stray server %d", pid)
                kill_postmaster(pid, 5.0)
        leftovers = server_processes(self.pgdata)
        if leftovers:
            logger.warning("embedded PostgreSQL: killing leftover server processes %s", leftovers)
            kill_all(leftovers, 5.0)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)

    def _start_server(self, port: int) -> None:
        """pg_ctl start on ``port``, waiting until it accepts connections."""
        install = install_for(self.pgdata)
        self._rotate_log()
        options = ["-p", str(port), "-c", f"listen_addresses={HOST}",
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
        pidfile = PidFile.read(self.pgdata)
        if pidfile is None:
            return
        pid = pidfile.pid
        if not (pid_alive(pid) and is_postmaster_of(pid, self.pgdata)):
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            return
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)  # what `pg_ctl stop -m fast` sends
        # The postmaster closes its port, then removes postmaster.pid, then exits.
        if not poll(lambda: not pid_alive(pid), self._timeout):
            logger.warning("embedded PostgreSQL: fast shutdown timed out; shutting down hard")
            kill_postmaster(pid, 5.0)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)  # if it didn't get to it
        logger.debug("embedded PostgreSQL: stopped in %.2fs", time.monotonic() - started)

    # ---- subprocesses, log ----------------------------------------------------------------

    def _run(self, args: list[str], timeout: float) -> None:
        """Run a PostgreSQL tool as the server user; raise EmbeddedPostgresError on failure."""
        run_tool(args, timeout=timeout, cwd=self.data_dir, user=self._server_user)

    def _rotate_log(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.log_path.stat().st_size > LOG_ROTATE_BYTES:
                self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        if not self.log_path.exists():
            self.log_path.touch(mode=0o600)
            give_to(self._server_user, self.log_path)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return f"(no server log at {self.log_path})"
        return f"last lines of {self.log_path}:\n" + "\n".join(tail)
