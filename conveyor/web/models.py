"""The API's request and response bodies."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, create_model

from conveyor.queue import AttemptRecord, TaskRecord
from conveyor.states import TaskStatus

Priority = Annotated[int, Field(ge=-32768, le=32767)]
Int32 = Annotated[int, Field(ge=0, le=2**31 - 1)]

# pydantic's JSON parser refuses deeper documents, and its serializer cannot write much
# deeper ones back (a task stored with a deeper payload could never be shown).
MAX_JSON_DEPTH = 200


def storable_text(value: str) -> str:
    """Refuse, as a 422, the strings PostgreSQL would refuse with an error (a 500): text
    and jsonb cannot hold NUL, and a lone surrogate (JSON's "\\ud800") is not UTF-8."""
    if "\x00" in value:
        raise ValueError("contains a NUL character (\\u0000), which PostgreSQL cannot store")
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError("contains a lone surrogate, which is not UTF-8") from None
    return value


def storable_json(value: Any) -> Any:
    """The same for every string and key of a JSON value, and a depth that can be written
    back. Walked with a stack, not recursively (json.loads accepts ~1000 levels), and only
    containers are stacked: a 1 MiB payload takes about as long as json.dumps."""
    if isinstance(value, str):
        storable_text(value)
    stack: list[tuple[Any, int]] = [(value, 0)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth == MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            for key in item:
                storable_text(key)
            item = item.values()
        for child in item:
            if isinstance(child, str):
                storable_text(child)
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return value


# PostgreSQL stores timestamps that Python cannot read back: a time of the year 1 or 9999
# with an offset can fall outside Python's years 1 to 9999 in UTC, or in the session's
# time zone (so a day of margin).
_EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
_LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)


def storable_time(value: datetime) -> datetime:
    """A time PostgreSQL takes and Python reads back, in UTC: PostgreSQL refuses offsets
    of 16 hours or more, which ISO 8601 and Python allow (up to 23:59)."""
    if not _EARLIEST <= value <= _LATEST:
        raise ValueError("out of range: pick a time between the years 1 and 9999")
    return value.astimezone(UTC)


Text = Annotated[str, AfterValidator(storable_text)]
Json = Annotated[Any, AfterValidator(storable_json)]
Timestamp = Annotated[AwareDatetime, AfterValidator(storable_time)]


class TaskCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: Text = Field(min_length=1, max_length=100)
    payload: Json = Field(default_factory=dict, description="any JSON value")
    priority: Priority = 0
    estimated_tokens: Int32 | None = None
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=255)
    run_after: Timestamp | None = None
    max_attempts: Annotated[int, Field(ge=1, le=1000)] | None = None
    tenant: Text | None = Field(default=None, max_length=255)
    labels: dict[Text, Text] | None = None


def _fields_of(record: type[Any], *, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields of a queue record (a dataclass) for the model that shows it: the same
    names, order and types, each one required (a response always has every key)."""
    types = get_type_hints(record)
    return {
        field.name: (types[field.name], ...)
        for field in dataclasses.fields(record)
        if field.name not in leave_out
    }


# A response shows a record as it is: its fields come from the record, not from a second
# list of them that could drift. (The type checker is shown plain models: it cannot follow
# create_model.)
if TYPE_CHECKING:
    _AttemptFields = BaseModel
    _TaskFields = BaseModel
else:
    # An attempt is shown inside its task: without the task's id.
    _AttemptFields = create_model(
        "_AttemptFields", **_fields_of(AttemptRecord, leave_out=frozenset({"task_id"}))
    )
    _TaskFields = create_model(
        "_TaskFields", **_fields_of(TaskRecord, leave_out=frozenset({"attempt_history"}))
    )


class AttemptOut(_AttemptFields):
    @classmethod
    def of(cls, record: AttemptRecord) -> AttemptOut:
        return cls.model_validate(record, from_attributes=True)


class TaskOut(_TaskFields):
    attempt_history: list[AttemptOut]

    @classmethod
    def of(cls, record: TaskRecord) -> TaskOut:
        return cls.model_validate(record, from_attributes=True)


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int
    llm_usd: float
    compute_usd: float
    total_usd: float


class Progress(BaseModel):
    """A parent's children by status: `done` completed, `failed` failed or cancelled."""

    total: int
    done: int
    failed: int
    running: int
    queued: int


class TaskSummary(BaseModel):
    id: int
    agent: str
    status: TaskStatus
    priority: int
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    parent_id: int | None = Field(description="the task that spawned it; null if none did")
    root_id: int | None = Field(description="the top of its tree; null if nobody spawned it")
    children: Progress | None = Field(description="its children's progress; null if none")
    cost: Usage = Field(description="its own attempts' tokens and cost")
    tree_cost: Usage = Field(
        description="its own and all its descendants' (a document's and its chunks'); "
        "the same as `cost` for a task without children"
    )


class TaskPage(BaseModel):
    items: list[TaskSummary]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page"
    )


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class Health(BaseModel):
    status: str
    database: str
