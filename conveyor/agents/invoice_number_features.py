"""Every token an invoice prints that could be its number, as a candidate for a learned
chooser (invoice_number_model), with features that name no layout, vendor or language: the
kind of label beside or above it (by invoice_labels' vocabulary), where it stands, how it
is shaped, how often it is printed.

    candidates(sheet, table) -> list[Candidate]   # one per distinct value

The candidates are the rules' own (invoice_number.numbers) and every identifier-shaped
token: digits with optional letters, '/', '-', '.' between them, a '#' before. Dates,
amounts with decimals and IBANs are no candidates; a phone's, a tax id's or an order's
number is one, but its label's kind tells the model what it is. A value printed several
times is one candidate: each feature is the most any of its places has.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_number import numbers
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import dates_in

# The kinds of a label: invoice_labels' field kinds (the dates' three as one), a sum's, and
# the few labels of other numbers a page prints (a phone's, a bank's), a title, plain words.
KINDS: tuple[str, ...] = ("number", "weak_number", "reference", "date", "-date", "-number")
KINDS += ("sum", "phone", "bank", "title", "words")
PLACES = ("same", "left", "above")
_PHONE = re.compile(r"^(?:tel|phone|fax|mob|telefon|telefono|telefone|gsm|\+\d)")
_BANK = re.compile(r"^(?:iban|bic|swift|bank|account|konto|blz|sort\s*code|routing)")

FEATURES = (
    *(f"{place}_{kind}" for place in PLACES for kind in KINDS),
    "no_label",
    "label_near",  # 1 / (1 + cells between it and its label on its line)
    "hashed",  # a '#' before it
    "first_page",
    "height",  # how far down its page, 0 the top
    "top_fifth",
    "title_line",  # on the line of the document's title
    "under_title",  # one to three lines under it
    "alone",  # the whole of its cell
    "length",  # characters / 20
    "short",  # three characters or fewer
    "long",  # more than fifteen
    "digit_share",
    "all_digits",
    "letters",
    "dash",
    "slash",
    "dot",
    "space",  # a series and a number ("FV 7/2021")
    "year_like",  # four digits from 1900 to 2099
    "printed",  # log(1 + times printed)
    "in_table",
    "line_date",  # a date on its line
    "bias",
)

_TOKEN = re.compile(r"^#?(?P<n>[A-Z0-9][\w./-]*\d[\w./-]*|\d+)$", re.IGNORECASE)
_AMOUNT = re.compile(r"^[-+]?\d{1,3}(?:[.,' ]?\d{3})*[.,]\d{1,2}-?$")
_IBAN = re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$")
_SERIES = re.compile(r"^[A-Z]{2,4}$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
MAX_LENGTH = 30


@dataclass
class Candidate:
    value: str
    features: dict[str, float] = field(default_factory=dict)
    times: int = 0

    def vector(self) -> list[float]:
        return [self.features.get(name, 0.0) for name in FEATURES]


def identifier(word: str) -> str | None:
    """The identifier a word is, without its '#' and trailing punctuation; None for a date,
    an amount with decimals, an IBAN or a word with no digit."""
    word = word.strip(",;:()[]")
    match = _TOKEN.match(word)
    if not match or len(word) > MAX_LENGTH:
        return None
    value = match.group("n").rstrip(".-/")
    if _AMOUNT.match(value) or _IBAN.match(value.upper()):
        return None
    dates = dates_in(value)
    if dates and dates[0].text == value:
        return None
    return value or None


def _kind(text: str) -> str | None:
    """The kind of label `text` starts with, or None."""
    folded = fold(text.strip())
    label = field_label(text)
    if label:
        return "date" if label[0] in ("issue", "due") else label[0]
    if TITLE.match(folded):
        return "title"
    if sum_label(text):
        return "sum"
    if _PHONE.match(folded):
        return "phone"
    if _BANK.match(folded):
        return "bank"
    return None


def _label_kind(text: str) -> str:
    """A label's kind, or "words" for a cell of words that is none."""
    kind = _kind(text)
    if kind:
        return kind
    return "words" if any(ch.isalpha() for ch in text) else ""


