"""The invoice number, its dates and its currency, found behind their labels on the page.

Each is a list of candidates with what speaks for them (the kind of label, where the
value stood), best first; a field's confidence is its best candidate's, lowered when
another candidate of the same strength disagrees.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from conveyor.agents.bank_codes import is_payment_reference
from conveyor.agents.date_order import slash_date_order
from conveyor.agents.invoice_columns import column_kind
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_rules import ORDER_CONFIDENCE
from conveyor.agents.invoice_sheet import Sheet, Spot
from conveyor.agents.values import (
    DateToken,
    currencies_in,
    currency_of,
    currency_word,
    dates_in,
    resolve,
    shared_sign,
    sign_currencies,
)
from conveyor.documents.layout import Cell

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6

_NUMBER = re.compile(r"^#?\s*(?P<n>[A-Z0-9][\w./-]*\d[\w./-]*|\d)$", re.IGNORECASE)
# A number's series prefix printed apart from it: two to four capitals.
_SERIES = re.compile(r"^[A-Z]{2,4}$")
_DATE_WORD = re.compile(r"^(?:vom|du|of|dated|del|van|from|le|dd\.?|den|am)$", re.IGNORECASE)
_CODE = re.compile(r"^\(\d{2,3}\)$")
_CURRENCY_LABEL = re.compile(r"^(?:rechnungs)?wahrung|^currency|^devise|^valuta|^moneda")
_RECEIPT = re.compile(
    r"\b(?:upon|on)\s+receipt\b|\bdue\s+immediately\b|\bsofort\s+(?:fallig|ohne|zahlbar)|"
    r"\bzahlbar\s+sofort\b|\bdes\s+reception\b|\ba\s+reception\b|\bonmiddellijk\b",
)


@dataclass(frozen=True)
class Candidate:
    value: object
    confidence: float
    line: int


def _token(text: str) -> str | None:
    """The invoice number at the start of a value: one token with a digit, not a date
    unless a '#' marks it as a number ("Invoice #2015-11-04")."""
    marked = text.lstrip().startswith("#")
    words = text.replace("#", " ").split()
    if not words:
        return None
    word = words[0].strip(",;:")
    if _SERIES.match(word) and len(words) > 1 and any(c.isdigit() for c in words[1]):
        word = f"{word} {words[1].strip(',;:')}"  # "FV 7/2021", "RE 2024-17": a series
    match = _NUMBER.match(word.replace(" ", "")) if " " in word else _NUMBER.match(word)
    if not match or (dates_in(word) and not marked) or len(word) > 40:
        return None
    return word if " " in word else match.group("n")


_SERIES_LABEL = re.compile(r"^series?\s*:?$|^serie\s*:?$")
_SERIES_VALUE = re.compile(r"^[A-Z0-9]{1,4}$")


def _series(sheet: Sheet, index: int, c: int) -> str:
    """The series a number's label has just before it in a row of labels over their values
    ("Serie | Folio" over "A | 167ABC"): printed together, series first ("A167ABC")."""
    label = sheet.lines[index].cells[c - 1]
    if not _SERIES_LABEL.match(fold(label.text.strip())):
        return ""
    for spot in sheet.below(index, label, 1):
        if _SERIES_VALUE.match(spot.text.strip()):
            return spot.text.strip()
    return ""


# The word of a page's number set on the title's line, in the readers' languages.
_PAGE_WORDS = frozenset(
    {"page", "seite", "blatt", "pagina", "pag", "side", "sida", "strona", "sivu", "folio"}
)


# A title's "number" that reads as a year ("Invoice for March 2024") or is a digit or two
# ("INVOICE COPY 2", "Invoice 1/2" of a page): an invoice's number, or not, at a guess.
_DOUBTFUL = re.compile(r"(?:19|20)\d\d|\d{1,2}")


def _doubtful(number: str) -> bool:
    return bool(_DOUBTFUL.fullmatch(number))


def title_number(text: str) -> tuple[str | None, str]:
    """("R-17", rest) from an invoice title "Handelsrechnung (380) Nr. R-17 vom 1.2.2026"."""
    words = text.split()
    for i, word in enumerate(words[:6]):
        lowered = fold(word).strip(".:")
        if lowered in _PAGE_WORDS:
            break  # "INVOICE   Page 1 of 2": the page's number, not the invoice's
        if _CODE.match(word) or lowered in ("nr", "no", "n°", "nº", "#", "number", "nummer"):
            continue
        if i and not any(c.isdigit() for c in word) and i < 4:
            continue  # "Rechnung des Versicherers": words between the title and its number
        number = _token(word) if i else None
        if number and i >= 2 and _title_series(words[i - 1]) and not _doubtful(number):
            number = f"{words[i - 1]} {number}"  # "FACTURA PROD 69420": series and number
        if number:
            return number, " ".join(words[i + 1 :])
        if i:
            break
    return None, ""


def _title_series(word: str) -> bool:
    """Whether a word between a title and its number is the number's series: two to four
    capitals that are no label ("FAKTURA VAT 12/2024" names the tax, "Nr" the number)."""
    return bool(_SERIES.match(word)) and not sum_label(word) and not field_label(word)


# How far past an invoice title its number may stand, in the title's heights, before the
# cells there may be another block's: "Faktura ... č. 1989" across the page is the title's
# number, a street of the seller's block set beside the title ("RECHNUNG ... Garibaldi-
# straße 74") is not.
TITLE_REACH = 5.0


def title_run(sheet: Sheet, index: int, cell_index: int) -> str:
    """The text of the title cell and of the cells after it on its line, up to the first
    one that stands far from it inside a block of text (lines just above or below it in
    its column)."""
    line = sheet.lines[index]
    cells = line.cells[cell_index:]
    height = max(w.y1 - w.y0 for w in cells[0].words)
    kept = [cells[0]]
    for cell in cells[1:]:
        if cell.x0 - kept[-1].x1 > TITLE_REACH * height and _in_a_block(sheet, index, cell):
            break
        kept.append(cell)
    return " ".join(cell.text for cell in kept)


# How many lines of its column under a title, and how far in its heights, its number may
# stand alone.
UNDER_TITLE_LINES = 3
UNDER_TITLE_REACH = 6.0


def _under_title(sheet: Sheet, index: int, title: Cell) -> tuple[str, int] | None:
    """A number printed alone under the title, in its column ("FACTURE" over "2025-001"),
    past lines of words or labelled values ("ÉLECTRONIQUE", "R.U.C.: 2012345"): the
    invoice's number, at a guess a little short of a labelled one."""
    line = sheet.lines[index]
    height = max(w.y1 - w.y0 for w in title.words)
    seen = 0
    for j in range(index + 1, len(sheet.lines)):
        below = sheet.lines[j]
        if below.page != line.page or below.y0 - line.y1 > UNDER_TITLE_REACH * height:
            return None
        # The cells in the title's column; the lines of other columns between do not count.
        column = [c for c in below.cells if c.x1 >= title.x0 and c.x0 <= title.x1]
        if not column:
            continue
        seen += 1
        if seen > UNDER_TITLE_LINES:
            return None
        for cell in column:
            text = cell.text.strip()
            if ":" in text or field_label(text) or not any(ch.isdigit() for ch in text):
                break  # a labelled value or words: look on the next line
            number = _token(text)
            if number == text and "%" not in text and currency_of(text) is None:
                return number, j
            return None
    return None


