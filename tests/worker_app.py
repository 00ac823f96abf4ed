"""The App that the multi-process tests run in real `conveyor worker` processes."""

from __future__ import annotations

import asyncio
import os
import time

from conveyor import App, Child, Spawn, Task

app = App()


@app.agent("noop")
async def noop(task: Task) -> dict[str, int]:
    return {"pid": os.getpid()}


@app.agent("slow_first", lease_seconds=2)
async def slow_first(task: Task) -> dict[str, int]:
    """Hangs on its first attempt (long enough to be killed), returns on the next."""
    if task.attempt == 1:
        await asyncio.sleep(float(task.payload.get("first_attempt_seconds", 3600)))
    return {"pid": os.getpid(), "attempt": task.attempt}


@app.agent("sleepy", lease_seconds=3)
async def sleepy(task: Task) -> dict[str, int]:
    await asyncio.sleep(float(task.payload.get("seconds", 0.01)))
    return {"pid": os.getpid()}


@app.agent("chaos", lease_seconds=2, max_attempts=50)
async def chaos(task: Task) -> dict[str, int]:
    """A short task, for the chaos run: workers die around it at random."""
    await asyncio.sleep(float(task.payload.get("seconds", 0.002)))
    return {"pid": os.getpid(), "attempt": task.attempt}


@app.agent("capped", max_concurrent=4)
async def capped(task: Task) -> dict[str, float]:
    """Records when it really ran, to measure the overlap of attempts from outside."""
    started = time.time()
    await asyncio.sleep(float(task.payload.get("seconds", 0.03)))
    return {"started": started, "ended": time.time()}


@app.agent("budgeted", max_tpm=10_000, window_seconds=2)
async def budgeted(task: Task) -> None:
    """Spends exactly what it reserved (1,000 tokens), on a scaled two-second minute."""
    await asyncio.sleep(0.01)
    task.report_usage(model="sim", input_tokens=800, output_tokens=200)


@app.agent("pages")
def pages(task: Task) -> dict[str, int]:
    """A stand-in document agent: reports the page count it was given."""
    return {"pages": int(task.payload["pages"])}


# Child tasks (tests/test_children_processes.py, benchmarks/bench_children.py).


def _gate_open(path: str | None) -> bool:
    return path is None or os.path.exists(path)


@app.agent("fan_parent", lease_seconds=2, max_attempts=50)
async def fan_parent(task: Task) -> object:
    """Spawns `n` fan_child children (waiting first for `parent_gate`, if given, on its
    first attempt), then adds up what they return."""
    children = await task.children()
    if not children:
        while task.attempt == 1 and not _gate_open(task.payload.get("parent_gate")):
            await asyncio.sleep(0.01)
        extra = task.payload.get("child_payload", {})
        return Spawn(
            [
                Child("fan_child", {**extra, "i": i}, key=f"c{i}")
                for i in range(int(task.payload.get("n", 10)))
            ]
        )
    return {
        "sum": sum(c.result["i"] for c in children),
        "children": len(children),
        "attempt": task.attempt,
        "pid": os.getpid(),
    }


@app.agent("fan_child", lease_seconds=2, max_attempts=50)
async def fan_child(task: Task) -> dict[str, int]:
    """Waits for its `gate` file, if given, then returns its index and its process."""
    while not _gate_open(task.payload.get("gate")):
        await asyncio.sleep(0.01)
    await asyncio.sleep(float(task.payload.get("seconds", 0.002)))
    return {"i": int(task.payload["i"]), "pid": os.getpid()}
