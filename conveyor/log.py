"""Structured logs on the standard library: one line per event, as text or JSON.

log.info("task failed", extra=fields(task_id=17, attempt=2))
2026-11-29T23:59:01.123Z INFO conveyor.worker task failed task_id=17 attempt=2
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_FIELDS = "conveyor_fields"


def fields(**values: Any) -> dict[str, dict[str, Any]]:
    """The `extra=` of a log call carrying key-value fields."""
    return {_FIELDS: values}


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = getattr(record, _FIELDS, {})
        pairs = " ".join(f"{k}={_text(v)}" for k, v in extra.items())
        line = f"{_timestamp(record)} {record.levelname} {record.name} {record.getMessage()}"
        if pairs:
            line = f"{line} {pairs}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            **getattr(record, _FIELDS, {}),
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def _text(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (" " in text or not text) else text


def configure(log_format: str = "text", level: int | str = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger("conveyor")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    # The driver's pool reports failed reconnections; keep them, in the same format.
    driver = logging.getLogger("psycopg")
    driver.handlers[:] = [handler]
    driver.setLevel(logging.WARNING)
    driver.propagate = False