def _dated_under_title(
    sheet: Sheet, index: int, title: Cell
) -> tuple[DateToken, float, int] | None:
    """A date alone on the line just under the number printed alone under the title, in
    the title's column ("FACTURE" over "2026F02-001" over "02/03/2026"): no label says
    which date it is, and the one the heading gives is the issue's, a guess (0.75)."""
    under = _under_title(sheet, index, title)
    if under is None or under[1] + 1 >= len(sheet.lines):
        return None
    line, below = sheet.lines[under[1]], sheet.lines[under[1] + 1]
    if below.page != line.page or below.y0 - line.y1 > 1.5 * line.height:
        return None
    column = [c for c in below.cells if c.x1 >= title.x0 and c.x0 <= title.x1]
    tokens = dates_in(column[0].text) if len(column) == 1 else []
    if len(tokens) == 1 and tokens[0].text == column[0].text.strip():
        return tokens[0], WEAK, under[1] + 1
    return None


def _in_a_block(sheet: Sheet, index: int, cell: Cell) -> bool:
    line = sheet.lines[index]
    for j in (index - 1, index + 1):
        if not 0 <= j < len(sheet.lines) or sheet.lines[j].page != line.page:
            continue
        other = sheet.lines[j]
        if abs(other.y0 - line.y0) > 2.0 * max(line.height, 8.0):
            continue
        if any(abs(c.x0 - cell.x0) < 6 for c in other.cells):
            return True
    return False


