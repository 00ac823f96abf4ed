"""What a model call cost, in US dollars, from its token usage.

Prices come from `genai-prices` (a maintained table of providers' published prices,
bundled with the package, so no network is needed), except for the models given in
CONVEYOR_LLM_PRICES, which win (their format: conveyor.model_prices):

    CONVEYOR_LLM_PRICES='{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}'

A model neither knows gives no cost (None, stored as NULL: unknown is not free), and one
warning per model and process, so that a log is not flooded by every attempt.

`genai_prices` takes about half a second to import: it is imported on the first price
asked for, so a worker whose agents report no usage never pays for it.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable, Mapping
from decimal import Decimal

from conveyor.log import fields

# The overrides' format lives below settings, which checks it at start; named here too, for
# the pricer's callers.
from conveyor.model_prices import PRICES_VARIABLE, Price, parse_prices

__all__ = ["PRICES_VARIABLE", "Price", "Pricer", "parse_prices"]

log = logging.getLogger(__name__)


class Pricer:
    """Prices usage by model: the overrides first, then genai-prices."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self.overrides = dict(overrides or {})
        self._warned: set[str] = set()
        self._lock = threading.Lock()  # agents in threads may ask at the same time

    def needs_loading(self, models: Iterable[str]) -> bool:
        """Whether pricing these models would import genai-prices first (half a second:
        the worker does that in a thread rather than in its event loop)."""
        return "genai_prices" not in sys.modules and any(m not in self.overrides for m in models)

    @staticmethod
    def load() -> None:
        import genai_prices  # noqa: F401

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> Decimal | None:
        """The cost of this usage, or None when the model's price is not known."""
        if model is None:
            return None
        override = self.overrides.get(model)
        if override is not None:
            return override.cost(input_tokens, output_tokens)
        from genai_prices import Usage, calc_price

        try:
            found = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens), model)
        except LookupError:
            self._warn_once(model)
            return None
        return found.total_price

    def total(self, usage_by_model: Mapping[str, tuple[int, int]]) -> Decimal | None:
        """The cost of an attempt's calls, model by model; None if any model is unknown
        (a partial sum would pass for the whole)."""
        total = Decimal(0)
        for model, (input_tokens, output_tokens) in usage_by_model.items():
            cost = self.cost(model, input_tokens, output_tokens)
            if cost is None:
                return None
            total += cost
        return total

    def attempt_cost(self, usage_by_model: Mapping[str, tuple[int, int]]) -> float | None:
        """What an attempt's model calls cost, for its `llm_cost_usd`: None when there were
        no calls, a model has no known price, or pricing itself failed (a pricing bug must
        not lose the attempt's outcome)."""
        if not usage_by_model:
            return None
        try:
            cost = self.total(usage_by_model)
        except Exception as exc:
            log.warning("could not price an attempt", extra=fields(error=str(exc)))
            return None
        return None if cost is None else float(cost)

    def _warn_once(self, model: str) -> None:
        with self._lock:
            if model in self._warned:
                return
            self._warned.add(model)
        log.warning(
            "no price known for this model: its calls' cost is left empty "
            f"(set {PRICES_VARIABLE} to give one)",
            extra=fields(model=model),
        )
