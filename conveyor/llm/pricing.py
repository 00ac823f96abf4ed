"""What a model call cost, in US dollars, from its token usage.

Prices come from `genai-prices` (a maintained table of providers' published prices,
bundled with the package, so no network is needed), except for the models given in
CONVEYOR_LLM_PRICES, which win:

    CONVEYOR_LLM_PRICES='{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}'

A model neither knows gives no cost (None, stored as NULL: unknown is not free), and one
warning per model and process, so that a log is not flooded by every attempt.

`genai_prices` takes about half a second to import: it is imported on the first price
asked for, so a worker whose agents report no usage never pays for it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from conveyor.log import fields
from conveyor.settings import SettingsError

log = logging.getLogger(__name__)

PRICES_VARIABLE = "CONVEYOR_LLM_PRICES"
MTOK = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / MTOK


def parse_prices(text: str | None) -> dict[str, Price]:
    """CONVEYOR_LLM_PRICES: a JSON object of model -> {input_per_mtok, output_per_mtok}."""
    if text is None or not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{PRICES_VARIABLE} is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise SettingsError(f"{PRICES_VARIABLE} must be a JSON object of model -> prices")
    prices = {}
    for model, entry in raw.items():
        prices[model] = _price(model, entry)
    return prices


def _price(model: str, entry: Any) -> Price:
    keys = {"input_per_mtok", "output_per_mtok"}
    if not isinstance(entry, dict) or set(entry) != keys:
        raise SettingsError(
            f"{PRICES_VARIABLE}[{model!r}] must be "
            '{"input_per_mtok": <number>, "output_per_mtok": <number>}'
        )
    values = []
    for key in sorted(keys):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise SettingsError(f"{PRICES_VARIABLE}[{model!r}].{key} must be a number >= 0")
        values.append(Decimal(str(value)))
    return Price(input_per_mtok=values[0], output_per_mtok=values[1])


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