def _a_title(cells: Sequence[Cell], c: int) -> bool:
    """Whether the cell may be the invoice's title: the first of its line, or one set
    larger than every cell before it (a title across the page from the letterhead:
    "Acme GmbH ... RECHNUNG RE-17")."""
    if c == 0:
        return True
    size = _size(cells[c])
    return all(size >= 1.1 * _size(other) for other in cells[:c])


def _size(cell: Cell) -> float:
    return max(w.y1 - w.y0 for w in cell.words)


def _whole_words(text: str, label: tuple[str, int] | None) -> tuple[str, int] | None:
    """A label that ends inside a word ("No. INV-2025-091" read as "No. Inv", a sign and
    the document's word) ends before that word: the word, joined on by its hyphen or its
    slash, is the value, and the label is what the words before it make ("No.")."""
    if not label or label[0] != "number":
        return label
    end = label[1]
    if not (0 < end < len(text) and text[end] in "-/" and text[end - 1].isalnum()):
        return label
    start = text.rfind(" ", 0, end) + 1
    shorter = field_label(text[:start].rstrip()) if start else None
    return shorter or label


def _date_shaped(spots: list[Spot]) -> str | None:
    """A number shaped like a date ("Numer faktury" over "2/11/2023", the second invoice
    of November): the value of an invoice number's own label when it is the only one
    there, a cell of its own beside or under it and no value of any other label. It may
    be a date the label stands by: a guess (0.75)."""
    if any(_token(spot.text) for spot in spots):
        return None
    for spot in spots:
        text = spot.text.strip()
        if spot.how == "same" or field_label(text) or " " in text:
            continue
        tokens = dates_in(text)
        if tokens and _NUMBER.match(text) and tokens[0].text == text:
            return text
    return None


def numbers(sheet: Sheet) -> list[Candidate]:
    found: list[Candidate] = []
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            label = _whole_words(cell.text, field_label(cell.text))
            if label and label[0] in ("number", "weak_number"):
                hashed = "#" in cell.text[max(0, label[1] - 1) : label[1] + 2]
                spots = sheet.values_of(i, c, label[1], below=1)
                if label[0] == "number" and (dated := _date_shaped(spots)) is not None:
                    found.append(Candidate(dated, WEAK, i))
                for spot in spots:
                    number = _token(f"#{spot.text}" if hashed and spot.how == "same" else spot.text)
                    if number and c and spot.how == "below":
                        number = _series(sheet, i, c) + number
                    if number:
                        sure = SURE if label[0] == "number" else WEAK
                        if label[0] == "weak_number" and _near_title(sheet, i):
                            sure = FAIR
                        # Below its label a value is less sure, never surer: a bare "No."
                        # heading a table's first column is no better than "Number:".
                        below = min(sure, FAIR)
                        found.append(Candidate(number, sure if spot.how != "below" else below, i))
                        break
            elif not label and TITLE.match(fold(cell.text)) and _a_title(line.cells, c):
                # (A date's label that begins with the document's word, "Invoice Date: 12
                # Jul 2026", is no title: "12" is its day, not the invoice's number.)
                number, _ = title_number(title_run(sheet, i, c))
                if number:
                    # A series read before it is read at a guess: it may be a word of the title.
                    sure = FAIR if _doubtful(number) or " " in number else LIKELY
                    found.append(Candidate(number, sure, i))
                elif (under := _under_title(sheet, i, cell)) is not None:
                    found.append(Candidate(under[0], FAIR, under[1]))
    if not found:
        found += _hashed_numbers(sheet) or _referenced(sheet)
    return sorted(found, key=lambda cand: (-cand.confidence, cand.line))


# What sets a heading's parts apart, spaced: "#17 \u2014 1 May 2024", "Ticket #42 | 08:34".
_DASHES = "\u2014\u2013|\u00b7\u2022-"
_SET_APART = re.compile(rf"\s+[{_DASHES}]\s+")
# A '#' number at the end of its cell, or before a dash or a bar that sets it apart from
# what the same heading prints after it ("Ticket #2026-03-0042 — 17/03/2026 — 08:34").
_HASHED = re.compile(
    rf"(?:^|[\s:])#\s?(?P<n>[A-Z0-9][\w./-]*\d[\w./-]*|\d+)(?:$|\s+[{_DASHES}]\s)",
    re.IGNORECASE,
)


