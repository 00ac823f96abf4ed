"""The locks in ``data_dir``: ``lock`` serialises starting, stopping and initialising across
processes; ``attach.lock`` counts the processes using the server (a shared flock each)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from conveyor.db.embedded.layout import EmbeddedPostgresError
from conveyor.db.embedded.processes import poll


@contextlib.contextmanager
def flock(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive flock on ``path``; the kernel releases it if we die."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:

        def try_lock() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        if not poll(try_lock, timeout, interval=0.02):
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


class Attachment:
    """This process's claim on the server: a shared flock on ``attach.lock``, held from
    :meth:`attach` to :meth:`detach`.  The kernel drops the locks of a dead process, even a
    SIGKILLed one, so the count of users can't go stale."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._pid = 0

    @property
    def held(self) -> bool:
        """Whether this instance holds (or, in a forked child, inherited) the shared lock."""
        return self._fd is not None

    @property
    def inherited(self) -> bool:
        """Whether the lock was taken by the process we were forked from, not by us."""
        return self._pid != os.getpid()

    def attach(self) -> None:
        """Hold a shared lock on attach.lock: "this process uses the server"."""
        if self._fd is not None and not self.inherited:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        # Exclusive locks on attach.lock are only taken briefly under data_dir/lock, which the
        # caller holds, so this cannot block.
        fcntl.flock(fd, fcntl.LOCK_SH)
        self._fd, self._pid = fd, os.getpid()

    def detach(self) -> None:
        if self._fd is not None:
            if not self.inherited:
                # Unlock explicitly: a forked child sharing the descriptor would otherwise keep
                # the lock -- and the server -- alive after we close it.
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None

    def forget(self) -> None:
        """Drop the lock without unlocking it: a forked child's (its parent owns the lock),
        or one whose folder is gone."""
        self._fd = None

    def others_attached(self) -> bool:
        """Whether anyone else -- another process, or another instance in this one -- holds a
        shared lock on attach.lock.  Call detached, under data_dir/lock."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
