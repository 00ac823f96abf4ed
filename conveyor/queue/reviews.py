"""Each agent's review threshold (`review_below`): declared in code, set at run time.

A result whose `confidence` is below its agent's threshold is marked for review when its
task completes (the trigger in conveyor/sql/functions/reviews.sql). The code's value
(`App.agent(..., review_below=0.8)`, default 0.9) is a default, like the limits: an
operator's value (`conveyor reviews threshold AGENT 0.8`, `PUT
/api/agents/{agent}/review-threshold`) wins until it is reset, and applies to the next
completion, in every worker, without a restart. 0 reviews nothing; 1 reviews everything
short of certainty.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import isfinite

from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, UnknownAgent
from conveyor.sql import Queries

Q = Queries("reviews")

DEFAULT_REVIEW_BELOW = 0.9


def check_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not isfinite(value):
        raise InvalidTask(f"review_below must be a number between 0 and 1, not {value!r}")
    if not 0 <= value <= 1:
        raise InvalidTask(f"review_below must be between 0 and 1, not {value}")
    return float(value)


async def register(conn: Connection, thresholds: Mapping[str, float]) -> None:
    """The thresholds an App declares, by agent (registered agents only)."""
    if not thresholds:
        return
    names = sorted(thresholds)
    await conn.execute(
        Q.agents_register_review_below,
        {"names": names, "review_below": [float(thresholds[n]) for n in names]},
    )


async def set_threshold(conn: Connection, agent: str, review_below: float) -> DictRow:
    cur = await conn.execute(
        Q.agents_set_review_below, {"name": agent, "review_below": check_threshold(review_below)}
    )
    row = await cur.fetchone()
    if row is None:
        raise UnknownAgent([agent])
    return row


async def reset_threshold(conn: Connection, agent: str) -> DictRow:
    cur = await conn.execute(Q.agents_reset_review_below, {"name": agent})
    row = await cur.fetchone()
    if row is None:
        raise UnknownAgent([agent])
    return row


async def thresholds(conn: Connection) -> list[DictRow]:
    cur = await conn.execute(Q.agents_review_below)
    return await cur.fetchall()
