"""The files of ``data_dir``: the folder itself (and, when root, the server user's way in),
the cluster made once by initdb, the password and the recorded port."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
import time
from pathlib import Path

from conveyor.db.embedded.binaries import install_for, run_tool
from conveyor.db.embedded.layout import (
    DB_USER,
    INIT_DIR,
    PGDATA,
    PWFILE,
    EmbeddedPostgresError,
)
from conveyor.db.embedded.osuser import SERVER_OS_USER, ServerUser, give_to
from conveyor.db.embedded.processes import kill_all, server_processes

logger = logging.getLogger(__name__)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to ``path`` with mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def prepare(data_dir: Path, user: ServerUser | None) -> ServerUser | None:
    """Create ``data_dir``; when root, find the server user (``user`` if already found) and
    check it can get in.  Returns the server user, None when we are not root."""
    created = not data_dir.exists()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return user
    if user is None:
        user = ServerUser.ensure(SERVER_OS_USER)
    # data_dir is ours: let (only) the server user's group through it.
    st = data_dir.stat()
    if st.st_gid != user.gid or not st.st_mode & stat.S_IXGRP:
        os.chown(data_dir, -1, user.gid)
        mode = 0o710 if created else stat.S_IMODE(st.st_mode) | stat.S_IXGRP
        data_dir.chmod(mode)
    user.check_can_reach(data_dir, "the data folder")
    user.check_can_reach(install_for(data_dir / PGDATA).bin_dir, "the PostgreSQL binaries in")
    return user


def initialize(data_dir: Path, user: ServerUser | None, timeout: float) -> str | None:
    """initdb, once: into .pgdata-init, then renamed into place (a killed initdb leaves no
    half-made cluster behind).  Returns the new superuser's password, None if the cluster
    already existed.  Called under data_dir/lock."""
    pgdata = data_dir / PGDATA
    if (pgdata / "PG_VERSION").exists():
        return None
    if pgdata.exists():
        if any(pgdata.iterdir()):
            raise EmbeddedPostgresError(
                f"{pgdata} exists but is not a PostgreSQL cluster (no PG_VERSION); move it away"
            )
        pgdata.rmdir()
    init_dir = data_dir / INIT_DIR
    pwfile = data_dir / PWFILE
    # A leftover from a process killed during initdb, whose postgres may still run.
    kill_all(server_processes(init_dir), 5.0)
    shutil.rmtree(init_dir, ignore_errors=True)
    init_dir.mkdir(mode=0o700)
    password = secrets.token_urlsafe(24)
    write_private(pwfile, password + "\n")
    give_to(user, init_dir, pwfile)
    install = install_for(init_dir)
    logger.info("embedded PostgreSQL %d: initialising %s", install.major, pgdata)
    started = time.monotonic()
    locale = ["--locale=C"]
    if install.major >= 17:  # Unicode-aware ctype, binary sort, no dependency on libc
        locale += ["--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
    try:
        run_tool(
            [install.exe("initdb"), "-D", str(init_dir), "-U", DB_USER,
             f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=peer",
             "--encoding=UTF8", *locale],
            timeout=timeout, cwd=data_dir, user=user,
        )  # fmt: skip
    finally:
        pwfile.unlink(missing_ok=True)
    write_private(data_dir / "password", password + "\n")
    init_dir.rename(pgdata)
    logger.debug("embedded PostgreSQL: initdb took %.2fs", time.monotonic() - started)
    return password


def read_password(data_dir: Path) -> str:
    try:
        return (data_dir / "password").read_text().strip()
    except FileNotFoundError:
        raise EmbeddedPostgresError(
            f"{data_dir / 'password'} is missing, so the database in {data_dir / PGDATA} "
            f"can't be reached; restore it, or move {data_dir} away to start afresh"
        ) from None


def read_port(data_dir: Path) -> int | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return int((data_dir / "port").read_text())
    return None


def record_port(data_dir: Path, port: int) -> None:
    """Keep ``port`` as the server's (for stable URLs across restarts), if it is new."""
    if read_port(data_dir) != port:
        write_private(data_dir / "port", f"{port}\n")
