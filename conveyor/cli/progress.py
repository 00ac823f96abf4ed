"""Waiting for tasks to finish (`submit --wait`), each shown as it finishes."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from conveyor.app import App
from conveyor.states import FINISHED


async def wait_for(app: App, task_ids: list[int]) -> dict[int, str]:
    """Wait until every task is finished, each shown as it finishes: a progress bar on a
    terminal, plain lines otherwise. Driven by the database's NOTIFYs (the same events as
    /api/events); every task is read once LISTEN is up, and again after a reconnect (the
    NOTIFYs sent meanwhile are lost), so that no completion is missed."""
    from conveyor.listener import Listener

    wanted = set(task_ids)
    changed: set[int] = set()
    reread_all = asyncio.Event()
    woken = asyncio.Event()

    def on_event(event: dict[str, Any]) -> None:
        ids = event.get("ids")
        if isinstance(ids, list):
            mine = wanted.intersection(ids)
            changed.update(mine)
            if mine:
                woken.set()
        elif "count" in event:  # a statement too large to name its tasks
            reread_all.set()
            woken.set()

    def on_reconnect() -> None:
        reread_all.set()
        woken.set()

    settings = app.settings
    listener = Listener((await app.database()).url, on_event, on_reconnect=on_reconnect)
    listening = asyncio.create_task(listener.run()) if settings.listen else None
    if listening is not None:
        await listener.wait_listening(10.0)
    # Without LISTEN (CONVEYOR_LISTEN=0) this polls; with it, the poll is only a safety net.
    poll = settings.poll_interval if listening is None else 10.0
    finished: dict[int, str] = {}
    with progress_view(len(task_ids)) as view:
        try:
            pending = list(task_ids)
            while True:
                for task_id in pending:
                    task = await app.get_task_async(task_id)
                    if task.status in FINISHED and task_id not in finished:
                        finished[task_id] = task.status
                        view.finished(task_id, task.status, task.error)
                if len(finished) == len(task_ids):
                    break
                woken.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), poll)
                if reread_all.is_set() or not woken.is_set():
                    reread_all.clear()
                    pending = [t for t in task_ids if t not in finished]
                else:
                    pending = [t for t in changed if t not in finished]
                changed.clear()
        finally:
            if listening is not None:
                listening.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listening
            await listener.close()
    return finished


class _Lines:
    """Progress as plain lines (not a terminal: scripts and logs read these)."""

    def finished(self, task_id: int, status: str, error: str | None) -> None:
        detail = f": {error.splitlines()[0]}" if error else ""
        print(f"task {task_id}: {status}{detail}", flush=True)


class _Bar(_Lines):
    """Progress as a bar (rich), each finished task printed above it."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
        )
        self.counts: dict[str, int] = {}
        self.bar = self.progress.add_task("tasks", total=total, tally="")

    def finished(self, task_id: int, status: str, error: str | None) -> None:
        from rich.markup import escape

        colour = {"completed": "green", "failed": "red"}.get(status, "yellow")
        detail = escape(f": {error.splitlines()[0]}") if error else ""
        self.progress.console.print(f"task {task_id}: [{colour}]{status}[/]{detail}")
        self.counts[status] = self.counts.get(status, 0) + 1
        tally = " · ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        self.progress.update(self.bar, advance=1, tally=tally)


@contextlib.contextmanager
def progress_view(total: int) -> Iterator[_Lines]:
    if not sys.stdout.isatty():
        yield _Lines()
        return
    view = _Bar(total)
    with view.progress:
        yield view
