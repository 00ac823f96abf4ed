"""The exceptions Conveyor raises, and the ones agents raise to steer an attempt."""

from __future__ import annotations


class ConveyorError(Exception):
    """Base class of every error Conveyor raises on purpose."""


class InvalidTask(ConveyorError, ValueError):
    """A task was refused before it reached the database: bad payload or out-of-range value."""


class UnknownAgent(InvalidTask):
    """No App has registered an agent of that name in this database."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        listed = ", ".join(repr(n) for n in names)
        super().__init__(
            f"unknown agent {listed}: no App connected to this database declares it "
            "(declare it with @app.agent and start a worker, or check the spelling)"
        )


class TaskNotFound(ConveyorError, LookupError):
    def __init__(self, task_id: object) -> None:
        self.task_id = task_id
        super().__init__(f"no task with id {task_id!r}")


class InvalidTransition(ConveyorError):
    """The task is not in a state that allows what was asked (retry a running task, ...)."""


class DatabaseUnavailable(ConveyorError):
    """PostgreSQL could not be reached (after retrying where retrying is safe)."""


class Throttled(Exception):
    """Raised by an agent when the model endpoint throttled it (HTTP 429).

    The attempt ends 'throttled' and the task goes back to the queue after `retry_after`
    seconds without spending one of its retries.
    """

    def __init__(self, retry_after: float | None = None, message: str = "throttled") -> None:
        self.retry_after = retry_after
        super().__init__(message)


class PermanentFailure(Exception):
    """Raised by an agent to fail the task at once, without the retries it has left."""
