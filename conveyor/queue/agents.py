"""Agents as the database knows them: registration, the limits an operator sets, what
throttling taught, and the check that a task's agent exists."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from psycopg.rows import DictRow

from conveyor.db.pool import Connection
from conveyor.errors import InvalidTask, UnknownAgent
from conveyor.queue.records import AgentRegistration
from conveyor.queue.validation import INT32_MAX, check_int
from conveyor.sql import queue as Q


async def register_agents(conn: Connection, agents: Sequence[AgentRegistration]) -> None:
    """Upsert the agents an App declares, in name order (the order claims lock them in)."""
    if not agents:
        return
    ordered = sorted(agents, key=lambda a: a.name)
    await conn.execute(
        Q.agents_register,
        {
            "names": [a.name for a in ordered],
            "max_attempts": [a.max_attempts for a in ordered],
            "lease_seconds": [a.lease_seconds for a in ordered],
            "max_concurrent": [a.max_concurrent for a in ordered],
            "max_tpm": [a.max_tpm for a in ordered],
            "max_rpm": [a.max_rpm for a in ordered],
            "window_seconds": [a.window_seconds for a in ordered],
            "compute_usd_per_hour": [a.compute_usd_per_hour for a in ordered],
        },
    )


async def set_limits(
    conn: Connection,
    agent: str,
    *,
    max_concurrent: int | None = None,
    max_tpm: int | None = None,
    max_rpm: int | None = None,
    window_seconds: float | None = None,
) -> None:
    """Set an agent's limits as an operator: None keeps a value, 0 removes that limit."""
    for name, value in (
        ("max_concurrent", max_concurrent),
        ("max_tpm", max_tpm),
        ("max_rpm", max_rpm),
    ):
        if value is not None:
            check_int(name, value, 0, INT32_MAX)
    if window_seconds is not None and not 0 < window_seconds <= 86400:
        raise InvalidTask("the window must be between 0 and 86400 seconds")
    cur = await conn.execute(
        Q.agents_set_limits,
        {
            "name": agent,
            "max_concurrent": max_concurrent,
            "max_tpm": max_tpm,
            "max_rpm": max_rpm,
            "window_seconds": window_seconds,
        },
    )
    if await cur.fetchone() is None:
        raise UnknownAgent([agent])


async def reset_limits(conn: Connection, agent: str) -> None:
    """Back to the limits declared in code; forget what throttling taught."""
    cur = await conn.execute(Q.agents_reset_limits, {"name": agent})
    if await cur.fetchone() is None:
        raise UnknownAgent([agent])


async def agent_limits(conn: Connection) -> list[DictRow]:
    """Every agent's limits, the throttling state, and the current window's usage."""
    cur = await conn.execute(Q.agents_limits)
    return await cur.fetchall()


async def report_throttled(conn: Connection, retry_after: Mapping[str, float]) -> list[DictRow]:
    """The endpoint throttled these agents, and said when to come back (seconds): learn
    their token budgets from what their windows hold, pause them until then, and shrink
    their other limits (once per cooldown: the rows say `shrunk`)."""
    agents = sorted(retry_after)
    cur = await conn.execute(
        Q.agents_throttled,
        {"agents": agents, "retry_after": [max(0.0, retry_after[a]) for a in agents]},
    )
    return await cur.fetchall()


async def check_agents(conn: Connection, names: Iterable[str], known: set[str]) -> None:
    """Raise UnknownAgent unless every name is registered; remember the ones that are."""
    wanted = set(names) - known
    if not wanted:
        return
    cur = await conn.execute(Q.agents_known, {"names": sorted(wanted)})
    found = {row["name"] for row in await cur.fetchall()}
    known |= found
    missing = sorted(wanted - found)
    if missing:
        raise UnknownAgent(missing)
