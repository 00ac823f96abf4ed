"""Outcomes on their way to the exchange, and the events that wake its lanes."""

from __future__ import annotations

from conveyor.queue import Outcome
from conveyor.worker.signals import Signal


class Outbox:
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.ready = Signal()  # an outcome is waiting
        self.progress = Signal()  # an exchange ended, or a callback ended an attempt

    def report(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.ready.set()

    def take(self) -> list[Outcome]:
        """Every outcome waiting, for one exchange to write."""
        taken, self.outcomes = self.outcomes, []
        self.ready.clear()
        return taken

    def put_back(self, outcomes: list[Outcome]) -> None:
        """Outcomes an exchange could not write, first in line for the next one."""
        self.outcomes[:0] = outcomes
