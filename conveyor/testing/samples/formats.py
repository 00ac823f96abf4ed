"""How amounts and dates are printed, in the styles real documents use."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

MONTHS = (
    "January February March April May June July August September October November December"
).split()


@dataclass(frozen=True)
class MoneyStyle:
    """1,234.56 / 1.234,56 / 1'234.56 / 1 234,56, with the currency's sign before or after."""

    thousands: str
    decimal: str
    sign: str  # "$", "€", "EUR", "CHF", ...
    sign_after: bool = False
    decimals: int = 2

    def number(self, amount: Decimal) -> str:
        quantum = Decimal(1).scaleb(-self.decimals)
        value = amount.quantize(quantum, rounding=ROUND_HALF_UP)
        negative = value < 0
        whole, _, frac = f"{abs(value):f}".partition(".")
        groups: list[str] = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        groups.insert(0, whole)
        text = self.thousands.join(groups)
        if self.decimals:
            text += self.decimal + frac
        return f"-{text}" if negative else text

    def money(self, amount: Decimal) -> str:
        number = self.number(amount)
        if self.sign_after:
            return f"{number} {self.sign}"
        # Symbols hug the number ($12.00); codes take a space (CHF 12.00).
        gap = " " if self.sign[-1:].isalpha() else ""
        return f"{self.sign}{gap}{number}"


def us_money(sign: str = "$") -> MoneyStyle:
    return MoneyStyle(",", ".", sign)


def eu_money(sign: str = "€", after: bool = True) -> MoneyStyle:
    return MoneyStyle(".", ",", sign, sign_after=after)


DATE_STYLES: dict[str, Callable[[datetime.date], str]] = {
    "iso": lambda d: d.isoformat(),
    "us": lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    "dmy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",
    "dot": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    "long_us": lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    "long_eu": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    "short_us": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "short_eu": lambda d: f"{d.day:02d}-{MONTHS[d.month - 1][:3]}-{d.year}",
}


def format_date(date: datetime.date, style: str) -> str:
    return DATE_STYLES[style](date)


NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
TENS = {
    20: "twenty",
    30: "thirty",
    40: "forty",
    50: "fifty",
    60: "sixty",
    70: "seventy",
    80: "eighty",
    90: "ninety",
}


def in_words(n: int) -> str:
    """Small numbers as contracts spell them: 24 -> 'twenty-four'."""
    if n < len(NUMBER_WORDS):
        return NUMBER_WORDS[n]
    tens, ones = divmod(n, 10)
    if tens * 10 in TENS:
        return TENS[tens * 10] + (f"-{NUMBER_WORDS[ones]}" if ones else "")
    return str(n)
