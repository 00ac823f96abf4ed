"""A contract's text made ready for the contract rules: what repeats on every page gone,
quotes straightened, one stream, with its preamble and sentences at hand.

Contracts wrap a clause over lines and pages, so the rules read the text as one stream;
but a page footer ("Source: ACME CORP, 8-K, 3/26/2020", "Page 2 of 9", a lone "4") cut
into a sentence would break it, so lines that repeat on several pages and page numbers
are taken out first. The lines are kept too: party blocks ("Party A (Shipper): ...",
"Company: ...") are laid out one per line.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

QUOTES = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2033": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u00a0": " ",
        "\u00ad": "",  # a soft hyphen is a line-break opportunity, not a character
    }
)
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+\d+(?:\s+(?:of|von|de|sur)\s+\d+)?|seite\s+\d+(?:\s+von\s+\d+)?|"
    r"-?\s*\d{1,3}\s*-?|\d{1,3}\s*/\s*\d{1,3})$",
    re.IGNORECASE,
)
# A line seen this often, and this long, is a running header or footer, not a clause.
_REPEATS = 3
_REPEATED_MIN_CHARS = 12
_MOSTLY_REPEATED = 0.3
# Where the preamble (the sentence naming the agreement, its date and its parties) ends.
_PREAMBLE_END = re.compile(
    r"\b(?:WHEREAS|W\s?I\s?T\s?N\s?E\s?S\s?S\s?E\s?T\s?H|RECITALS?|BACKGROUND|NOW,?\s+THEREFORE|"
    r"IN\s+CONSIDERATION|Preamble|Pr\u00e4ambel|Vorbemerkung|Pr\u00e9ambule|"
    r"The\s+parties\s+(?:hereby\s+)?agree|hereby\s+agree\s+as\s+follows)"
)
PREAMBLE_MAX = 1800
_ORDINAL_DAY = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s+day\s+of\s+([^\W\d_]{3,12}),?\s+(?:in\s+the\s+year\s+)?(\d{4})\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.;]\s+")

# Numbers written out, as contracts write durations and notice periods ("twelve (12)").
_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}  # fmt: skip
WORD_NUMBERS: dict[str, int] = {word: n for n, word in enumerate(_UNITS)}
WORD_NUMBERS.update(_TENS)
WORD_NUMBERS.update({f"{t}-{u}": v + n for t, v in _TENS.items() for n, u in enumerate(_UNITS)
                     if 0 < n < 10})  # fmt: skip
WORD_NUMBERS.update({"a": 1, "an": 1, "one hundred twenty": 120, "one hundred eighty": 180})


def number(token: str) -> int | None:
    """12 for "12", "twelve" or "Twelve"; None for anything else."""
    text = " ".join(token.lower().split())
    if text.isdigit():
        return int(text)
    return WORD_NUMBERS.get(text.replace(" ", "-") if text.count(" ") == 1 else text)


@dataclass
class ContractText:
    flat: str  # the whole text as one stream, single spaces
    lines: list[str] = field(default_factory=list)  # the cleaned lines, in order
    preamble: str = ""  # the flat text up to the recitals (at most PREAMBLE_MAX)

    def sentences(self) -> list[tuple[int, str]]:
        """Every sentence of the stream (ended by a full stop or a semicolon before a
        space), with where it starts."""
        found, start = [], 0
        for end in _SENTENCE_END.finditer(self.flat):
            found.append((start, self.flat[start : end.start() + 1]))
            start = end.end()
        if start < len(self.flat):
            found.append((start, self.flat[start:]))
        return found

    def windows(self, words: tuple[str, ...], before: int, after: int) -> list[tuple[int, str]]:
        """The stretches of the stream around the words that start with one of `words`
        (lower case; overlapping stretches merged), with where each starts: the clause
        patterns run there, not over 200 pages. Found with str.find on the lowered text,
        which is many times faster than a regex scan of the whole stream."""
        spans: list[list[int]] = []
        for at in sorted(self._word_starts(words)):
            start, end = max(0, at - before), at + after
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        return [(start, self.flat[start:end]) for start, end in spans]

    def _word_starts(self, words: tuple[str, ...]) -> list[int]:
        lower = self.flat.lower()
        if len(lower) != len(self.flat):  # a character whose lower case is longer: rare
            return [m.start() for w in words for m in re.finditer(re.escape(w), self.flat, re.I)]
        found = []
        for word in words:
            at = lower.find(word)
            while at >= 0:
                if at == 0 or not lower[at - 1].isalnum():
                    found.append(at)
                at = lower.find(word, at + 1)
        return found

    def sentence_at(self, pos: int) -> str:
        start = max(self.flat.rfind(". ", 0, pos), self.flat.rfind("; ", 0, pos))
        ends = [e for e in (self.flat.find(". ", pos), self.flat.find("; ", pos)) if e >= 0]
        return self.flat[start + 1 if start >= 0 else 0 : min(ends) + 1 if ends else None]


def prepare(text: str) -> ContractText:
    # NFKC first: PDFs print a Greek question mark for a semicolon, ligatures for "fi".
    normal = unicodedata.normalize("NFKC", text).translate(QUOTES)
    lines = [" ".join(line.split()) for line in normal.splitlines()]
    counts = Counter(line for line in lines if len(line) >= _REPEATED_MIN_CHARS)
    repeated = {line for line, n in counts.items() if n >= _REPEATS}
    if sum(counts[line] for line in repeated) > _MOSTLY_REPEATED * len(lines):
        repeated = set()  # the same text again and again is the document, not its footer
    kept = [
        line for line in lines if line and not _PAGE_NUMBER.match(line) and line not in repeated
    ]
    flat = _ORDINAL_DAY.sub(r"\1 \2 \3", " ".join(kept))
    head = flat[:PREAMBLE_MAX]
    end = _PREAMBLE_END.search(head, 40)
    return ContractText(flat=flat, lines=kept, preamble=head[: end.start()] if end else head)
