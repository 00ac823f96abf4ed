"""Configuration, read from the environment (the CLI's flags override it).

CONVEYOR_DATABASE_URL      a PostgreSQL URL; unset: an embedded server under CONVEYOR_HOME
CONVEYOR_HOME              local state (embedded database, documents);
                           default ~/.conveyor, or /var/lib/conveyor for root
CONVEYOR_API_TOKEN         bearer token for the HTTP API; unset: no authentication
CONVEYOR_POLL_INTERVAL     seconds between polls of an idle worker (default 1)
CONVEYOR_LISTEN            0 turns LISTEN/NOTIFY off, behind a transaction pooler (default 1)
CONVEYOR_SWEEP_INTERVAL    seconds between sweeps for expired leases (default 2)
CONVEYOR_SHUTDOWN_TIMEOUT  seconds running tasks get to finish on SIGTERM (default 30)
CONVEYOR_PRUNE_AFTER       e.g. 30d: workers delete tasks finished longer ago (default: keep)
CONVEYOR_LOG_FORMAT        text or json (default text)
CONVEYOR_PUBLIC_URL        where external jobs reach the web app for their callbacks
                           (default http://127.0.0.1:8000)

Durations accept a unit: 500ms, 45s, 10m, 12h, 30d.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from conveyor.errors import ConveyorError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}


class SettingsError(ConveyorError):
    pass


def parse_duration(text: str) -> float:
    """'30d' -> 2592000.0; a bare number is seconds."""
    match = _DURATION.match(text)
    if not match:
        raise SettingsError(f"not a duration: {text!r} (try 45s, 10m, 12h or 30d)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def default_home() -> Path:
    # The embedded PostgreSQL runs as its own OS user and opens up the permissions of the
    # folders above its data, so root's state goes to /var/lib rather than under /root.
    if os.geteuid() == 0:
        return Path("/var/lib/conveyor")
    return Path.home() / ".conveyor"


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse_duration(raw)
    except SettingsError:
        raise SettingsError(f"{name}={raw!r} is not a number of seconds") from None


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name}={raw!r}: expected 1/0, true/false, yes/no or on/off")


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    home: Path = field(default_factory=default_home)
    api_token: str | None = None
    poll_interval: float = 1.0
    listen: bool = True
    sweep_interval: float = 2.0
    shutdown_timeout: float = 30.0
    prune_after: float | None = None
    log_format: str = "text"
    public_url: str = "http://127.0.0.1:8000"

    @classmethod
    def from_env(cls) -> Settings:
        prune = os.environ.get("CONVEYOR_PRUNE_AFTER")
        log_format = os.environ.get("CONVEYOR_LOG_FORMAT", "text")
        if log_format not in {"text", "json"}:
            raise SettingsError(f"CONVEYOR_LOG_FORMAT={log_format!r}: expected text or json")
        home = os.environ.get("CONVEYOR_HOME")
        return cls(
            database_url=os.environ.get("CONVEYOR_DATABASE_URL") or None,
            home=Path(home).expanduser() if home else default_home(),
            api_token=os.environ.get("CONVEYOR_API_TOKEN") or None,
            poll_interval=_env_float("CONVEYOR_POLL_INTERVAL", 1.0),
            listen=_env_bool("CONVEYOR_LISTEN", True),
            sweep_interval=_env_float("CONVEYOR_SWEEP_INTERVAL", 2.0),
            shutdown_timeout=_env_float("CONVEYOR_SHUTDOWN_TIMEOUT", 30.0),
            prune_after=parse_duration(prune) if prune else None,
            log_format=log_format,
            public_url=os.environ.get("CONVEYOR_PUBLIC_URL") or "http://127.0.0.1:8000",
        )
