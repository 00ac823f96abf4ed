"""The invoice number: behind its label ("Invoice No.", "Rechnungsnummer"), in the
invoice's title ("Handelsrechnung Nr. R-17"), alone under the title, or, with none of
those, a '#' number near the top or a reference, at a guess.

It also holds how a title line is read (its number, the cells that run on from it, a
number alone under it, a heading's '#' number), because invoice_dates reads the title's
date after that number: the dates read the number's module, never the other way round.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from conveyor.agents.bank_codes import is_payment_reference
from conveyor.agents.invoice_fields import FAIR, LIKELY, SURE, WEAK
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_sheet import Sheet, Spot
from conveyor.agents.values import currency_of, dates_in
from conveyor.documents.layout import Cell

_NUMBER = re.compile(r"^#?\s*(?P<n>[A-Z0-9][\w./-]*\d[\w./-]*|\d)$", re.IGNORECASE)
# A number's series prefix printed apart from it: two to four capitals.
_SERIES = re.compile(r"^[A-Z]{2,4}$")
_CODE = re.compile(r"^\(\d{2,3}\)$")


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


def under_title(sheet: Sheet, index: int, title: Cell) -> tuple[str, int] | None:
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


def a_title(cells: Sequence[Cell], c: int) -> bool:
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
            elif not label and TITLE.match(fold(cell.text)) and a_title(line.cells, c):
                # (A date's label that begins with the document's word, "Invoice Date: 12
                # Jul 2026", is no title: "12" is its day, not the invoice's number.)
                number, _ = title_number(title_run(sheet, i, c))
                if number:
                    # A series read before it is read at a guess: it may be a word of the title.
                    sure = FAIR if _doubtful(number) or " " in number else LIKELY
                    found.append(Candidate(number, sure, i))
                elif (under := under_title(sheet, i, cell)) is not None:
                    found.append(Candidate(under[0], FAIR, under[1]))
    if not found:
        found += _hashed_numbers(sheet) or _referenced(sheet)
    return sorted(found, key=lambda cand: (-cand.confidence, cand.line))


# What sets a heading's parts apart, spaced: "#17 \u2014 1 May 2024", "Ticket #42 | 08:34".
DASHES = "\u2014\u2013|\u00b7\u2022-"
SET_APART = re.compile(rf"\s+[{DASHES}]\s+")
# A '#' number at the end of its cell, or before a dash or a bar that sets it apart from
# what the same heading prints after it ("Ticket #2026-03-0042 — 17/03/2026 — 08:34").
HASHED = re.compile(
    rf"(?:^|[\s:])#\s?(?P<n>[A-Z0-9][\w./-]*\d[\w./-]*|\d+)(?:$|\s+[{DASHES}]\s)",
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
            match = HASHED.search(cell.text.strip())
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