def _hashed_numbers(sheet: Sheet) -> list[Candidate]:
    """With no labelled number: a '#' number on the first page's upper part, behind a
    label that is not another number's ("Referencia: #1721", not "Order #55"), a guess."""
    if not sheet.lines:
        return []
    first = sheet.lines[0].page
    height = sheet.page_height(first)
    for i, line in enumerate(sheet.lines):
        if line.page != first or line.y0 > height * 0.4:
            break
        for cell in line.cells:
            match = _HASHED.search(cell.text.strip())
            label = field_label(cell.text)
            if match and not (label and label[0].startswith("-")):
                return [Candidate(match.group("n"), WEAK, i)]
    return []


def _referenced(sheet: Sheet) -> list[Candidate]:
    """With no number labelled and none marked '#': the value of a "Reference" label."""
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            label = field_label(cell.text)
            if label and label[0] == "reference":
                for spot in sheet.values_of(i, c, label[1], below=1):
                    # A payment reference ("RF18 5390 ...") is the bank's, not the invoice's.
                    number = None if is_payment_reference(spot.text) else _token(spot.text)
                    if number:
                        return [Candidate(number, WEAK, i)]
    return []


def _near_title(sheet: Sheet, index: int) -> bool:
    """Whether an invoice's title begins a line, or a cell of one, of the two lines above:
    a title boxed beside the seller's letterhead ("SERVICIOS ... | FACTURA ELECTRONICA"
    over "N° 4362") heads its number as one set alone does."""
    for j in range(max(0, index - 2), index):
        other = sheet.lines[j]
        if other.page == sheet.lines[index].page and (
            TITLE.match(fold(other.text)) or any(TITLE.match(fold(c.text)) for c in other.cells)
        ):
            return True
    return False


_VALUE_WORDS = 4  # a value is a few words; a sentence that holds a date is not one


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
    return value_words(text) <= _VALUE_WORDS + 2


def _under(label: Cell, value: Cell, tokens: list[DateToken]) -> DateToken:
    """Of the dates a cell below holds (two values set close enough to run into one cell,
    "June 13, 2026 June 27, 2026" under "Date | Payment due"), the one that begins nearest
    under the label's left edge."""
    starts: list[float] = []
    offset = 0
    text = " ".join(w.text for w in value.words)
    for token in tokens:
        at = text.find(token.text, offset)
        if at < 0:
            return tokens[0]
        offset = at + len(token.text)
        words_before = len(text[:at].split())
        starts.append(value.words[min(words_before, len(value.words) - 1)].x0)
    best = min(range(len(tokens)), key=lambda k: abs(starts[k] - label.x0))
    return tokens[best]


_CLAUSE = re.compile(r"^\s*[,(]")


def _after_a_clause(rest: str) -> str | None:
    """What follows the last colon of a label's cell, when the label goes on with a clause
    set off by a comma or a parenthesis ("Data wystawienia, z zastrzeżeniem art. 106na
    ust. 1 ustawy: 31.10.2025", "Date of issue (as the law requires): ..."): the value."""
    if not _CLAUSE.match(rest) or ":" not in rest:
        return None
    after = rest.rsplit(":", 1)[1].strip()
    return after or None


def _date_from(sheet: Sheet, spots_text: list[str]) -> DateToken | None:
    for text in spots_text:
        tokens = dates_in(text)
        if tokens and is_value(text):
            return tokens[0]
    return None


