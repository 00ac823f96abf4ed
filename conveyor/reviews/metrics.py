"""What the review queue says about the machine: backlog, time to review, fields corrected
per agent, and accuracy as reviewed per field (the machine's value was right, or a person
corrected it): ground truth that a benchmark of the extractors can use."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from conveyor.db.pool import Connection
from conveyor.sql import Queries

Q = Queries("reviews")


async def review_metrics(
    conn: Connection, *, since: datetime | None = None, until: datetime | None = None
) -> dict[str, Any]:
    """Per agent: pending, oldest, reviewed, corrected, fields corrected, time to review
    (p50/p90 seconds), and per field: reviewed, right, accuracy, mean confidence."""
    window = {"since": since, "until": until}
    cur = await conn.execute(Q.reviews_metrics, window)
    agents: dict[str, dict[str, Any]] = {}
    for row in await cur.fetchall():
        agents[row["agent"]] = {
            "pending": row["pending"],
            "oldest_pending": row["oldest"],
            "reviewed": row["reviewed"],
            "corrected": row["corrected"],
            "fields_corrected": row["fields_corrected"],
            "time_to_review_p50_s": row["p50_seconds"],
            "time_to_review_p90_s": row["p90_seconds"],
            "fields": {},
        }
    cur = await conn.execute(Q.review_fields_accuracy, window)
    for row in await cur.fetchall():
        entry = agents.setdefault(
            row["agent"],
            {
                "pending": 0,
                "oldest_pending": None,
                "reviewed": 0,
                "corrected": 0,
                "fields_corrected": 0,
                "time_to_review_p50_s": None,
                "time_to_review_p90_s": None,
                "fields": {},
            },
        )
        entry["fields"][row["field"]] = {
            "reviewed": row["reviewed"],
            "right": row["right"],
            "accuracy": row["right"] / row["reviewed"] if row["reviewed"] else None,
            "mean_confidence": row["mean_confidence"],
        }
    return {
        "pending": sum(a["pending"] for a in agents.values()),
        "agents": agents,
    }
