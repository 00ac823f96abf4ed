"""The queue's operations: enqueue, claim, finish, renew, sweep, cancel, retry, prune.

Plain async functions over a connection; each is one statement of `sql/queue.sql` (the
sweeper's lock and its sweep share one transaction). The modules, by who calls them:

- `records`: the data that goes in and out (NewTask, ClaimedTask, Outcome, TaskRecord, ...);
- `validation`: clear errors for bad input; `enqueue`: a batch in one statement, or by COPY;
- `agents`: registration and limits; `exchange`: the worker's claim, finish, renew, sweep;
- `tasks`: read, list, cancel, retry, prune; `external_jobs`: what callbacks need;
- `children`: child tasks (Spawn, Child), their checks, reading and cancelling families.

Every name is here too, so `from conveyor.queue import X` and `queue.X` are the interface.
"""

from __future__ import annotations

from conveyor.queue.agents import (
    agent_limits,
    check_agents,
    register_agents,
    report_throttled,
    reset_limits,
    set_limits,
)
from conveyor.queue.children import (
    MAX_DEPTH,
    Child,
    InvalidSpawn,
    Spawn,
    cancel_tree,
    check_spawn,
    children_of,
    spawn_json,
)
from conveyor.queue.enqueue import COPY_CHUNK, COPY_THRESHOLD, enqueue_many
from conveyor.queue.exchange import (
    UNSTORABLE_RESULT,
    _outcome_arrays,  # benchmarks/finish_cost.py times the arrays a finish sends
    claim,
    claim_alone,
    finish,
    finish_and_claim,
    renew_leases,
    storable,
    sweep,
    sweep_expired,
)
from conveyor.queue.external_jobs import attempt_for_callback, callback_key, set_run_id
from conveyor.queue.records import (
    OUTCOMES,
    AgentRegistration,
    AttemptOutcome,
    AttemptRecord,
    ChildrenSummary,
    ChildResult,
    Claim,
    ClaimedTask,
    FinishResult,
    NewTask,
    Outcome,
    TaskRecord,
)
from conveyor.queue.tasks import cancel, get_task, list_tasks, prune, retry
from conveyor.queue.validation import (
    INT32_MAX,
    MAX_DELAY_SECONDS,
    MAX_PAYLOAD_BYTES,
    PRIORITY_MAX,
    PRIORITY_MIN,
)

__all__ = [
    "COPY_CHUNK",
    "COPY_THRESHOLD",
    "INT32_MAX",
    "MAX_DELAY_SECONDS",
    "MAX_DEPTH",
    "MAX_PAYLOAD_BYTES",
    "OUTCOMES",
    "PRIORITY_MAX",
    "PRIORITY_MIN",
    "UNSTORABLE_RESULT",
    "AgentRegistration",
    "AttemptOutcome",
    "AttemptRecord",
    "Child",
    "ChildResult",
    "ChildrenSummary",
    "Claim",
    "ClaimedTask",
    "FinishResult",
    "InvalidSpawn",
    "NewTask",
    "Outcome",
    "Spawn",
    "TaskRecord",
    "_outcome_arrays",
    "agent_limits",
    "attempt_for_callback",
    "callback_key",
    "cancel",
    "cancel_tree",
    "check_agents",
    "check_spawn",
    "children_of",
    "claim",
    "claim_alone",
    "enqueue_many",
    "finish",
    "finish_and_claim",
    "get_task",
    "list_tasks",
    "prune",
    "register_agents",
    "renew_leases",
    "report_throttled",
    "reset_limits",
    "retry",
    "set_limits",
    "set_run_id",
    "spawn_json",
    "storable",
    "sweep",
    "sweep_expired",
]
