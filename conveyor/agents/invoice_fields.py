"""What the readers of the invoice's own fields share: the confidence levels they score
by, and whether a text is a label's value rather than prose (`is_value`, which the
hybrid's regions read by too).

The fields are read in invoice_number (the number), invoice_dates (the issue and due
dates) and invoice_currency (the currency). Each is a list of candidates with what speaks
for them (the kind of label, where the value stood), best first; a field's confidence is
its best candidate's, lowered when another candidate of the same strength disagrees.
"""

from __future__ import annotations

from conveyor.agents.values import dates_in

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6


VALUE_WORDS = 4  # a value is a few words; a sentence that holds a date is not one


def value_words(text: str) -> int:
    """Words of `text` beside the dates it prints: a date is one value however many words
    its language writes it in ("1 de mayo de 2025", "3. März 2024")."""
    tokens = dates_in(text)
    for token in tokens:
        text = text.replace(token.text, " ", 1)
    return len(text.split()) + len(tokens)


def is_value(text: str) -> bool:
    """Whether `text` is short enough to be a label's value rather than prose: the rule
    the invoice reader and the hybrid's regions (conveyor.agents.regions) both read by."""
    return value_words(text) <= VALUE_WORDS + 2
