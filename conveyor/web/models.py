"""The API's request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from conveyor.queue import AttemptRecord, TaskRecord
from conveyor.states import AttemptStatus, TaskStatus

Priority = Annotated[int, Field(ge=-32768, le=32767)]
Int32 = Annotated[int, Field(ge=0, le=2**31 - 1)]


class TaskCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=100)
    payload: Any = Field(default_factory=dict, description="any JSON value")
    priority: Priority = 0
    estimated_tokens: Int32 | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=255)
    run_after: AwareDatetime | None = None
    max_attempts: Annotated[int, Field(ge=1, le=1000)] | None = None
    tenant: str | None = Field(default=None, max_length=255)
    labels: dict[str, str] | None = None


class AttemptOut(BaseModel):
    id: int
    attempt: int
    worker_id: str | None
    run_id: str | None
    trace_id: str | None
    status: AttemptStatus
    started_at: datetime
    finished_at: datetime | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    llm_cost_usd: float | None
    compute_cost_usd: float | None
    error: str | None
    late_outcome: str | None

    @classmethod
    def of(cls, record: AttemptRecord) -> AttemptOut:
        return cls.model_validate(record, from_attributes=True)


class TaskOut(BaseModel):
    id: int
    agent: str
    status: TaskStatus
    priority: int
    payload: Any
    result: Any
    error: str | None
    idempotency_key: str | None
    estimated_tokens: int | None
    attempts: int
    max_attempts: int
    run_after: datetime
    lease_expires_at: datetime | None
    locked_by: str | None
    tenant: str | None
    labels: dict[str, str]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempt_history: list[AttemptOut]

    @classmethod
    def of(cls, record: TaskRecord) -> TaskOut:
        values = {name: getattr(record, name) for name in cls.model_fields}
        values["attempt_history"] = [AttemptOut.of(a) for a in record.attempt_history]
        return cls.model_validate(values)


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
