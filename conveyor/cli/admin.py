"""Commands on the system as a whole: migrate, status, limits, prune."""

from __future__ import annotations

import argparse
import json
from typing import Any

from conveyor import queue
from conveyor.app import App
from conveyor.cli.common import settings_from
from conveyor.cli.output import show_table
from conveyor.documents.stores.prune import prune_documents


async def cmd_migrate(args: argparse.Namespace) -> int:
    from conveyor.db.migrate import migrate
    from conveyor.db.pool import MIGRATION_STATEMENT_TIMEOUT

    async with App(settings=settings_from(args), auto_migrate=False) as app:
        db = await app.database()
        # A migration may rewrite a large table: it gets longer than other statements.
        async with db.connection(statement_timeout=MIGRATION_STATEMENT_TIMEOUT) as conn:
            applied = await migrate(conn)
    print(
        f"applied {len(applied)} migration(s): {', '.join(applied)}"
        if applied
        else "the schema is up to date"
    )
    return 0


# The columns of `status`: every task status, in the order a task goes through them.
_STATUS_COLUMNS = ("enqueued", "processing", "completed", "failed", "cancelled")


async def cmd_status(args: argparse.Namespace) -> int:
    from conveyor import metrics

    async with App(settings=settings_from(args)) as app, app.connection() as conn:
        status = await metrics.overview(conn)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
        return 0
    agents = status["agents"]
    show_table(
        "Tasks by status (finished: all history, pruned tasks included)",
        ["agent", "enqueued", "processing", "completed", "failed", "cancelled"],
        [[a["agent"], *(a["tasks"][s] for s in _STATUS_COLUMNS)] for a in agents],
        numeric=set(_STATUS_COLUMNS),
    )
    print()
    show_table(
        "In flight, limits and their use in the current window",
        [
            "agent",
            "in flight",
            "queued",
            "concurrent",
            "tokens/window",
            "requests/window",
            "cost today",
        ],
        [
            [
                a["agent"],
                a["tasks"]["processing"],
                a["tasks"]["enqueued"],
                _usage(a["usage"]["concurrent"], a["limits"]["max_concurrent"], None),
                _usage(a["usage"]["tpm"], a["limits"]["max_tpm"], None),
                _usage(a["usage"]["rpm"], a["limits"]["max_rpm"], None),
                f"${a['cost_today_usd']:.4f}",
            ]
            for a in agents
        ],
        numeric={"in flight", "queued", "cost today"},
    )
    today = status["cost_today"]
    print(
        f"\ncost today (tasks created since {today['since']:%Y-%m-%d %H:%M} UTC): "
        f"${today['total_usd']:.4f} (LLM ${today['llm_usd']:.4f}, "
        f"compute ${today['compute_usd']:.4f})"
    )
    return 0


async def cmd_prune(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app, app.connection() as conn:
        deleted = await queue.prune(conn, older_than=args.older_than, batch=args.batch)
        documents = await prune_documents(await app.database())  # none of whose tasks is left
    print(f"deleted {deleted} finished task(s) older than {args.older_than:g} s")
    print(f"deleted {documents} document(s) no task refers to")
    return 0


async def cmd_limits(args: argparse.Namespace) -> int:
    async with App(settings=settings_from(args)) as app, app.connection() as conn:
        if args.action == "set":
            await queue.set_limits(
                conn,
                args.agent,
                max_concurrent=args.max_concurrent,
                max_tpm=args.max_tpm,
                max_rpm=args.max_rpm,
                window_seconds=args.window,
            )
        elif args.action == "reset":
            await queue.reset_limits(conn, args.agent)
        rows = await queue.agent_limits(conn)
    show_table(
        "",
        ["agent", "concurrent", "tokens/window", "requests/window", "window", "set by", "throttle"],
        [
            [
                r["name"],
                _usage(r["running"], r["max_concurrent"], r["learned_concurrency"]),
                _usage(r["tokens"], r["max_tpm"], r["learned_tpm"]),
                _usage(r["requests"], r["max_rpm"], None),
                f"{r['window_seconds']:g}s",
                r["limits_source"],
                _throttle(r),
            ]
            for r in rows
        ],
    )
    return 0


def _usage(used: int, limit: int | None, learned: int | None) -> str:
    """'3 / 4': used of the limit; a learned cap (from throttling) shows too."""
    text = f"{used} / {limit}" if limit is not None else f"{used} / -"
    return f"{text} (learned {learned})" if learned is not None else text


def _throttle(row: Any) -> str:
    """What throttling does to the agent now: a pause (a 429's Retry-After) and the factor
    on its request limit; the learned token budget shows in its own column."""
    from conveyor.metrics import throttling

    state = throttling(row)
    parts = []
    if state["paused_for_seconds"] > 0:
        parts.append(f"paused {state['paused_for_seconds']:.1f}s")
    if state["request_factor"] < 1:
        parts.append(f"requests x{state['request_factor']:.2f}")
    return ", ".join(parts) or "-"
