"""The issue and due dates: behind their labels, after the number in the invoice's title,
under a number alone under the title, on a letter's date line ("Berlin, den 3. März
2024"), or in a sentence asking to pay by a date; and then which of them is chosen and
how day and month are ordered (`choose_dates`, with date_order).

A module of its own because the dates' rules are the most of the fields' and read nothing
of the currency's (only its code, to order a slashed date's day and month).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence

from conveyor.agents.date_order import slash_date_order
from conveyor.agents.invoice_columns import column_kind
from conveyor.agents.invoice_fields import (
    FAIR,
    GUESS,
    LIKELY,
    SURE,
    VALUE_WORDS,
    WEAK,
    is_value,
    value_words,
)
from conveyor.agents.invoice_labels import TITLE, field_label, fold
from conveyor.agents.invoice_number import (
    DASHES,
    HASHED,
    SET_APART,
    a_title,
    title_number,
    title_run,
    under_title,
)
from conveyor.agents.invoice_rules import ORDER_CONFIDENCE
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import DateToken, dates_in, resolve
from conveyor.documents.layout import Cell

_DATE_WORD = re.compile(r"^(?:vom|du|of|dated|del|van|from|le|dd\.?|den|am)$", re.IGNORECASE)
_RECEIPT = re.compile(
    r"\b(?:upon|on)\s+receipt\b|\bdue\s+immediately\b|\bsofort\s+(?:fallig|ohne|zahlbar)|"
    r"\bzahlbar\s+sofort\b|\bdes\s+reception\b|\ba\s+reception\b|\bonmiddellijk\b",
)


def _dated_under_title(
    sheet: Sheet, index: int, title: Cell
) -> tuple[DateToken, float, int] | None:
    """A date alone on the line just under the number printed alone under the title, in
    the title's column ("FACTURE" over "2026F02-001" over "02/03/2026"): no label says
    which date it is, and the one the heading gives is the issue's, a guess (0.75)."""
    under = under_title(sheet, index, title)
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


# Two fields printed in one cell, one after the other: "Service date: 01.01.2026 - Due
# date: 16.09.2026", "Datum 01.03.2024 | Fällig 15.03.2024".
_FIELDS_APART = re.compile(r"\s[-|\u00b7\u2013]\s")


def _second_due(text: str) -> list[DateToken]:
    """The due date of a cell whose second field (or later) is the due date's label and its
    date, set apart from the first by a dash, a bar or a middle dot."""
    for part in _FIELDS_APART.split(text)[1:]:
        label = field_label(part)
        if label and label[0] == "due":
            value = part[label[1] :].strip(" :")
            tokens = dates_in(value)
            if len(tokens) == 1 and tokens[0].text == value:
                return tokens
    return []


def dates(
    sheet: Sheet,
) -> tuple[list[tuple[DateToken, float, int]], list[tuple[DateToken, float, int]]]:
    """Issue-date and due-date candidates: (date, confidence, line)."""
    issue: list[tuple[DateToken, float, int]] = []
    due: list[tuple[DateToken, float, int]] = []
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            label = field_label(cell.text)
            due += [(token, FAIR, i) for token in _second_due(cell.text)]
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
                if value_words(cell.text) > VALUE_WORDS + 3:
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
            elif TITLE.match(fold(cell.text)) and a_title(line.cells, c):
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


# "までに" (by) and a verb of paying: "振込", "振り込み", "支払", "入金", after the date and
# its weekday in brackets: "2024年4月30日(火)までに下記口座へお振込みください".
_JA_PAY_BY = re.compile(
    r"^\s*(?:\([^)]{1,3}\)\s*)?まで(?:に)?\s*[、,]?\s*(?:下記.{0,8}[へに]\s*)?(?:お|ご)?"
    r"(?:振込|振り込|支払|入金)"
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
        # Japanese sets the date first: "2024年4月30日までにお振込みください".
        for token in dates_in(line.text):
            after = line.text[line.text.index(token.text) + len(token.text) :]
            if _JA_PAY_BY.match(after):
                return [(token, FAIR, i)]
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
            parts = SET_APART.split(cell.text.strip())
            if len(parts) > 1 and HASHED.search(parts[0] + " - "):
                tokens = [t for part in parts[1:] for t in dates_in(part) if t.text == part]
                if len(tokens) == 1:
                    return [(tokens[0], WEAK, i)]
    return []


# What sets a title's number apart from its date: "PROD 69420 / 2024-09-10".
_SEPARATORS = frozenset({"/", *DASHES})


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
