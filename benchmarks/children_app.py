"""The App that the worker processes of bench_children.py run: a parent that fans out to
ten children and adds up their answers once they have all ended.

    CONVEYOR_DATABASE_URL=... BENCH_CHILDREN_RUNS=/tmp/runs.log \\
    python -m conveyor.cli worker --app children_app:app --concurrency 16

(with this folder on PYTHONPATH). Every run of a parent's agent after its children is
appended to BENCH_CHILDREN_RUNS as one line, "task attempt pid", by the process that ran
it (O_APPEND: lines from several processes do not mix), so the benchmark counts how often
a parent really ran after its children, whatever the database says.
"""

from __future__ import annotations

import asyncio
import os
import random

from conveyor import App, Child, Spawn, Task

app = App()
CHILDREN = 10


@app.agent("bench_parent", lease_seconds=2, max_attempts=100)
async def bench_parent(task: Task) -> object:
    children = await task.children()
    if not children:
        return Spawn([Child("bench_child", {"i": i}, key=f"c{i}") for i in range(CHILDREN)])
    line = f"{task.id} {task.attempt} {os.getpid()}\n".encode()
    fd = os.open(os.environ["BENCH_CHILDREN_RUNS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    task.report_usage(model="bench-model", input_tokens=50, output_tokens=10)
    return {"sum": sum(c.result["i"] for c in children), "children": len(children)}


@app.agent("bench_child", lease_seconds=2, max_attempts=100)
async def bench_child(task: Task) -> dict[str, int]:
    await asyncio.sleep(random.uniform(0.002, 0.02))
    task.report_usage(model="bench-model", input_tokens=100, output_tokens=20)
    return {"i": int(task.payload["i"])}
