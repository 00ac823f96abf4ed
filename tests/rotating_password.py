"""The credentials provider of the rotation tests, for the worker processes too
(CONVEYOR_DATABASE_CREDENTIALS=tests.rotating_password:current): the password the test
last wrote to CONVEYOR_TEST_PASSWORD_FILE, valid for CONVEYOR_TEST_PASSWORD_SECONDS (so
that pooled connections are retired and opened again, with the newest password, within
seconds)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def current() -> dict[str, Any]:
    password = Path(os.environ["CONVEYOR_TEST_PASSWORD_FILE"]).read_text().strip()
    lifetime = float(os.environ.get("CONVEYOR_TEST_PASSWORD_SECONDS", "3600"))
    return {"password": password, "expires_at": time.time() + lifetime}


def write(path: Path, password: str) -> None:
    """Replace the password atomically: a reader sees the old one or the new one."""
    scratch = path.with_suffix(".new")
    scratch.write_text(password)
    scratch.replace(path)
