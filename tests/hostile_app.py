"""The App of tests/test_outcomes.py's real worker process: agents whose outcomes
PostgreSQL cannot store as they are (text from a PDF holds NUL characters)."""

from __future__ import annotations

import os

from conveyor import App, Task

app = App()


@app.agent("nul_result", max_attempts=1)
async def nul_result(task: Task) -> dict[str, str]:
    return {"text": "page 1\x00page 2"}


@app.agent("nul_error", max_attempts=1)
async def nul_error(task: Task) -> None:
    raise ValueError("cannot parse 'x\x00y'")


@app.agent("fine")
async def fine(task: Task) -> dict[str, int]:
    return {"pid": os.getpid()}
