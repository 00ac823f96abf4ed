"""The loop of every background job (sweeper, pruner, vacuumer, rollup folder): run once,
wait about `interval`, again until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from conveyor.db.pool import TRANSIENT_ERRORS
from conveyor.log import fields

log = logging.getLogger(__name__)


async def run_every(
    interval: float, stop: asyncio.Event, once: Callable[[], Awaitable[Any]], *, what: str
) -> None:
    """`once()` every `interval` seconds until `stop` is set. A database that is down or
    a deadlock is logged and tried again next time; the wait has ±25 % jitter, so that the
    jobs of workers started together do not line up."""
    while not stop.is_set():
        try:
            await once()
        except TRANSIENT_ERRORS as exc:
            log.warning(f"{what} failed", extra=fields(error=str(exc).strip()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval * random.uniform(0.75, 1.25))
