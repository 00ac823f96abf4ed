"""Agents that run as Ray tasks, for tests/test_ray.py (in its process and in real worker
processes). Their functions live at module level so that Ray's workers import them."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from conveyor import App, Task
from conveyor.executors.ray import RayTask

app = App()

#: The declared price of an attempt of ray_spends: 1 CPU at 36 USD/h + 0.5 GiB at 7.2.
SPENDS_RATE = 36.0 + 0.5 * 7.2


def noop(task: Task) -> dict[str, Any]:
    return {"pid": os.getpid(), "task": task.id}


def echoes(task: Task) -> dict[str, Any]:
    """The Task as the Ray task received it (its fields travel as plain values)."""
    return {
        "id": task.id, "agent": task.agent, "payload": task.payload, "attempt": task.attempt,
        "max_attempts": task.max_attempts, "priority": task.priority,
        "created_at": task.created_at.isoformat(), "tenant": task.tenant,
        "labels": task.labels, "estimated_tokens": task.estimated_tokens,
    }  # fmt: skip


def spends(task: Task) -> dict[str, Any]:
    task.report_usage(model="gpt-4o-mini", input_tokens=1200, output_tokens=300)
    task.report_usage(model="gpt-4o-mini", input_tokens=800, output_tokens=100)
    time.sleep(float(task.payload.get("seconds", 0.3)))
    return {"pages": 3}


def raises(task: Task) -> None:
    task.report_usage(model="gpt-4o-mini", input_tokens=500, output_tokens=0)
    raise ValueError("no invoice number on page 3")


def dies_first(task: Task) -> dict[str, int]:
    """The first attempt's process is killed underneath it, as the OOM killer does."""
    if task.attempt == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"attempt": task.attempt}


def beats(task: Task) -> dict[str, int]:
    """Writes the time to payload['heartbeat'] every 50 ms for payload['seconds'] (only on
    the first attempt if payload['first_only']): while the file changes, it runs."""
    beat = Path(task.payload["heartbeat"])
    seconds = float(task.payload.get("seconds", 1.0))
    if task.payload.get("first_only") and task.attempt > 1:
        seconds = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        # Written beside and renamed over: a reader never sees the file truncated and empty.
        fresh = beat.with_suffix(".new")
        fresh.write_text(f"{time.time()} {task.attempt} {os.getpid()}")
        os.replace(fresh, beat)
        time.sleep(0.05)
    return {"attempt": task.attempt, "pid": os.getpid()}


def reads_document(task: Task) -> dict[str, Any]:
    """Reads a stored document by its content address, from the store the payload names
    (a folder every node reaches), as a Ray task on another machine would."""
    import hashlib

    from conveyor.documents.stores import open_store

    path = open_store(task.payload["store"]).local_path(task.payload["sha256"])
    assert path is not None, "a store with no local path"
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pid": os.getpid()}


app.external("ray_noop", RayTask(noop, num_cpus=0.25))
app.external("ray_reads", RayTask(reads_document, num_cpus=0.25))
app.external("ray_echoes", RayTask(echoes, num_cpus=0.25), max_attempts=2)
app.external(
    "ray_spends",
    RayTask(
        spends, num_cpus=1, memory=512 * 1024**2, usd_per_hour={"CPU": 36.0, "memory_gib": 7.2}
    ),
)
app.external("ray_raises", RayTask(raises, num_cpus=0.25), max_attempts=1)
app.external("ray_dies", RayTask(dies_first, num_cpus=0.25), max_attempts=2, backoff_base=0.1)
app.external("ray_beats", RayTask(beats, num_cpus=0.25), lease_seconds=2, backoff_base=0.1)
