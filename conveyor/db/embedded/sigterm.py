"""Turning SIGTERM into an exit that runs atexit hooks, for plain programs."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType


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