def dates(
    sheet: Sheet,
) -> tuple[list[tuple[DateToken, float, int]], list[tuple[DateToken, float, int]]]:
    """Issue-date and due-date candidates: (date, confidence, line)."""
    issue: list[tuple[DateToken, float, int]] = []
    due: list[tuple[DateToken, float, int]] = []
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            label = field_label(cell.text)
            if label and label[0] == "number":
                # "NFC-e nº 1629 Série 1 24/03/2020 13:33:20": a date and its time on the
                # number's own line, the moment the invoice was issued.
                rest = cell.text[label[1] :]
                tokens = dates_in(rest)
                if len(tokens) == 1 and re.search(
                    re.escape(tokens[0].text) + r"\s+\d{1,2}:\d{2}(?::\d{2})?\b", rest
                ):
                    issue.append((tokens[0], WEAK, i))
            if label and label[0] == "date" and _heads_a_table(line.cells, cell):
                continue  # "Date | Project | Hours | Amount": the rows' dates, not the invoice's
            if label and label[0] in ("issue", "date"):
                spots = sheet.values_of(i, c, label[1], below=1)
                # Another field's label beside it is that field's, no value of this one
                # ("Date de facturation | À payer avant le | ..." over their dates).
                texts = [s.text for s in spots if s.how == "same" or not field_label(s.text)]
                token = _date_from(sheet, texts[:3])
                if token:
                    issue.append((token, SURE if label[0] == "issue" else FAIR, i))
                elif (after := _after_a_clause(cell.text[label[1] :])) is not None:
                    token = _date_from(sheet, [after])
                    if token:
                        issue.append((token, FAIR if label[0] == "issue" else WEAK, i))
            elif label and label[0] == "due":
                spots = sheet.values_of(i, c, label[1], below=4)
                if value_words(cell.text) > _VALUE_WORDS + 3:
                    continue  # a sentence that begins with the word, not a label
                for spot in spots:
                    if not is_value(spot.text):
                        continue
                    tokens = dates_in(spot.text)
                    if tokens:
                        # Two dates in one value: which is due is a guess at best, the one
                        # under the label when the value runs under several labels.
                        sure = SURE if spot.how != "below" else LIKELY
                        token = tokens[0]
                        if len(tokens) > 1 and spot.how == "below" and spot.cell is not None:
                            token = _under(cell, spot.cell, tokens)
                        due.append((token, sure if len(tokens) == 1 else FAIR, i))
            elif TITLE.match(fold(cell.text)) and _a_title(line.cells, c):
                number, rest = title_number(title_run(sheet, i, c))
                words = rest.split()
                apart = dates_in(words[1]) if number and len(words) > 1 else []
                if words and words[0] in _SEPARATORS and apart and apart[0].text == words[1]:
                    # "FACTURA PROD 69420 / 2024-09-10": a date set apart from the number.
                    issue.append((apart[0], FAIR, i))
                elif number and words and dates_in(words[0]) and is_value(rest):
                    # "INVOICE NO. 98765432 1/1/2000": a date straight after the number.
                    issue.append((dates_in(words[0])[0], FAIR, i))
                elif number and words and _DATE_WORD.match(words[0]):
                    after = " ".join(words[1:])
                    if not after.strip() and i + 1 < len(sheet.lines):
                        after = sheet.lines[i + 1].text  # the date wrapped to the next line
                    tokens = dates_in(after)
                    if tokens:
                        issue.append((tokens[0], LIKELY, i))
                elif not number and (dated := _dated_under_title(sheet, i, cell)) is not None:
                    issue.append(dated)
    if not issue:
        issue += _dated_at_a_place(sheet)
    if not due:
        due += _due_in_a_phrase(sheet)
    issue.sort(key=lambda t: (-t[1], t[2]))
    return issue, due


# "TOTAL DUE BY 2/2/2000", "Amount payable by 5 March 2024", "zahlbar bis zum 1.4.2024".
_DUE_PHRASE = re.compile(
    r"\b(?:due|payable|zahlbar|fallig)\s+(?:by|on|before|bis(?:\s+zum)?|am)\s+(?P<date>.+)$"
)


# A request to pay by a date, in a sentence of any of the languages: a verb of paying,
# then a word for "by" and the date ("Bitte überweisen Sie den Betrag bis zum 14.11.2018",
# "Please pay the amount by 3 May 2024", "à régler avant le 01/02/2024", "da versare entro
# il 31/01/2024", "gelieve te betalen voor 1-2-2024", "pagar antes del 5/3/2024").
_PAY_VERB = re.compile(
    r"\b(?:uberweis\w*|zahl\w*|bezahl\w*|begleich\w*|pay\w*|remit\w*|transfer\w*|settle\w*|"
    r"regl\w*|pai\w*|vir\w*|versa\w*|pag\w*|salda\w*|betal\w*|overmak\w*|"
    r"abona\w*|deposit\w*)\b"
)
_BY_DATE = re.compile(
    r"\b(?:bis(?:\s+(?:zum|spatestens(?:\s+zum)?))?|spatestens(?:\s+(?:am|bis(?:\s+zum)?))?|"
    r"by|before|until|no\s+later\s+than|avant\s+le|au\s+plus\s+tard\s+le|jusqu'?au|"
    r"antes\s+del?|hasta\s+el|entro\s+(?:e\s+non\s+oltre\s+)?il|uiterlijk\s+(?:op\s+)?|voor)"
    r"\s+(?=\d)"
)


