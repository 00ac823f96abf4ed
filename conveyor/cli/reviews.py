"""`conveyor reviews`: the review queue's backlog, and each agent's review threshold."""

from __future__ import annotations

import argparse
import json

from conveyor.app import App
from conveyor.cli.common import settings_from
from conveyor.cli.output import show_table
from conveyor.errors import InvalidTask
from conveyor.queue import reviews as thresholds
from conveyor.reviews import queue as reviews


async def cmd_reviews(args: argparse.Namespace) -> int:
    """The backlog by agent and tenant (oldest first), or `threshold` shown / set / reset."""
    async with App(settings=settings_from(args)) as app, app.connection() as conn:
        if args.action == "threshold":
            if (args.reset or args.review_below is not None) and not args.agent:
                raise InvalidTask("name the agent: conveyor reviews threshold AGENT VALUE")
            if args.reset:
                await thresholds.reset_threshold(conn, args.agent)
            elif args.review_below is not None:
                await thresholds.set_threshold(conn, args.agent, args.review_below)
            rows = await thresholds.thresholds(conn)
            show_table(
                "Results less confident than this wait for a review",
                ["agent", "review below", "in code", "set by"],
                [
                    [
                        r["name"],
                        f"{r['review_below']:g}",
                        f"{r['code_review_below']:g}",
                        r["review_source"],
                    ]
                    for r in rows
                ],
            )
            return 0
        groups = await reviews.backlog(conn)
    if args.json:
        print(json.dumps(groups, indent=2, default=str))
        return 0
    show_table(
        f"Pending reviews: {sum(g['pending'] for g in groups)}",
        ["agent", "tenant", "pending", "oldest"],
        [
            [g["agent"], g["tenant"] or "-", g["pending"], f"{g['oldest']:%Y-%m-%d %H:%M:%S %Z}"]
            for g in groups
        ],
        numeric={"pending"},
    )
    return 0
