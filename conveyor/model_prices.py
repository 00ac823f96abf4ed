"""CONVEYOR_LLM_PRICES: the prices of models given in configuration, which win over the
bundled table (conveyor.llm.pricing uses them):

    CONVEYOR_LLM_PRICES='{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}'

Here, below both, so that settings can refuse a bad value at start without importing the
LLM client's package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

PRICES_VARIABLE = "CONVEYOR_LLM_PRICES"
MTOK = Decimal(1_000_000)


class BadPrices(ValueError):
    """A CONVEYOR_LLM_PRICES that is not a JSON object of model -> prices."""


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
        raise BadPrices(f"{PRICES_VARIABLE} is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadPrices(f"{PRICES_VARIABLE} must be a JSON object of model -> prices")
    prices = {}
    for model, entry in raw.items():
        prices[model] = _price(model, entry)
    return prices


def _price(model: str, entry: Any) -> Price:
    keys = {"input_per_mtok", "output_per_mtok"}
    if not isinstance(entry, dict) or set(entry) != keys:
        raise BadPrices(
            f"{PRICES_VARIABLE}[{model!r}] must be "
            '{"input_per_mtok": <number>, "output_per_mtok": <number>}'
        )
    values = []
    for key in sorted(keys):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise BadPrices(f"{PRICES_VARIABLE}[{model!r}].{key} must be a number >= 0")
        values.append(Decimal(str(value)))
    return Price(input_per_mtok=values[0], output_per_mtok=values[1])