# Payment terms rather than a request: a term in days ("Zahlbar innerhalb 30 Tagen netto
# bis 04.07.2018, 3 % Skonto bis ...", "net 30 days") or a cash discount's date beside it.
# The date there is the term worked out, and the sets' truths (EN 16931's due date, BT-9,
# against its payment terms, BT-20) do not take it for the due date.
_TERM_IN_DAYS = re.compile(
    r"\b\d{1,3}\s*(?:tagen?|days?|jours?|dias|giorni|dagen|dni|dage|dagar)\b|"
    r"skonto|cash\s+discount|escompte|sconto|descuento|korting"
)


def _due_in_a_phrase(sheet: Sheet) -> list[tuple[DateToken, float, int]]:
    """With no labelled due date: one that a sum's label or a short line states, or a
    sentence asking to pay by a date (the sentence may wrap to the next line)."""
    for i, line in enumerate(sheet.lines):
        for cell in line.cells:
            match = _DUE_PHRASE.search(fold(cell.text))
            if match and is_value(match.group("date")):
                tokens = dates_in(cell.text[match.start("date") :])
                if tokens:
                    return [(tokens[0], FAIR, i)]
    for i, line in enumerate(sheet.lines):
        text = fold(line.text)
        verb = _PAY_VERB.search(text)
        if verb is None:
            continue
        wraps = not text.rstrip().endswith((".", "!", ":"))
        if wraps and i + 1 < len(sheet.lines) and sheet.lines[i + 1].page == line.page:
            text = f"{text} {fold(sheet.lines[i + 1].text)}"  # (the verb stays where it was)
        if _TERM_IN_DAYS.search(text):
            continue
        by = _BY_DATE.search(text, verb.end())
        if by:
            after = text[by.end() : by.end() + 24]
            tokens = dates_in(after)
            if tokens and after.startswith(tokens[0].text):
                return [(tokens[0], FAIR, i)]
    return []


# A letter's date line: "Musterstadt, November 2, 2015", "Berlin, den 3. März 2024".
_PLACE_DATE = re.compile(r"^[^\W\d_][^\d,:]{1,40},\s*(?:(?:den|le|el|il)\s+)?(?P<date>\S.*)$")


def _dated_at_a_place(sheet: Sheet) -> list[tuple[DateToken, float, int]]:
    """With no labelled date: a line of a place and a date on the first page's upper
    half, as letters are dated, or a date alone on a line of its upper third."""
    if not sheet.lines:
        return []
    first = sheet.lines[0].page
    height = sheet.page_height(first)
    for i, line in enumerate(sheet.lines):
        if line.page != first or line.y0 > height / 2:
            break
        for cell in line.cells:
            match = _PLACE_DATE.match(cell.text.strip())
            if match and not field_label(cell.text):
                tokens = dates_in(match.group("date"))
                if tokens and is_value(match.group("date")):
                    return [(tokens[0], FAIR, i)]
            # A date standing alone near the top, under a title ("INVOICE #1" over
            # "May 7, 2020"), dates the invoice as a letter's date line does.
            if len(line.cells) == 1 and line.y0 < height / 3:
                tokens = dates_in(cell.text)
                if len(tokens) == 1 and tokens[0].text == cell.text.strip():
                    return [(tokens[0], FAIR, i)]
            # A heading of a '#' number and a date set apart by dashes or bars, as a
            # receipt's is ("Ticket #0042 — 17/03/2026 — 08:34"): its date, at a guess.
            parts = _SET_APART.split(cell.text.strip())
            if len(parts) > 1 and _HASHED.search(parts[0] + " - "):
                tokens = [t for part in parts[1:] for t in dates_in(part) if t.text == part]
                if len(tokens) == 1:
                    return [(tokens[0], WEAK, i)]
    return []


# What sets a title's number apart from its date: "PROD 69420 / 2024-09-10".
_SEPARATORS = frozenset({"/", *_DASHES})


def _heads_a_table(cells: Sequence[Cell], label: Cell) -> bool:
    """Whether a label stands in a row of column headers (two more besides it). A cell
    that is a field's label ("Nº Factura", "Nº cliente", "Fecha de vencimiento") heads
    the invoice's own values, not an item column."""
    return (
        sum(1 for c in cells if c is not label and column_kind(c.text) and not field_label(c.text))
        >= 2
    )


