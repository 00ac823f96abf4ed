"""The seller and the buyer when no heading names them: the seller by its letterhead (a
legal form at the top or foot of the first page, a sender line, the name printed again,
the first line of its block), the buyer by the address window under the sender line, the
block beside a delivery address, or a name alone beside the invoice's labels."""

from __future__ import annotations

import re

from conveyor.agents.invoice_columns import TABLE_END
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_marks import (
    ADDRESS,
    CARE_OF,
    CONTACT,
    FAIR,
    GUESS,
    LABELLED,
    LIKELY,
    POSTCODE,
    WEAK,
    Block,
    Party,
    label_row,
    not_a_name,
    segments,
)
from conveyor.agents.invoice_party_labels import SALUTATION, TAX_ID, party_heading
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.legal_forms import LEGAL_FORM, name_forms
from conveyor.documents.layout import Cell


def vendor_by_evidence(sheet: Sheet, skip: set[Cell]) -> Party:
    """The seller when no heading names it: a legal form where a letterhead, a sender
    line or a footer is, the more so when the name comes back elsewhere on the pages."""
    if not sheet.lines:
        return Party()
    first_page = sheet.lines[0].page
    height = sheet.page_height(first_page)
    every = sheet.folded
    best: tuple[float, str] | None = None
    best_at: tuple[int, Cell] | None = None
    address: str | None = None
    for i, line in enumerate(sheet.lines):
        if line.page != first_page:
            continue
        top = line.y0 < height * 0.3
        foot = line.y0 > height * 0.82
        if not (top or foot):
            continue
        for c, cell in enumerate(line.cells[:3]):
            text = cell.text.strip()
            if cell in skip:
                continue
            if TITLE.match(fold(text)) or field_label(text) or LABELLED.match(text):
                continue
            parts = segments(text)
            name = parts[0] if parts else text
            if CONTACT.search(name) or len(name) < 3 or len(name) > 70:
                continue
            if TAX_ID.match(fold(name)) or (" " not in name and ADDRESS.search(name)):
                continue  # "CUIT 30-...", "COD.01": an identifier or a code, not the name
            if _MARKED_NUMBER.search(name):
                continue  # "Ticket #0042 - 17/03/2026": a document's number and date
            if not_a_name(name):
                continue
            # A legal form ends a name: "Company Town, ST 12345" starts with one, names none.
            forms = name_forms(name)
            legal = forms[-1] if forms else None
            if not legal and (ADDRESS.match(name) or POSTCODE.search(name)):
                continue  # "8636 Sentinel Place", "60486 Frankfurt": an address, no name
            score = 0.0
            if legal:
                score += 2.0
                if _SET_OFF.match(name[legal.end() :]):
                    name = name[: legal.end()].strip()  # "Acme Pty Ltd, Level 12": up to its form
            if top:
                score += 1.0 + (height * 0.3 - line.y0) / (height * 0.3)
            if len(parts) >= 3 or (c == 0 and len(line.cells) >= 3 and POSTCODE.search(line.text)):
                score += 1.0  # a sender line: name - street - town
            if line.height > 11:
                score += 0.5
            if every.count(fold(name)) >= 2:
                score += 1.0
            if any(TAX_ID.search(fold(other.text)) for other in sheet.lines[i : i + 3]):
                score += 0.3
            if c > 0 and not legal:
                score -= 1.0
            if _under_text(sheet, i, cell):
                score -= 1.0  # a block's name is its first line, not one of its address lines
            if best is None or score > best[0]:
                best, best_at = (score, name), (i, cell)
                # A sender line's other parts are the seller's address.
                rest = parts[1:] if len(parts) >= 2 else []
                address = ", ".join(rest) if any(POSTCODE.search(r) for r in rest) else None
    if best is None or best[0] < 1.5:
        return Party(best[1] if best else None, GUESS if best else 0.0)
    confidence = LIKELY if best[0] >= 4.5 else FAIR if best[0] >= 3.5 else WEAK
    name = best[1]
    if best_at is not None and not LEGAL_FORM.search(name):
        wrapped = _wrapped(sheet, *best_at)
        if _open(name) or _form_alone(wrapped):
            # "House of" over "Hoverboards"; "ASESORIAS LOMOTORO" over "LIMITADA".
            name = f"{name} {wrapped}".strip()
    return Party(name, confidence, address)


# What sets a name's legal form off from what follows it on its line: a comma, a dash, a
# bar ("Acme Pty Ltd, Level 12"); a word straight after it is the name's ("Company Name").
_SET_OFF = re.compile(r"^\s*(?:$|[,;|(\u2013\u2014/]|-\s)")


