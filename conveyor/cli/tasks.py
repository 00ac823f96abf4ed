"""Commands on tasks: enqueue, submit, list, show, cancel, retry."""

from __future__ import annotations

import argparse
import json

from conveyor import queue
from conveyor.app import App
from conveyor.cli.common import CliError, settings_from
from conveyor.cli.output import record, show_table, took, when
from conveyor.cli.progress import wait_for


async def cmd_enqueue(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(args.payload) if args.payload is not None else None
    except ValueError as exc:
        raise CliError(f"the payload is not JSON: {exc}") from None
    async with App(settings=settings_from(args)) as app:
        task_id = await app.enqueue_async(
            args.agent,
            payload,
            priority=args.priority,
            idempotency_key=args.key,
            run_after=args.delay,
        )
    print(task_id)
    return 0


async def cmd_submit(args: argparse.Namespace) -> int:
    from conveyor.documents import submit_files

    if not args.agent:
        raise CliError("name the agent that processes the files: --agent NAME")
    async with App(settings=settings_from(args)) as app:
        submitted = await submit_files(
            app,
            args.files,
            agent=args.agent,
            priority=args.priority,
            idempotency_key=args.key,
            rerun=args.rerun,
        )
        for item in submitted:
            note = " (already submitted: the same task)" if item.duplicate else ""
            print(f"{item.name or item.document.sha256[:12]}: task {item.task_id}{note}")
        if not args.wait:
            return 0
        outcomes = await wait_for(app, [item.task_id for item in submitted])
    failed = [task_id for task_id, status in outcomes.items() if status != "completed"]
    return 1 if failed else 0


async def cmd_tasks(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app, app.connection() as conn:
        rows = await queue.list_tasks(
            conn,
            status=args.status,
            agent=args.agent,
            limit=args.limit,
            top_level=args.top_level,
        )
    if args.json:
        print(json.dumps([dict(r) for r in rows], indent=2, default=str))
        return 0
    show_table(
        "",
        ["id", "agent", "status", "priority", "attempts", "created", "took", "error"],
        [
            [
                r["id"],
                r["agent"],
                r["status"],
                r["priority"],
                r["attempts"],
                when(r["created_at"]),
                took(r["created_at"], r["finished_at"]),
                (r["error"] or "").splitlines()[0][:60] if r["error"] else "",
            ]
            for r in rows
        ],
        numeric={"id", "priority", "attempts", "took"},
    )
    return 0


async def cmd_task(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app:
        task = await app.get_task_async(args.id)
    print(json.dumps(record(task), indent=2, default=str))
    return 0


async def cmd_cancel(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app:
        task = await app.cancel_async(args.id)
    print(f"task {task.id}: {task.status}")
    return 0


async def cmd_retry(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app:
        task = await app.retry_async(args.id)
    print(f"task {task.id}: {task.status}")
    return 0
