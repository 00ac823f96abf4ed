"""Built-in demo agents, run by `conveyor up` until the document agents arrive.

echo    returns its payload
sleep   sleeps payload["seconds"] (default 1), then returns how long it slept
flaky   fails with probability payload["p"] (default 0.3), to show retries
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from conveyor import App, Task

app = App()


@app.agent("echo")
async def echo(task: Task) -> Any:
    return task.payload


@app.agent("sleep", lease_seconds=30)
async def sleep(task: Task) -> dict[str, float]:
    seconds = float((task.payload or {}).get("seconds", 1.0))
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@app.agent("flaky", max_attempts=5, backoff_base=0.5)
def flaky(task: Task) -> dict[str, int]:
    if random.random() < float((task.payload or {}).get("p", 0.3)):
        raise RuntimeError(f"flaky failure on attempt {task.attempt}")
    return {"attempt": task.attempt}