# A number marked with '#' ("Ticket #2026-17", "Order # 55"): a document's, no name.
_MARKED_NUMBER = re.compile(r"#\s?\d")


def _under_text(sheet: Sheet, index: int, cell: Cell) -> bool:
    """Whether text stands just above this cell in its column, close enough to be the
    same block ("Empresa de Prueba" over "Direccion de Prueba" over "Capital Federal"):
    the nearest line above that has a cell there, lines of other columns between."""
    line = sheet.lines[index]
    for above in reversed(sheet.lines[max(0, index - 4) : index]):
        if above.page != line.page or line.y0 - above.y1 > 0.8 * max(above.height, 8.0):
            return False
        # The same column: its left edge, or its right edge in a block set flush right.
        column = [c for c in above.cells if abs(c.x0 - cell.x0) < 6 or abs(c.x1 - cell.x1) < 6]
        if not column:
            continue
        text = column[0].text.strip()
        if TITLE.match(fold(text)) or LABELLED.match(text) or CONTACT.search(text):
            return False
        return not (field_label(text) or party_heading(text))
    return False


def _open(name: str) -> bool:
    """Whether a name may go on on the next line: a word alone ("Hoverboards" under
    "House"), or a last word that joins ("House of", "Smith &", "Müller und"). A name of
    several words that ends in a capitalised one ("Dr. A. Arzt") is whole; the line under
    it is what the named does ("Facharzt für Innere Medizin")."""
    words = name.split()
    return len(words) < 2 or not words[-1][:1].isupper()


def _form_alone(text: str) -> bool:
    """Whether `text` is a legal form and nothing else ("LIMITADA", "GmbH & Co. KG"): the
    end of a name set on the line above."""
    if not text:
        return False
    forms = name_forms(f"Name {text}")
    return bool(forms) and forms[0].start() <= 5 and forms[-1].end() >= len(text) + 5


def _wrapped(sheet: Sheet, index: int, cell: Cell) -> str:
    """The rest of a letterhead name set on two lines ("House of" over "Hoverboards"):
    the next line, in the same column and type size, with words only."""
    if index + 1 >= len(sheet.lines):
        return ""
    line, below = sheet.lines[index], sheet.lines[index + 1]
    under = [c for c in below.cells if abs(c.x0 - cell.x0) < 6]
    if not under or below.page != line.page or below.height < 0.8 * line.height:
        return ""
    text = under[0].text.strip()
    if below.y0 - line.y1 > line.height or any(ch.isdigit() for ch in text):
        return ""
    if LABELLED.match(text) or CONTACT.search(text) or TITLE.match(fold(text)):
        return ""
    if field_label(text) or sum_label(text) or party_heading(text) or len(text) > 40:
        return ""
    return text


def buyer_by_evidence(
    sheet: Sheet, vendor_line: int | None, others: list[Block], vendor: str | None = None
) -> Party:
    """The buyer when no heading names it: the block beside a delivery address, or the
    address block under the sender line."""
    for block in others:
        heading = sheet.lines[block.line]
        for j in range(block.line, min(len(sheet.lines), block.line + 4)):
            line = sheet.lines[j]
            beside = [c for c in line.cells if c.x0 > block.cell.x1 + 60]
            if beside and line.page == heading.page:
                text = beside[0].text.strip()
                if not LABELLED.match(text) and not CONTACT.search(text):
                    return Party(text, FAIR)
    if vendor_line is None:
        return Party()
    sender = sheet.lines[vendor_line]
    sellers_block = _seller_block(sheet, fold(vendor or "\0"), sender.page)
    for j in range(vendor_line + 1, min(len(sheet.lines), vendor_line + 4)):
        line = sheet.lines[j]
        if line.page != sender.page:
            break
        cell = line.cells[0]
        text = cell.text.strip()
        if abs(cell.x0 - sender.x0) > 30 or LABELLED.match(text) or CONTACT.search(text):
            continue
        if cell in sellers_block or CARE_OF.match(fold(text)):
            continue
        if SALUTATION.match(fold(text)):
            continue
        if TABLE_END.match(fold(text)) or field_label(text) or sum_label(text):
            break  # "Payment Method", "Total", a field's label: the address block has ended
        return Party(_firm_under(sheet, j, cell) or text, FAIR)
    return Party()


def _firm_under(sheet: Sheet, index: int, cell: Cell) -> str | None:
    """The firm's name on the line just under a person's in an address block ("Dr. Petra
    Schmidt" over "MedTech Solutions AG"): the person is the firm's contact, the firm the
    party. Only a name with a legal form of its own, under one without."""
    if index + 1 >= len(sheet.lines) or LEGAL_FORM.search(cell.text):
        return None
    line, below = sheet.lines[index], sheet.lines[index + 1]
    if below.page != line.page or below.y0 - line.y1 > line.height:
        return None
    under = [c for c in below.cells if abs(c.x0 - cell.x0) < 3]
    if not under:
        return None
    text = under[0].text.strip()
    if not LEGAL_FORM.search(text) or CONTACT.search(text) or ADDRESS.match(text):
        return None
    return text


