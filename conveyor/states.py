"""The task state machine, written down once.

```
             claim                 succeeded
  enqueued ─────────► processing ───────────► completed
     ▲  │               │  │  │
     │  │ cancel        │  │  └─ failed, no retries left ─► failed ──┐
     │  ▼               │  │                                         │ retry
     │ cancelled ◄──────┘  └─ failed with retries left, throttled,   │ (on request)
     │  │      cancel         lease lost, handed back ─► enqueued    │
     └──┴────────────────────────────────────────────────────────────┘
```

The migration mirrors `TRANSITIONS` in the `task_transitions` table, and a trigger refuses
any other change of `tasks.status`; `tests/test_schema.py` checks both agree.
"""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    ENQUEUED = "enqueued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AttemptStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    THROTTLED = "throttled"
    LOST = "lost"
    CANCELLED = "cancelled"
    SPAWNED = "spawned"  # it ended by spawning children; its task waits (docs/children.md)


TRANSITIONS: frozenset[tuple[TaskStatus, TaskStatus]] = frozenset(
    {
        (TaskStatus.ENQUEUED, TaskStatus.PROCESSING),  # claimed by a worker
        (TaskStatus.ENQUEUED, TaskStatus.CANCELLED),
        (TaskStatus.PROCESSING, TaskStatus.COMPLETED),
        (TaskStatus.PROCESSING, TaskStatus.ENQUEUED),  # retry, throttled, lost, handed back
        (TaskStatus.PROCESSING, TaskStatus.FAILED),  # no retries left
        (TaskStatus.PROCESSING, TaskStatus.CANCELLED),
        (TaskStatus.FAILED, TaskStatus.ENQUEUED),  # retry on request
        (TaskStatus.CANCELLED, TaskStatus.ENQUEUED),  # retry on request
    }
)

#: A task in one of these states changes only when someone asks (retry), never by itself.
FINISHED: frozenset[TaskStatus] = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)
