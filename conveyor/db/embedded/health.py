"""Whether a server is ours and healthy: a real connection that asks for its data directory,
and what ``postmaster.pid`` says about a server found running."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conveyor.db.embedded.layout import EmbeddedPostgresError
from conveyor.db.embedded.processes import (
    PidFile,
    binaries_gone,
    is_postmaster_of,
    pid_alive,
    poll,
)


def probe(url: str, port: int, pgdata: Path) -> str | None:
    """None if our cluster (``pgdata``) answers at ``url`` (on ``port``); else why not."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - a base dependency
        raise EmbeddedPostgresError("the embedded PostgreSQL needs psycopg") from exc
    try:
        # A plain connection, not one through conveyor.db.credentials: the URL is the one
        # this server was made with, its password included, and rotating credentials are
        # refused without a server of one's own (App: "credentials are for a server of
        # your own"), so no provider can apply here.
        with psycopg.connect(url, connect_timeout=2, autocommit=True) as conn:
            row = conn.execute("select current_setting('data_directory')").fetchone()
    except psycopg.Error as exc:
        return str(exc).strip() or type(exc).__name__
    if row is None or Path(row[0]).resolve() != pgdata.resolve():
        return f"port {port} is served by another cluster ({row and row[0]})"
    return None


def check_existing(
    pidfile: PidFile, pgdata: Path, timeout: float, probe_port: Callable[[int], str | None]
) -> str | None:
    """None if the server named by postmaster.pid is ours, alive and answering (checked with
    ``probe_port``); else why not."""
    if not pid_alive(pidfile.pid):
        return "its postmaster is gone"
    if not is_postmaster_of(pidfile.pid, pgdata):
        return f"pid {pidfile.pid} is now another program"
    if binaries_gone(pidfile.pid):
        # The package was upgraded, or the environment that started it removed: adopting
        # it would fail later, at the first migration that needs plpgsql.
        return "the binaries it was started from were removed or replaced since"

    # A server still starting up (e.g. crash recovery) gets the full timeout to be ready.
    def settled() -> bool:
        now = PidFile.read(pgdata)
        return now is None or now.pid != pidfile.pid or now.status not in ("", "starting")

    poll(settled, timeout, interval=0.05)
    now = PidFile.read(pgdata)
    if now is None or now.pid != pidfile.pid or not pid_alive(pidfile.pid):
        return "it exited"
    if now.status != "ready" or now.port is None:
        return f"its status is {now.status!r}"
    return probe_port(now.port)
