"""The App `conveyor up` runs: the document agents, and a few small agents to play with.

invoice, contract, document   the document agents (conveyor.agents.documents): PDF in,
                              validated structured data out; offline unless
                              CONVEYOR_LLM_MODEL names a model
echo    returns its payload
sleep   sleeps payload["seconds"] (default 1), then returns how long it slept
flaky   fails with probability payload["p"] (default 0.3), to show retries

`enqueue_demo_documents` makes the demo batch of an empty database: four invoices and two
contracts from the sample generator (conveyor.testing.samples), stored and submitted as
`conveyor submit` would. The PDFs ship in `conveyor/demo_documents/` (24 KB), so that the
demo needs neither reportlab nor a network; `python -m conveyor.demo` draws them again.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conveyor import App, Task
from conveyor.agents.documents import declare_document_agents

app = App()
declare_document_agents(app)

DEMO_INVOICES = 4
DEMO_CONTRACTS = 2
DEMO_DOCUMENTS = Path(__file__).parent / "demo_documents"
DEMO_AGENTS = {"invoice-0004.pdf": "document"}  # the others go to the agent of their kind


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


async def enqueue_demo_documents(app: App, say: Callable[[str], None] = print) -> list[int]:
    """Store the demo documents and enqueue a task for each (one invoice goes to
    `document`, which classifies it first). Returns the task ids."""
    from conveyor.documents.submit import submit_files

    ids = []
    for path in sorted(DEMO_DOCUMENTS.glob("*.pdf")):
        agent = DEMO_AGENTS.get(path.name) or path.name.split("-")[0]
        (submitted,) = await submit_files(app, [path], agent=agent)
        ids.append(submitted.task_id)
        say(
            f"demo: {path.name} stored as {submitted.document.sha256[:12]}..., "
            f"task {submitted.task_id} for agent {agent}"
        )
    return ids


def write_demo_documents(folder: Path = DEMO_DOCUMENTS) -> list[Path]:
    """Draw the demo documents again (needs reportlab: pip install 'conveyor[samples]')."""
    from conveyor.testing.samples import make_contract, make_invoice

    samples = [make_invoice(seed) for seed in range(1, DEMO_INVOICES + 1)]
    samples += [make_contract(seed, pages=3) for seed in range(1, DEMO_CONTRACTS + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for sample in samples:
        path = folder / sample.name
        path.write_bytes(sample.pdf)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_demo_documents():
        print(written)