def buyer_by_address(sheet: Sheet, vendor: str | None) -> Party:
    """The first block on the first page's upper part that names someone other than the
    seller and is followed by a postal address: the address window."""
    if not sheet.lines:
        return Party()
    first_page = sheet.lines[0].page
    height = sheet.page_height(first_page)
    seller = fold(vendor or "\0")
    sellers_block = _seller_block(sheet, seller, first_page)
    for i, line in enumerate(sheet.lines[:-2]):
        if line.page != first_page or line.y0 > height * 0.45:
            break
        for cell in line.cells:
            text = cell.text.strip()
            if cell in sellers_block or seller in fold(text) or CARE_OF.match(fold(text)):
                continue
            if fold(text) in seller:  # a line of the seller's name set on two
                continue
            if LABELLED.match(text) or CONTACT.search(text):
                continue
            if TITLE.match(fold(text)) or field_label(text) or sum_label(text):
                continue
            if ADDRESS.search(text[:1]) or SALUTATION.match(fold(text)) or party_heading(text):
                continue
            below = [
                c
                for j in range(i + 1, min(i + 4, len(sheet.lines)))
                for c in sheet.lines[j].cells
                if abs(c.x0 - cell.x0) < 8
            ]
            if any(POSTCODE.search(c.text) for c in below):
                return Party(text, WEAK)
    return Party()


def _seller_block(sheet: Sheet, seller: str, page: int) -> set[Cell]:
    """The cells of the seller's address block: under its name, in its column, line
    after line until a gap ("famoser GmbH / c/o F. Moser / Ochsengasse 66 / ...")."""
    block: set[Cell] = set()
    for i, line in enumerate(sheet.lines):
        if line.page != page:
            continue
        top = next((c for c in line.cells if fold(c.text).strip() == seller), None)
        if top is None:
            continue
        bottom, height = line.y1, line.height
        for other in sheet.lines[i + 1 : i + 8]:
            # Lines of one block follow each other closely: the gap is less than a line.
            if other.page != page or other.y0 - bottom > min(height, other.height) + 2:
                break
            under = [c for c in other.cells if abs(c.x0 - top.x0) < 12]
            # A salutation opens the next address ("Herrn", "Mrs"), not a line of this one.
            if not under or SALUTATION.match(fold(under[0].text.strip())):
                break
            block.update(under)
            bottom, height = other.y1, other.height
        break
    return block


# A person's or a firm's name alone in a cell: two to four capitalised words.
_NAME_ALONE = re.compile(r"^[A-ZÀ-Ý][\w.'&-]+(?:\s+[A-ZÀ-Ý&][\w.'&-]*){1,3}$")


def buyer_by_name_alone(sheet: Sheet, vendor: str | None) -> Party:
    """Nothing else found: a name alone in a cell of the first page's upper part, beside
    the invoice's labels, that is not the seller's ("Reference: MG2022 | John Doe"). A
    guess."""
    if not sheet.lines:
        return Party()
    first = sheet.lines[0].page
    height = sheet.page_height(first)
    seller = fold(vendor or "\0")
    sellers_block = _seller_block(sheet, seller, first)
    for line in sheet.lines:
        if line.page != first or line.y0 > height * 0.4:
            break
        if label_row(line.cells):
            continue
        for c, cell in enumerate(line.cells):
            text = cell.text.strip()
            if cell in sellers_block or seller in fold(text) or fold(text) in seller:
                continue
            if not _NAME_ALONE.match(text) or CONTACT.search(text):
                continue
            if c and line.cells[c - 1].text.strip().endswith(":"):
                continue  # "Cashier: | Marie L.": the value of a label that names no buyer
            folded = fold(text)
            if TITLE.match(folded) or field_label(text) or sum_label(text) or party_heading(text):
                continue
            return Party(text, GUESS)
    return Party()


def sender_line(sheet: Sheet, name: str | None) -> int | None:
    if not name:
        return None
    folded = fold(name)
    for i, line in enumerate(sheet.lines[:40]):
        if fold(line.cells[0].text).startswith(folded) and (
            len(segments(line.cells[0].text)) >= 2 or len(line.cells) >= 2
        ):
            return i
    for i, line in enumerate(sheet.lines[:40]):
        if fold(line.text).startswith(folded):
            return i
    return None
