"""Conveyor: long-running, rate-limited AI agent tasks on PostgreSQL."""

from conveyor.app import App
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
from conveyor.queue import NewTask, TaskRecord
from conveyor.states import AttemptStatus, TaskStatus
from conveyor.task import Task

__all__ = [
    "App",
    "AttemptStatus",
    "ConveyorError",
    "DatabaseUnavailable",
    "InvalidTask",
    "InvalidTransition",
    "NewTask",
    "PermanentFailure",
    "Task",
    "TaskNotFound",
    "TaskRecord",
    "TaskStatus",
    "Throttled",
    "UnknownAgent",
]
