"""The Conveyor App that benchmark worker processes run.

    CONVEYOR_DATABASE_URL=... python -m conveyor.cli worker --app apps:app --concurrency 16

(with this folder on PYTHONPATH). The harness in bench_queue.py also imports it to enqueue,
so the enqueuing side and the workers declare the same agent.
"""

from __future__ import annotations

from timing import dump_at_exit, record

from conveyor import App, Task

app = App()


@app.agent("noop")
async def noop(task: Task) -> None:
    record(task.payload)


# The CLI owns the worker's main loop; it returns normally after SIGTERM has drained the
# worker, so an exit hook is the place to hand the start times to the harness.
dump_at_exit()
