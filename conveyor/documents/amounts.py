"""What a document's text prints, counted before any rule has read it: the amounts on a
line, and the lines that look like an item row. For the token estimate of a document
(`conveyor.agents.llm_budget.estimate_tokens`), made where a task is enqueued, and for the
regions hybrid sends (`conveyor.agents.regions`)."""

from __future__ import annotations

import re

# An amount as an item row prints it: with cents, or finer (unit prices to 4 places), in
# any grouping ("1.234,56", "1'234.50", "12.5000"), or any number a currency sign stands
# beside ("$3,500", "41 €"). Plain integers are not amounts here (quantities, years,
# postcodes and phone numbers are integers too), nor are a date's or an address's dotted
# parts ("12.10.2020", "78.46.77.91"). Not values.AMOUNT: that one reads the amounts of a
# document whose number style the rules have voted on, integers among them, and stops at
# 2 decimals; this one only counts, before any rule has read the document.
_MONEY = re.compile(
    r"(?<![\w.,])-?(?:\d{1,3}(?:[,.' \u00a0]\d{3})+|\d+)[.,]\d{2,4}(?!\w|[.,]\d)"
    r"|[$€£¥]\s?-?\d[\d.,']*"
    r"|(?<![\w.,])\d[\d.,']*\s?[$€£¥]"
)


def item_rows(text: str) -> int:
    """Lines of `text` that look like an item row: two or more amounts on one line (a
    price and its amount, or a quantity with cents). A count of what the answer will
    restate, for the estimate (`estimate_tokens`); a sums line ("Net 87.39 Tax 16.61")
    counts too, and a row whose amount wraps onto the next line does not."""
    return sum(amounts_on(line) >= 2 for line in text.split("\n"))


def amounts_on(line: str) -> int:
    """How many amounts of money `line` prints (cents, or a currency sign beside a number)."""
    return len(_MONEY.findall(line))