def candidates(sheet: Sheet, table: tuple[int, int] | None = None) -> list[Candidate]:
    found: dict[str, Candidate] = {}
    titles = [
        i
        for i, line in enumerate(sheet.lines)
        if any(TITLE.match(fold(c.text)) for c in line.cells)
    ]
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            words = cell.text.split()
            for w, word in enumerate(words):
                value = identifier(word)
                if value is None:
                    continue
                _place(found, sheet, i, c, w, value, word.lstrip().startswith("#"), titles, table)
                prev = words[w - 1] if w else ""
                if _SERIES.match(prev) and not _kind(prev):
                    series = f"{prev} {value}"
                    _place(found, sheet, i, c, w, series, False, titles, table)
    for rule in numbers(sheet):
        value = str(rule.value)
        if value not in found:
            c = next(
                (
                    k
                    for k, cell in enumerate(sheet.lines[rule.line].cells)
                    if value.split()[-1][-3:] in cell.text
                ),
                0,
            )
            _place(found, sheet, rule.line, c, 0, value, False, titles, table)
    for cand in found.values():
        cand.features["printed"] = math.log1p(cand.times)
    return list(found.values())


def _place(
    found: dict[str, Candidate],
    sheet: Sheet,
    i: int,
    c: int,
    w: int,
    value: str,
    hashed: bool,
    titles: list[int],
    table: tuple[int, int] | None,
) -> None:
    cand = found.setdefault(value, Candidate(value))
    cand.times += 1
    feats = _features(sheet, i, c, w, value, hashed, titles, table)
    for name, x in feats.items():
        cand.features[name] = max(cand.features.get(name, 0.0), x)


def _features(
    sheet: Sheet,
    i: int,
    c: int,
    w: int,
    value: str,
    hashed: bool,
    titles: list[int],
    table: tuple[int, int] | None,
) -> dict[str, float]:
    line = sheet.lines[i]
    cell = line.cells[c]
    f: dict[str, float] = {"bias": 1.0}
    labelled = False
    before = " ".join(cell.text.split()[:w])
    if before:
        kind = _label_kind(before)
        if kind:
            f[f"same_{kind}"] = 1.0
            labelled = True
            f["label_near"] = 1.0
        hashed = hashed or before.rstrip().endswith("#")
    for k in range(c - 1, -1, -1):
        kind = _label_kind(line.cells[k].text)
        if kind:
            f[f"left_{kind}"] = 1.0
            f["label_near"] = max(f.get("label_near", 0.0), 1.0 / (c - k))
            labelled = True
            break
    for j in range(i - 1, max(-1, i - 3), -1):
        above = sheet.lines[j]
        if above.page != line.page:
            break
        over = [o for o in above.cells if o.x0 <= cell.x1 + 2 and o.x1 >= cell.x0 - 2]
        over_kind = next((kind for o in over if (kind := _label_kind(o.text))), "")
        if over_kind:
            f[f"above_{over_kind}"] = 1.0
            labelled = True
            break
    f["no_label"] = 0.0 if labelled else 1.0
    f["hashed"] = 1.0 if hashed else 0.0
    first = sheet.lines[0].page
    f["first_page"] = 1.0 if line.page == first else 0.0
    height = line.y0 / max(sheet.page_height(line.page), 1.0)
    f["height"] = height
    f["top_fifth"] = 1.0 if height < 0.2 else 0.0
    for t in titles:
        if sheet.lines[t].page != line.page:
            continue
        if t == i:
            f["title_line"] = 1.0
        elif 0 < i - t <= 3:
            f["under_title"] = 1.0
    f["alone"] = 1.0 if cell.text.strip().lstrip("#").strip(",;:") == value else 0.0
    digits = sum(ch.isdigit() for ch in value)
    f["length"] = len(value) / 20
    f["short"] = 1.0 if len(value) <= 3 else 0.0
    f["long"] = 1.0 if len(value) > 15 else 0.0
    f["digit_share"] = digits / len(value)
    f["all_digits"] = 1.0 if value.isdigit() else 0.0
    f["letters"] = 1.0 if any(ch.isalpha() for ch in value) else 0.0
    f["dash"] = 1.0 if "-" in value else 0.0
    f["slash"] = 1.0 if "/" in value else 0.0
    f["dot"] = 1.0 if "." in value else 0.0
    f["space"] = 1.0 if " " in value else 0.0
    f["year_like"] = 1.0 if _YEAR.match(value) else 0.0
    f["in_table"] = 1.0 if table and table[0] < i < table[1] else 0.0
    f["line_date"] = 1.0 if dates_in(line.text) else 0.0
    return f
