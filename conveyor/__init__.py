"""Conveyor: long-running, rate-limited AI agent tasks on PostgreSQL.

The names below are imported when first used, not with the package: a program that needs
only a part (the embedded server, the settings, the CLI's parser) does not pay for loading
the rest -- nor, at its exit, for tearing it down.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from conveyor.errors import (
    ConveyorError,
    DatabaseUnavailable,
    InvalidTask,
    InvalidTransition,
    PermanentFailure,
    TaskNotFound,
    Throttled,
    UnknownAgent,
)

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.queue import Child, ChildResult, NewTask, Spawn, TaskRecord
    from conveyor.states import AttemptStatus, TaskStatus
    from conveyor.task import Task

_LAZY = {
    "App": "conveyor.app",
    "NewTask": "conveyor.queue",
    "Spawn": "conveyor.queue",
    "Child": "conveyor.queue",
    "ChildResult": "conveyor.queue",
    "TaskRecord": "conveyor.queue",
    "AttemptStatus": "conveyor.states",
    "TaskStatus": "conveyor.states",
    "Task": "conveyor.task",
}

__all__ = [
    "App",
    "AttemptStatus",
    "Child",
    "ChildResult",
    "ConveyorError",
    "DatabaseUnavailable",
    "InvalidTask",
    "InvalidTransition",
    "NewTask",
    "PermanentFailure",
    "Spawn",
    "Task",
    "TaskNotFound",
    "TaskRecord",
    "TaskStatus",
    "Throttled",
    "UnknownAgent",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'conveyor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next look-up is a plain one
    return value
