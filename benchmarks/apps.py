"""The Conveyor App that benchmark worker processes run.

    CONVEYOR_DATABASE_URL=... python -m conveyor.cli worker --app apps:app --concurrency 16

(with this folder on PYTHONPATH). Its agent records when it starts (see timing.py); the
harness enqueues through an App of its own (subjects.py) declaring the same agent name.
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
