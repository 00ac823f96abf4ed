"""The seller and the buyer, found by evidence rather than by drawing order.

First by their headings ("Verkäufer", "Bill to", "Facturé à", ...: invoice_labels) and
a "Name:" label inside the block; failing that, by what marks a business on a page: a
legal form (GmbH, Ltd, SARL, B.V., S.p.A., Inc, ...), a letterhead at the top of the
first page or a sender line above the address window, the same name again in the
footer next to tax ids and bank details. The buyer without a heading is the address
block under the sender line, or the block beside a delivery address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conveyor.agents.invoice_labels import (
    SALUTATION,
    TAX_ID,
    TITLE,
    field_label,
    fold,
    name_label,
    party_heading,
    sum_label,
)
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.legal_forms import LEGAL_FORM
from conveyor.documents.layout import Cell

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6

_LABELLED = re.compile(r"^[^\d:]{2,40}:")
# A sender line's parts: "Name GmbH • Street 1 • 12345 Town" (bullets, bars, dashes).
_SEPARATORS = re.compile(r"\s+(?:[\u2022\u00b7|\u2013\u2014]|-)\s+|\s*[\u2022\u00b7|]\s*")
_ADDRESS = re.compile(r"\d")
# A postal address line: "60486 Frankfurt", "1234 AB Utrecht", "Seattle, WA 98101",
# "Leeds LS2 7AB", "DE 12345 Musterstadt".
_POSTCODE = re.compile(
    r"\b(?:[A-Z]{1,2}[- ]?)?\d{4,5}\s+[^\W\d_]{2,}|\b\d{4}\s?[A-Z]{2}\b|"
    r"\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b|\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b"
)
# An address line that names the person a letter is for, not the party: "c/o", "z. Hd.".
_CARE_OF = re.compile(r"^(?:c/o|c\.o\.|z\.\s?h(?:d)?\.?|attn\.?|attention|a/a)\s")
_CONTACT = re.compile(r"@|www\.|https?:|\btel\b|\bfax\b|\bphone\b|\btelefon\b|\+\d", re.IGNORECASE)


@dataclass
class Party:
    name: str | None = None
    name_conf: float = 0.0
    address: str | None = None
    tax_id: str | None = None


@dataclass
class Block:
    kind: str  # seller, buyer, other
    line: int
    cell: Cell
    rest: str


def headings(sheet: Sheet) -> list[Block]:
    found = []
    for i, line in enumerate(sheet.lines):
        for cell in line.cells:
            heading = party_heading(cell.text)
            if not heading:
                continue
            kind, end = heading
            rest = cell.text[end:].strip()
            if rest.startswith(":") or not rest or rest.startswith("/"):
                found.append(Block(kind, i, cell, rest.lstrip(":/ ").strip()))
            elif party_heading(rest):
                # Two headings close together ("Bill to  Ship to"): the first one's block.
                found.append(Block(kind, i, cell, ""))
    return found


def _block_lines(sheet: Sheet, block: Block) -> list[tuple[int, Cell]]:
    """The cells under a heading, in its column, until a gap or another heading."""
    out: list[tuple[int, Cell]] = []
    start = sheet.lines[block.line]
    bottom = start.y1
    # Blocks side by side ("BILL TO | SHIP TO"): a block ends where the next one begins.
    right = [c.x0 for c in start.cells if c.x0 > block.cell.x1 and party_heading(c.text)]
    edge = min([block.cell.x0 + 260, *[x - 4 for x in right]])
    for j in range(block.line + 1, min(len(sheet.lines), block.line + 14)):
        line = sheet.lines[j]
        if line.page != start.page or line.y0 - bottom > 2.8 * max(start.height, 8.0):
            break
        cells = [c for c in line.cells if c.x0 >= block.cell.x0 - 12 and c.x0 < edge]
        if not cells:
            continue
        heading = party_heading(cells[0].text)
        if heading and not name_label(cells[0].text):
            rest = cells[0].text[heading[1] :].strip()
            # "Bill To" over "Customer": a block's first line names its party, even
            # when the name is a word that could head a block of the same kind.
            first_of_its_kind = not out and heading[0] == block.kind and not rest
            if (not rest or rest.startswith(":")) and not first_of_its_kind:
                break
        for cell in cells:
            out.append((j, cell))
        bottom = line.y1
    return out


def _from_block(sheet: Sheet, block: Block) -> Party:
    cells = _block_lines(sheet, block)
    # A "Name:" label inside the block is the surest.
    for k, (j, cell) in enumerate(cells):
        end = name_label(cell.text)
        if end is None or not (
            cell.text[end:].strip().startswith(":") or cell.text[end:].strip() == ""
        ):
            continue
        rest = cell.text[end:].strip(" :")
        value_cells = [c for jj, c in cells if jj == j and c.x0 > cell.x1]
        name = rest or (value_cells[0].text if value_cells else "")
        if not name:
            continue
        # A name too long for its field wraps upwards: the unlabelled line just above.
        above = [c for jj, c in cells if jj == j - 1]
        if (
            k > 0
            and value_cells
            and len(above) == 1
            and abs(above[0].x0 - value_cells[0].x0) < 6
            and not _LABELLED.match(above[0].text)
        ):
            name = f"{above[0].text} {name}"
        return Party(name.strip(), SURE, _address_after(cells, j), _tax_id(cells))
    if block.rest and not _LABELLED.match(block.rest):
        return Party(
            block.rest, SURE, _address_after(cells, cells[0][0] - 1 if cells else 0), _tax_id(cells)
        )
    lines: list[str] = []
    first_j = None
    for j, row in _rows(cells):
        text = row[0].text.strip()
        labelled = (
            _LABELLED.match(text)
            or field_label(text)
            or sum_label(text)
            or (len(row) > 1 and row[1].text.lstrip().startswith(":"))
            or text.startswith(":")
        )
        if labelled:
            if lines:
                break
            continue
        if SALUTATION.match(fold(text)) and not lines:
            continue
        if not lines:
            lines.append(text)
            first_j = j
            continue
        # A second line carrying the legal form completes a name that wrapped.
        if (
            len(lines) == 1
            and LEGAL_FORM.search(text)
            and not LEGAL_FORM.search(lines[0])
            and not _ADDRESS.search(text)
        ):
            lines[0] = f"{lines[0]} {text}"
        break
    if not lines:
        return Party()
    return Party(lines[0], LIKELY, _address_after(cells, first_j or 0), _tax_id(cells))


def _rows(cells: list[tuple[int, Cell]]) -> list[tuple[int, list[Cell]]]:
    rows: list[tuple[int, list[Cell]]] = []
    for j, cell in cells:
        if rows and rows[-1][0] == j:
            rows[-1][1].append(cell)
        else:
            rows.append((j, [cell]))
    return rows


def _address_after(cells: list[tuple[int, Cell]], j: int) -> str | None:
    parts: list[str] = []
    for jj, cell in cells:
        if jj <= j:
            continue
        text = cell.text.strip()
        if _CONTACT.search(text) or TAX_ID.search(fold(text)) or field_label(text):
            break
        if _LABELLED.match(text):
            label_end = text.index(":")
            label = fold(text[:label_end])
            if "anschrift" in label or "address" in label or "adresse" in label:
                text = text[label_end + 1 :].strip()
            else:
                if parts:
                    break
                continue
        if text:
            parts.append(text)
        if len(parts) >= 4:
            break
    return ", ".join(parts) or None


def _tax_id(cells: list[tuple[int, Cell]]) -> str | None:
    for _, cell in cells:
        match = re.search(r"\b([A-Z]{2}\s?[0-9A-Z][0-9A-Z .]{6,16}[0-9A-Z])\b", cell.text)
        if match and re.search(r"(?i)ust|vat|tva|btw|iva|mwst|uid", cell.text):
            return match.group(1).strip()
    return None


# ----------------------------------------------------------------------- by evidence


def _segments(text: str) -> list[str]:
    return [s.strip(" ,;") for s in _SEPARATORS.split(text) if s.strip(" ,;")]


def vendor_by_evidence(sheet: Sheet, skip: set[Cell]) -> Party:
    """The seller when no heading names it: a legal form where a letterhead, a sender
    line or a footer is, the more so when the name comes back elsewhere on the pages."""
    if not sheet.lines:
        return Party()
    first_page = sheet.lines[0].page
    height = sheet.page_height(first_page)
    every = " ".join(fold(line.text) for line in sheet.lines)
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
            if TITLE.match(fold(text)) or field_label(text) or _LABELLED.match(text):
                continue
            segments = _segments(text)
            name = segments[0] if segments else text
            if _CONTACT.search(name) or len(name) < 3 or len(name) > 70:
                continue
            # A legal form ends a name: "Company Town, ST 12345" starts with one, names none.
            forms = [form for form in LEGAL_FORM.finditer(name) if form.start() > 0]
            legal = forms[-1] if forms else None
            score = 0.0
            if legal:
                score += 2.0
                name = name[: legal.end()].strip()  # "Acme Pty Ltd, Level 12": up to its form
            if top:
                score += 1.0 + (height * 0.3 - line.y0) / (height * 0.3)
            if len(segments) >= 3 or (
                c == 0 and len(line.cells) >= 3 and _POSTCODE.search(line.text)
            ):
                score += 1.0  # a sender line: name - street - town
            if line.height > 11:
                score += 0.5
            if every.count(fold(name)) >= 2:
                score += 1.0
            if any(TAX_ID.search(fold(other.text)) for other in sheet.lines[i : i + 3]):
                score += 0.3
            if c > 0 and not legal:
                score -= 1.0
            if best is None or score > best[0]:
                best, best_at = (score, name), (i, cell)
                # A sender line's other parts are the seller's address.
                rest = segments[1:] if len(segments) >= 2 else []
                address = ", ".join(rest) if any(_POSTCODE.search(r) for r in rest) else None
    if best is None or best[0] < 1.5:
        return Party(best[1] if best else None, GUESS if best else 0.0)
    confidence = LIKELY if best[0] >= 4.5 else FAIR if best[0] >= 3.5 else WEAK
    name = best[1]
    if best_at is not None and not LEGAL_FORM.search(name):
        name = f"{name} {_wrapped(sheet, *best_at)}".strip()
    return Party(name, confidence, address)


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
    if _LABELLED.match(text) or _CONTACT.search(text) or TITLE.match(fold(text)):
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
                if not _LABELLED.match(text) and not _CONTACT.search(text):
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
        if abs(cell.x0 - sender.x0) > 30 or _LABELLED.match(text) or _CONTACT.search(text):
            continue
        if cell in sellers_block or _CARE_OF.match(fold(text)):
            continue
        if SALUTATION.match(fold(text)):
            continue
        return Party(text, FAIR)
    return Party()


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
            if cell in sellers_block or seller in fold(text) or _CARE_OF.match(fold(text)):
                continue
            if fold(text) in seller:  # a line of the seller's name set on two
                continue
            if _LABELLED.match(text) or _CONTACT.search(text):
                continue
            if TITLE.match(fold(text)) or field_label(text) or sum_label(text):
                continue
            if _ADDRESS.search(text[:1]) or SALUTATION.match(fold(text)) or party_heading(text):
                continue
            below = [
                c
                for j in range(i + 1, min(i + 4, len(sheet.lines)))
                for c in sheet.lines[j].cells
                if abs(c.x0 - cell.x0) < 8
            ]
            if any(_POSTCODE.search(c.text) for c in below):
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
            if not under:
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
        for cell in line.cells:
            text = cell.text.strip()
            if cell in sellers_block or seller in fold(text) or fold(text) in seller:
                continue
            if not _NAME_ALONE.match(text) or _CONTACT.search(text) or LEGAL_FORM.search(text):
                continue
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
            len(_segments(line.cells[0].text)) >= 2 or len(line.cells) >= 2
        ):
            return i
    for i, line in enumerate(sheet.lines[:40]):
        if fold(line.text).startswith(folded):
            return i
    return None


def _not_a_label(party: Party) -> Party:
    """A name that is all a heading or a title ("Bill To", "Invoice", "Provider") was read
    from the wrong line: it is no name."""
    if not party.name:
        return party
    folded = fold(party.name.strip(" :"))
    heading = party_heading(folded)
    if (heading and heading[1] >= len(folded)) or TITLE.match(folded):
        return Party(address=party.address, tax_id=party.tax_id)
    return party


def parties(sheet: Sheet) -> tuple[Party, Party]:
    blocks = headings(sheet)
    seller = next((b for b in blocks if b.kind == "seller"), None)
    buyer = next((b for b in blocks if b.kind == "buyer"), None)
    vendor = _from_block(sheet, seller) if seller else Party()
    customer = _from_block(sheet, buyer) if buyer else Party()
    # The buyer's and the delivery blocks' cells are nobody's letterhead.
    skip: set[Cell] = set()
    for block in blocks:
        if block.kind in ("buyer", "other"):
            skip |= {cell for _, cell in _block_lines(sheet, block)} | {block.cell}
    # Names found by evidence rather than under a heading are checked for being labels.
    if vendor.name is None:
        vendor = _not_a_label(vendor_by_evidence(sheet, skip))
    if customer.name is None:
        others = [b for b in blocks if b.kind == "other"]
        customer = _not_a_label(
            buyer_by_evidence(sheet, sender_line(sheet, vendor.name), others, vendor.name)
        )
    if customer.name is None:
        customer = _not_a_label(buyer_by_address(sheet, vendor.name))
    if customer.name is None:
        customer = _not_a_label(buyer_by_name_alone(sheet, vendor.name))
    if vendor.tax_id is None and vendor.name:
        vendor.tax_id = _tax_id(
            [
                (i, c)
                for i, line in enumerate(sheet.lines)
                for c in line.cells
                if "ust" in fold(c.text) or "vat" in fold(c.text)
            ][:1]
        )
    return vendor, customer
