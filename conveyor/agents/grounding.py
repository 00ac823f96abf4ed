"""Is what the model answered printed in the document? A check of each field's value.

A model's answer can be well-formed, pass every cross-check, and still be wrong: a date a
day off, a name misspelt, a value from nowhere. What the LLM extractor can check without
another model is whether each value appears in the document's own text, in any of the
forms documents print it:

- a date: any date the text prints, in any of the styles `conveyor.agents.values` reads
  (both readings of an ambiguous 03/04/2026);
- an amount or a quantity: any number the text prints, read in each number style the
  document may use (1,234.56 and 1.234,56 alike), and whole numbers;
- a whole number: printed as such, or in years for a number of months (a term of "two
  (2) years" is 24 months);
- a text (names, addresses, numbers as printed): every word of it is a word of the
  document (so "Acme Ltd, 1 Main St" is found across lines and punctuation). Terms that
  an answer restates in its own words ("Net 30" for "within thirty (30) days") are
  checked by their numbers only;
- a currency code: the code or its sign (€, £, $) is printed; else unknown (a currency is
  often implied by the country);
- a yes/no (auto-renewal): unknown: no one word proves it.

`grounded()` answers True, False or None (cannot tell). A field the model answered but
the text does not show is the likeliest to be wrong, and scores low (see llm.py).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from conveyor.agents.values import (
    NumberStyle,
    amounts_in,
    currencies_in,
    dates_in,
    number_styles,
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DECIMAL = re.compile(r"^-?\d+(\.\d+)?$")
_CODE = re.compile(r"^[A-Z]{3}$")
_WHOLE = re.compile(r"(?<![\d.,])\d+(?![\d])")
_STYLES = (NumberStyle(".", ","), NumberStyle(",", "."), NumberStyle(".", ""))
RESTATED = {"payment_terms", "text"}  # fields answered in the model's words, not the text's


@dataclass(frozen=True)
class Evidence:
    """What a document's text shows: its words, dates, numbers and currencies."""

    words: frozenset[str]
    dates: frozenset[datetime.date]
    numbers: frozenset[Decimal]
    currencies: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Evidence:
        words = frozenset(w.casefold() for w in _WORD.findall(text))
        dates: set[datetime.date] = set()
        numbers: set[Decimal] = set()
        styles = list(dict.fromkeys([*number_styles(text), *_STYLES]))
        # Dates over the text as one line: "on 1" / "March 2025" is one date.
        for token in dates_in(" ".join(text.split())):
            if token.date is not None:
                dates.add(token.date)
            for reading in token.both or ():
                if reading is not None:
                    dates.add(reading)
        for line in text.splitlines():
            for style in styles:
                numbers.update(value for value, _, _ in amounts_in(line, style))
            numbers.update(Decimal(n) for n in _WHOLE.findall(line))
        return cls(words, frozenset(dates), frozenset(numbers), frozenset(currencies_in(text)))


_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _spelled_in(n: int, evidence: Evidence) -> bool:
    """Whether the words of `n` (below 100: "twenty-four") are all words of the text."""
    if not 0 <= n < 100:
        return False
    words = [_ONES[n]] if n < 20 else [_TENS[n // 10 - 2]] + ([_ONES[n % 10]] if n % 10 else [])
    return all(w in evidence.words for w in words)


def grounded(where: str, value: Any, evidence: Evidence) -> bool | None:
    """Whether the text shows `value` (the answer for field `where`); None: cannot tell."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, list):
        verdicts = [grounded(where, item, evidence) for item in value]
        if any(v is False for v in verdicts):
            return False
        return True if any(v for v in verdicts) else None
    if isinstance(value, dict):
        verdicts = [grounded(f"{where}.{k}", v, evidence) for k, v in value.items()]
        if any(v is False for v in verdicts):
            return False
        return True if any(v for v in verdicts) else None
    if isinstance(value, int):
        readings = [value]
        if value % 12 == 0 and "month" in where:
            readings.append(value // 12)  # "two (2) years" for 24 months
        return any(Decimal(n) in evidence.numbers or _spelled_in(n, evidence) for n in readings)
    if isinstance(value, float):
        return Decimal(str(value)) in evidence.numbers
    if not isinstance(value, str):
        return None
    text = value.strip()
    if where.rsplit(".", 1)[-1] in RESTATED:
        numbers = [Decimal(n) for n in _WHOLE.findall(text)]
        return all(n in evidence.numbers for n in numbers) if numbers else None
    if where.rsplit(".", 1)[-1] == "currency" and _CODE.match(text):
        return True if text in evidence.currencies else None
    if _ISO_DATE.match(text):
        try:
            return datetime.date.fromisoformat(text) in evidence.dates
        except ValueError:
            return False
    if _DECIMAL.match(text):
        try:
            number = Decimal(text)
        except InvalidOperation:
            return False
        if number in evidence.numbers:
            return True
        # A number written as text (an invoice number "2024001") is a word of its own.
    words = [w.casefold() for w in _WORD.findall(text)]
    if not words:
        return None
    return all(w in evidence.words for w in words)