def choose_dates(
    sheet: Sheet, currency: str | None
) -> tuple[datetime.date | None, float, datetime.date | None, float]:
    issue_c, due_c = dates(sheet)
    issue = issue_c[0] if issue_c else None
    # With several terms the latest date is the due date (EN 16931's BT-9 for instalments).
    due = None
    if due_c:
        best = max(conf for _, conf, _ in due_c)
        strongest = [d for d in due_c if d[1] == best]
        due = max(strongest, key=lambda d: resolve(d[0], "dmy") or datetime.date.min)
    texts = [line.text for line in sheet.lines]
    order, basis = slash_date_order(
        issue[0] if issue else None, due[0] if due else None, texts, currency
    )
    order_conf = ORDER_CONFIDENCE[basis]
    issue_date = resolve(issue[0], order) if issue else None
    issue_conf = 0.0
    if issue is not None:
        issue_conf = min(issue[1], order_conf if issue[0].both else SURE)
        others = {resolve(t, order) for t, conf, _ in issue_c if conf >= issue[1]}
        if len(others) > 1:
            issue_conf = min(issue_conf, WEAK)
    due_date = resolve(due[0], order) if due else None
    due_conf = 0.0
    if due is not None:
        due_conf = min(due[1], order_conf if due[0].both else SURE)
        if issue_date and due_date and due_date < issue_date:
            due_conf = min(due_conf, GUESS)
    else:
        receipt = any(_RECEIPT.search(fold(line.text)) for line in sheet.lines)
        due_conf = LIKELY if receipt else FAIR
    return issue_date, issue_conf, due_date, due_conf


# No sign and no code anywhere: the currency of the country the addresses name, a guess.
_COUNTRY_CURRENCIES = (
    (re.compile(r"\bU\.?S\.?A\b|\bunited states\b|, [A-Z]{2} \d{5}\b", re.IGNORECASE), "USD"),
    (re.compile(r"\bunited kingdom\b|\bengland\b|\b[A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}\b"), "GBP"),
    (re.compile(r"\bcanada\b", re.IGNORECASE), "CAD"),
    (re.compile(r"\baustralia\b", re.IGNORECASE), "AUD"),
    (re.compile(r"\bindia\b", re.IGNORECASE), "INR"),
    (re.compile(r"\bswitzerland\b|\bschweiz\b|\bsuisse\b", re.IGNORECASE), "CHF"),
    (
        re.compile(
            r"\b(?:deutschland|germany|france|nederland|netherlands|belgi(?:e|um|que)|"
            r"espa(?:ña|na)|spain|itali[ae]|italy|österreich|austria|portugal|ireland|"
            r"luxemb(?:o|u)rg)\b",
            re.IGNORECASE,
        ),
        "EUR",
    ),
)


def _country_currency(sheet: Sheet) -> str | None:
    for pattern, code in _COUNTRY_CURRENCIES:
        if pattern.search(sheet.head):
            return code
    return _vat_id_currency(sheet.text)


# A European VAT id begins with its country's code ("VAT: FI76543218", "USt-IdNr.
# DE123456789", "BTW NL001234567B01"): the currency of that country, when the ids the page
# prints agree on one.
_VAT_ID = re.compile(
    r"(?i:\b(?:vat|tva|btw|ust|mwst|iva|uid|nif|moms|mva|p\.?\s*iva)[\w.\s/-]{0,20}?[:\s])\s*"
    r"(?P<cc>[A-Z]{2})\s?(?:U\s?)?\d[\d\s]{6,13}\d"
)
_VAT_COUNTRIES = {
    **dict.fromkeys("AT BE CY DE EE EL ES FI FR HR IE IT LT LU LV MT NL PT SI SK".split(), "EUR"),
    "DK": "DKK",
    "SE": "SEK",
    "PL": "PLN",
    "CZ": "CZK",
    "HU": "HUF",
    "RO": "RON",
    "BG": "BGN",
    "GB": "GBP",
    "NO": "NOK",
}


def _vat_id_currency(text: str) -> str | None:
    codes = {_VAT_COUNTRIES.get(m.group("cc")) for m in _VAT_ID.finditer(text)}
    codes.discard(None)
    return next(iter(codes)) if len(codes) == 1 else None


