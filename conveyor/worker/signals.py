"""The events an idle lane of the exchange waits on, and the wait for the first of them.

An idle lane waits for whichever comes first of four events (an outcome, another lane's
progress, a stop, new work or a free slot) or its poll interval. With asyncio.Event that
takes a task per event, asyncio.wait, then cancelling the three that lost and waiting for
each to end: several turns of the loop, on the path of every task an idle worker starts
(a NOTIFY to its claim). A Signal is an asyncio.Event that also calls back a waiter of
`first_set`, which waits on one future: the set() that wakes it resolves that future, and
the lane runs at the loop's next turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Signal(asyncio.Event):
    """An asyncio.Event (wait(), is_set(), clear() as ever) whose set() also calls the
    callbacks of whoever waits on it through first_set()."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        if self.is_set():
            return  # nobody waits through first_set() on a set Signal: it returns at once
        super().set()
        for callback in self._callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` when this Signal is set (first_set: until it returns)."""
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        self._callbacks.remove(callback)


async def first_set(signals: list[Signal], within: float | None) -> bool:
    """Wait until one of `signals` is set, or `within` seconds pass (None: no limit).
    True if a signal was set (or already was), False if the time ran out."""
    if any(s.is_set() for s in signals):
        return True
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[bool] = loop.create_future()

    def wake(value: bool = True) -> None:
        if not woken.done():
            woken.set_result(value)

    timer = None if within is None else loop.call_later(within, wake, False)
    for s in signals:
        s.add_callback(wake)
    try:
        return await woken
    finally:
        if timer is not None:
            timer.cancel()
        for s in signals:
            s.remove_callback(wake)