# A sign several countries print ("$"): the currency of the country the page names by its
# name or its national tax id, of those that print it. Mexico's RFC, "M.N." (moneda
# nacional) and CFDI, Argentina's CUIT, Chile's RUT; Canada and Australia as above.
_SIGN_COUNTRIES = (
    (re.compile(r"\bm[eé]xico\b|\bRFC\b|\bM\.\s?N\.|\bCFDI\b", re.IGNORECASE), "MXN"),
    (re.compile(r"\bargentina\b|\bCUIT\b", re.IGNORECASE), "ARS"),
    (re.compile(r"\bchile\b|\bR\.?U\.?T\.?\b"), "CLP"),
    (re.compile(r"\bcolombia\b", re.IGNORECASE), "COP"),
    # Norway's MVA and Foretaksregisteret, Denmark's CVR, Sweden's momsregistreringsnummer.
    (re.compile(r"\bnorge\b|\bnorway\b|\bMVA\b|\bforetaksregisteret\b", re.IGNORECASE), "NOK"),
    (re.compile(r"\bdanmark\b|\bdenmark\b|\bCVR\b", re.IGNORECASE), "DKK"),
    (re.compile(r"\bsverige\b|\bsweden\b|\bmomsreg", re.IGNORECASE), "SEK"),
    *_COUNTRY_CURRENCIES,
)


_KRONE = re.compile(r"(?<![^\W\d_])kr\.?(?![^\W\d_])", re.IGNORECASE)


def _cells(sheet: Sheet) -> list[Cell]:
    return [cell for line in sheet.lines for cell in line.cells]


def _national(sheet: Sheet, sign: str) -> str | None:
    """The currency of the country the page names, among those whose sign is `sign`."""
    among = sign_currencies(sign)
    for pattern, code in _SIGN_COUNTRIES:
        if code in among and pattern.search(sheet.head):
            return code
    return None


# A currency named beside an amount ("703.15 euro", "Euro 152,00") or in a column's
# header ("Prijs (euro)", "Amount (EUR)"): what price-parser reads as a currency there.
_AFTER_AMOUNT = re.compile(r"\d\s+([^\W\d_]{3,12})(?![\w])")
_BEFORE_AMOUNT = re.compile(r"(?<![\w])([^\W\d_]{3,12})\s+-?\d")
_IN_PARENTHESES = re.compile(r"\(\s*([^()\d]{1,12}?)\s*\)")


def _named_currencies(sheet: Sheet) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in sheet.lines:
        for cell in line.cells:
            for pattern in (_AFTER_AMOUNT, _BEFORE_AMOUNT, _IN_PARENTHESES):
                for match in pattern.finditer(cell.text):
                    code = currency_word(match.group(1))
                    if code:
                        counts[code] += 1
    return counts


def currency(sheet: Sheet) -> tuple[str | None, float]:
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            if _CURRENCY_LABEL.match(fold(cell.text)):
                for spot in sheet.values_of(i, c, len(cell.text.split(":")[0]), below=1):
                    # A currency's code, not any three capitals: "Moneda | Cota TVA" over
                    # "RON | 19%" is a row of column labels, "TVA" the next one's word.
                    codes = [w for w in re.findall(r"\b[A-Z]{3}\b", spot.text) if currency_word(w)]
                    if codes:
                        return codes[0], SURE
    counts: Counter[str] = Counter()
    for line in sheet.lines:
        for cell in line.cells:
            # Signs next to amounts only: "8 rue des Lilas" names no currency.
            if sheet.amount(cell.text) is not None:
                code = currency_of(cell.text)
                if code:
                    counts[code] += 1
    if not counts:
        counts = _named_currencies(sheet)
    if not counts:
        counts = currencies_in(sheet.text)
        if not counts:
            if any(
                _KRONE.search(c.text) and sheet.amount(c.text) is not None for c in _cells(sheet)
            ):
                national = _national(sheet, "kr")  # the krone or krona of the country named
                if national is not None:
                    return national, FAIR
            guess = _country_currency(sheet)
            return guess, WEAK if guess else 0.0
    code, n = counts.most_common(1)[0]
    confidence = SURE if len(counts) == 1 and n >= 2 else LIKELY if len(counts) == 1 else WEAK
    if shared_sign(code, sheet.text):
        confidence = min(confidence, FAIR)  # "¥" is the yen's and the yuan's
    if code == "USD" and not any(re.search(r"\bUSD\b|US\$", line.text) for line in sheet.lines):
        confidence = min(confidence, FAIR)  # a bare "$" is several countries' dollar
        # ... or peso: the one of the country the page names, if it names one.
        national = _national(sheet, "$")
        if national is not None and national != "USD":
            return national, FAIR
    return code, confidence
