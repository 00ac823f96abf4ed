"""The seller and the buyer, found by evidence rather than by drawing order.

First by their headings ("Verkäufer", "Bill to", "Facturé à", ...: invoice_party_labels)
and a "Name:" label inside the block; failing that, by what marks a business on a page: a
legal form (GmbH, Ltd, SARL, B.V., S.p.A., Inc, ...), a letterhead at the top of the
first page or a sender line above the address window, the same name again in the
footer next to tax ids and bank details. The buyer without a heading is the address
block under the sender line, or the block beside a delivery address (those readings by
evidence are in invoice_letterhead).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from conveyor.agents.bank_codes import is_iban
from conveyor.agents.invoice_columns import column_label
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_letterhead import (
    buyer_by_address,
    buyer_by_evidence,
    buyer_by_name_alone,
    sender_line,
    vendor_by_evidence,
)
from conveyor.agents.invoice_marks import (
    ADDRESS,
    CONTACT,
    FAIR,
    GUESS,
    LABELLED,
    LIKELY,
    SURE,
    Block,
    Party,
    not_a_name,
)
from conveyor.agents.invoice_party_labels import (
    ADDRESSEE,
    ATTENTION,
    CHINESE_TAX_ID_WORD,
    HONORIFIC,
    IN_CHARGE,
    SALUTATION,
    TAX_ID,
    name_label,
    party_heading,
)
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.legal_forms import LEGAL_FORM, name_forms
from conveyor.documents.layout import Cell

__all__ = ["Party", "parties"]


def headings(sheet: Sheet) -> list[Block]:
    found = []
    for i, line in enumerate(sheet.lines):
        for k, cell in enumerate(line.cells):
            addressee = _addressee(line.cells, k)
            if addressee:
                # "株式会社山田商事 御中": a Japanese buyer's name with its honorific heads
                # the buyer's block (its address under it).
                found.append(Block("buyer", i, cell, addressee))
                continue
            named = _in_charge_of(sheet, i, cell)
            if named is not None and all(block.cell is not named for block in found):
                # "経理部 ご担当者様" under a name: the name is the buyer's.
                found.append(Block("buyer", i - 1, named, named.text.strip()))
                continue
            heading = party_heading(cell.text)
            if heading is None and ("\u00b7" in cell.text or " / " in cell.text):
                heading = _second_name(cell.text)
            if not heading:
                continue
            kind, end = heading
            rest = cell.text[end:].strip()
            # "DESTINATÁRIO / REMETENTE", "Customer / Kunde", "Empfänger · Destinatario":
            # words after a slash or a middle dot are the heading's other name (another
            # language, a synonym), not the party's.
            if re.fullmatch(r"[/\u00b7]\s*[^\W\d_]+(?:\s+[^\W\d_]+)?", rest):
                rest = ""
            # "Señor(es)", "Cliente(s)": the plural's ending, part of the heading.
            rest = re.sub(r"^\([^\W\d_]{1,3}\)", "", rest).strip()
            if rest.startswith(":") or not rest or rest.startswith("/"):
                rest = rest.lstrip(":/ ").strip() or _beside(line.cells, cell)
                found.append(Block(kind, i, cell, rest))
            elif (column := _value_column(sheet, i, cell, end)) is not None:
                # "Client  Some Long Client" over "        Company Name": the heading in a
                # column of labels, the name in the column of values beside it, run into
                # one cell; the name's next line in that column completes it.
                found.append(Block(kind, i, cell, column, by_column=True))
            elif party_heading(rest) or (TAX_ID.match(fold(rest)) and re.search(r"\d{4}", rest)):
                # Two headings close together ("Bill to  Ship to"): the first one's block;
                # a heading with the party's tax id printed beside it ("CONSUMIDOR CNPJ:
                # 18.191.228/0001-71"): the block under it. A heading word that begins a
                # tax id's label ("Customer VAT ID:" alone) heads no block.
                found.append(Block(kind, i, cell, ""))
    return found


def _addressee(cells: Sequence[Cell], k: int) -> str | None:
    """The name in cell `k` when a Japanese honorific ends it or stands alone in the next
    cell ("株式会社山田商事 御中", "山田商事  様"), and it is no label."""
    text = cells[k].text
    if LABELLED.match(text) or HONORIFIC.match(text.strip()):
        return None
    found = ADDRESSEE.match(text)
    if found:
        return found.group("name")
    alone = k + 1 < len(cells) and HONORIFIC.match(cells[k + 1].text.strip())
    return text.strip() if alone and ADDRESSEE.match(f"{text} 様") else None


def _in_charge_of(sheet: Sheet, index: int, cell: Cell) -> Cell | None:
    """The cell just above `cell`, in its column, when `cell` is a Japanese buyer's person
    in charge ("ご担当者様") and that cell is no label: the buyer's name."""
    if index == 0 or not IN_CHARGE.match(cell.text.strip()):
        return None
    above = [c for c in sheet.lines[index - 1].cells if abs(c.x0 - cell.x0) < 6]
    if not above or sheet.lines[index - 1].page != sheet.lines[index].page:
        return None
    text = above[0].text
    labelled = LABELLED.match(text) or field_label(text) or party_heading(text)
    return None if labelled or not_a_name(text) else above[0]


def _value_column(sheet: Sheet, index: int, cell: Cell, end: int) -> str | None:
    """The name beside a heading in the same cell, when the words after the heading begin
    where the lines below begin (a column of values): the name, with its next line in
    that column when that line is words only (a name set on two lines)."""
    words = cell.words
    taken = len(cell.text[:end].split())
    if taken >= len(words) or index + 1 >= len(sheet.lines):
        return None
    x = words[taken].x0
    below = sheet.lines[index + 1]
    under = [c for c in below.cells if abs(c.x0 - x) < 3]
    apart = words[taken].x0 - words[taken - 1].x1 >= 4.5  # wider than a space between words
    if below.page != sheet.lines[index].page or not under or not apart:
        return None
    name = " ".join(w.text for w in words[taken:])
    more = under[0].text.strip()
    if not any(ch.isdigit() for ch in more) and not CONTACT.search(more) and len(more) < 40:
        name = f"{name} {more}"
    return name


def _second_name(text: str) -> tuple[str, int] | None:
    """A heading printed in two languages whose second name is the heading
    ("Körperschaft · Ente creditore", "Leistungsempfänger / Destinatario"): its kind, and
    the whole cell as the heading. The first name is one or two words."""
    parts = re.split(r"\s+[/\u00b7]\s+|\u00b7", text, maxsplit=1)
    if len(parts) != 2 or not re.fullmatch(r"[^\W\d_]+(?:\s+[^\W\d_]+)?", parts[0].strip()):
        return None
    second = parts[1].strip()
    heading = party_heading(second)
    if heading is None or heading[1] < len(second.rstrip(" :")):
        return None
    return heading[0], len(text)


def _beside(cells: Sequence[Cell], heading: Cell) -> str:
    """The value printed to the right of a heading that ends its cell ("Sr.(s):   Joao Da
    Silva"), when the next cell is near and is neither a label nor another heading."""
    after = [c for c in cells if c.x0 >= heading.x1]
    if not after or after[0].x0 - heading.x1 > 120:
        return ""
    text = after[0].text.strip()
    # The colon may be printed at the start of the value's cell: "Señor(es) | : Name".
    if text.startswith(":"):
        text = text[1:].strip()
    elif not heading.text.rstrip().endswith(":"):
        return ""
    if LABELLED.match(text) or field_label(text) or sum_label(text) or party_heading(text):
        return ""
    if CONTACT.search(text) or TITLE.match(fold(text)) or ADDRESS.match(text):
        return ""
    return text


def _centre(cell: Cell) -> float:
    return (cell.x0 + cell.x1) / 2


def _centred(sheet: Sheet, index: int, heading: Cell) -> bool:
    """Whether a heading is centred over its box rather than set at its left edge: the
    first lines under it (up to three, before a gap) have cells, none of which begins in
    line with the heading, and some begin further left than its own start."""
    start = sheet.lines[index]
    bottom = start.y1
    seen = False
    for line in sheet.lines[index + 1 : index + 4]:
        if line.page != start.page or line.y0 - bottom > 2.8 * max(start.height, 8.0):
            break
        if any(abs(c.x0 - heading.x0) <= 12 for c in line.cells):
            return False
        seen = seen or any(c.x0 < heading.x0 - 12 for c in line.cells)
        bottom = line.y1
    return seen


def _span(sheet: Sheet, block: Block) -> tuple[float, float, bool]:
    """Where a block's cells begin and end across the page, and whether a cell is placed
    by its centre (under a centred heading) rather than by its start.

    Blocks side by side ("BILL TO | SHIP TO") divide the line between them. A heading set
    at its block's left edge owns the cells that begin from its own start to where the
    next block begins. A heading centred over its box ("VÂNZĂTOR" over "Nume | S.C. ...")
    owns the cells whose centre is nearer its centre than any other heading's on its
    line: its box reaches left of the heading, as far as half-way to its neighbour."""
    start = sheet.lines[block.line]
    beside = [c for c in start.cells if c is not block.cell and party_heading(c.text)]
    right = [c for c in beside if c.x0 > block.cell.x1]
    left = [c for c in beside if c.x1 < block.cell.x0]

    def begins(cell: Cell) -> float:
        # where the block under a heading to the right begins
        if _centred(sheet, block.line, cell):
            return (_centre(cell) + _centre(block.cell)) / 2
        return cell.x0 - 4

    if beside and _centred(sheet, block.line, block.cell):
        mid = _centre(block.cell)
        lo = max([(_centre(c) + mid) / 2 for c in left], default=mid - 260)
        hi = min([(_centre(c) + mid) / 2 for c in right], default=mid + 260)
        return lo, hi, True
    return block.cell.x0 - 12, min([block.cell.x0 + 260, *map(begins, right)]), False


def _block_lines(sheet: Sheet, block: Block) -> list[tuple[int, Cell]]:
    """The cells under a heading, in its column, until a gap or another heading."""
    out: list[tuple[int, Cell]] = []
    start = sheet.lines[block.line]
    bottom = start.y1
    lo, edge, by_centre = _span(sheet, block)
    right = [c for c in start.cells if c.x0 > block.cell.x1 and party_heading(c.text)]
    right_aligned = not right and block.cell.x1 > sheet.page_width(start.page) * 0.6
    for j in range(block.line + 1, min(len(sheet.lines), block.line + 14)):
        line = sheet.lines[j]
        if line.page != start.page or line.y0 - bottom > 2.8 * max(start.height, 8.0):
            break
        cells = [c for c in line.cells if lo <= (_centre(c) if by_centre else c.x0) < edge]
        if not cells and right_aligned:
            # a block set flush right under its heading: its lines end where the heading does
            cells = [c for c in line.cells if abs(c.x1 - block.cell.x1) < 12]
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


def _whole_name_label(text: str) -> bool:
    """Whether `text` is a name's label and nothing more ("Name", "Razão social:"): a name
    that begins with the label's word ("Nome do Destinatario Ltda") is a name."""
    end = name_label(text)
    return end is not None and text[end:].strip() in ("", ":")


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
            # A box with its label over its value: the cell just below, in line with it.
            # Such a label is printed smaller than its value ("Name" over "Street
            # Address" in one size is a placeholder name over its address).
            under = [c for jj, c in cells if jj > j and abs(c.x0 - cell.x0) < 6][:1]
            if (
                under
                and _height(cell) < 0.92 * _height(under[0])
                and not (LABELLED.match(under[0].text) or _whole_name_label(under[0].text))
            ):
                name = under[0].text
                j = next(jj for jj, c in cells if c is under[0])
        if not name:
            continue
        # A name too long for its field wraps upwards: the unlabelled line just above.
        above = [c for jj, c in cells if jj == j - 1]
        if (
            k > 0
            and value_cells
            and len(above) == 1
            and abs(above[0].x0 - value_cells[0].x0) < 6
            and not LABELLED.match(above[0].text)
        ):
            name = f"{above[0].text} {name}"
        return Party(name.strip(), SURE, _address_after(cells, j), _tax_id(cells), by_label=True)
    if block.rest and not LABELLED.match(block.rest) and not not_a_name(block.rest):
        start = cells[0][0] - (0 if block.by_column else 1) if cells else 0
        conf = FAIR if block.by_column else SURE
        return Party(block.rest, conf, _address_after(cells, start), _tax_id(cells))
    lines: list[str] = []
    first_j = None
    joined = False
    for j, row in _rows(cells):
        text = row[0].text.strip()
        labelled = (
            LABELLED.match(text)
            or field_label(text)
            or sum_label(text)
            or (len(row) > 1 and row[1].text.lstrip().startswith(":"))
            or text.startswith(":")
        )
        if labelled:
            if lines:
                break
            continue
        # A salutation over the name, or the account a payee's block opens with.
        if (SALUTATION.match(fold(text)) or is_iban(text)) and not lines:
            continue
        if not lines and not_a_name(text):
            return _attention(cells)  # the block opens with its street: it names no one
        if not lines:
            lines.append(text)
            first_j = j
            continue
        # A second line carrying the legal form completes a name that wrapped ("MVM
        # Musterhafter" over "Versicherungsverein a.G."). In a buyer's block, a name of
        # its own with a legal form under another name ("John Doe" over "Acme Corp") is
        # the company the invoice is addressed to, for the attention of the person.
        if (
            len(lines) == 1
            and LEGAL_FORM.search(text)
            and not LEGAL_FORM.search(lines[0])
            and not ADDRESS.search(text)
        ):
            if block.kind == "buyer" and name_forms(text):
                lines[0] = text
            else:
                lines[0] = f"{lines[0]} {text}"
            joined = True
        break
    if not lines:
        return Party()
    conf = FAIR if joined else LIKELY
    return Party(lines[0], conf, _address_after(cells, first_j or 0), _tax_id(cells))


# The closing formula of a letter, in the six languages: the name after it (on its
# line, or the next) signed the letter, and an invoice written as a letter is signed by
# its seller.
_CLOSING = re.compile(
    r"^(?:(?:kind|best|warm)\s+regards|regards|sincerely(?:\s+yours)?|yours\s+(?:sincerely|truly)|"
    r"many\s+thanks|thank\s+you|mit\s+freundlichen\s+grussen|freundliche\s+grusse|"
    r"viele\s+grusse|cordialement|bien\s+cordialement|salutations|"
    r"met\s+vriendelijke\s+groet(?:en)?|hartelijk\s+dank|vriendelijke\s+groet(?:en)?|"
    r"(?:un\s+)?saludo(?:s)?(?:\s+cordiales)?|atentamente|cordiali\s+saluti|distinti\s+saluti)"
    r"\s*[,.!]?\s*"
)
# A letter's greeting ("Dear ...", "Geachte ...", "Sehr geehrte ..."): the line the
# letter opens with, never its seller's name.
_GREETING = re.compile(
    r"^(?:dear|hello|hi|geachte|beste|sehr\s+geehrte\w*|liebe\w*|cher|chere|madame|monsieur|"
    r"estimad[oa]s?|gentile|egregio|spettabile)\b"
)
# A signature: two to five words, capitalised but for a family name's particles
# ("Richel Bilderbeek", "Ana M. Ruiz", "Sanne de Vries").
_PERSON = re.compile(
    r"^[A-ZÀ-Þ][^\W\d_]*\.?(?:[\s-]+(?:(?:de|van|der|den|von|da|di|du|del|la|le)\s+)*"
    r"[A-ZÀ-Þ][^\W\d_]*\.?){1,3}$"
)


def _signer(sheet: Sheet) -> Party | None:
    for i, line in enumerate(sheet.lines):
        for cell in line.cells:
            match = _CLOSING.match(fold(cell.text))
            if not match:
                continue
            name = cell.text[match.end() :].strip()
            if not name and i + 1 < len(sheet.lines) and sheet.lines[i + 1].page == line.page:
                name = sheet.lines[i + 1].cells[0].text.strip()
            if _PERSON.match(name) and not not_a_name(name) and not TITLE.match(fold(name)):
                return Party(name, GUESS)
    return None


def _best_block(sheet: Sheet, blocks: list[Block]) -> Party:
    """The party of the first block of its kind; when it names no one, a later block's
    whose name stands behind a name label. A heading word printed as another field's
    value ("Issuer: Provider", tax-id labels under it) heads no block, and reading it
    finds no name; a later block read only by its first line may be a remittance
    slip's "To:" (the seller), so it is not taken."""
    if not blocks:
        return Party()
    first = _from_block(sheet, blocks[0])
    if first.name:
        return first
    for block in blocks[1:]:
        party = _from_block(sheet, block)
        if party.name and party.by_label:
            return party
    return first


def _height(cell: Cell) -> float:
    return max((w.y1 - w.y0 for w in cell.words), default=0.0)


def _attention(cells: list[tuple[int, Cell]]) -> Party:
    """The person a block without a name line is addressed to ("Attention: John Doe")."""
    for _, cell in cells:
        match = ATTENTION.match(fold(cell.text))
        if match:
            name = cell.text[match.end() :].strip()  # fold keeps the length
            if name and not not_a_name(name):
                return Party(name, LIKELY)
    return Party()


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
        if CONTACT.search(text) or TAX_ID.search(fold(text)) or field_label(text):
            break
        if LABELLED.match(text):
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


# And Japan's qualified-invoice registration number: "T" and 13 digits.
_VAT_ID = re.compile(
    r"\b([A-Z]{2}\s?[0-9A-Z][0-9A-Z .]{6,16}[0-9A-Z])\b|(?<![0-9A-Za-z])(T\d{13})(?!\d)"
)
# The tax id's word begins a word: "USt-IdNr.", "VAT", not "Austria", "Industrie", "private";
# Japanese "登録番号" follows other words without a space.
_VAT_WORD = re.compile(r"(?i)\b(?:ust|vat|tva|btw|iva|mwst|uid)|登録番号")
# China's taxpayer number (its unified social credit code, 18 letters and digits, or an
# older 15 or 20) and Taiwan's unified business number (8 digits), behind their words:
# "纳税人识别号: 91110000XXXXXXXXXX", "統一編號: 12345678".
_CHINESE_TAX_ID = re.compile(
    rf"(?:{CHINESE_TAX_ID_WORD})\s*[:\uff1a]?\s*([0-9A-Z]{{15,20}}|\d{{8}})(?![0-9A-Za-z])"
)


def _tax_id(cells: list[tuple[int, Cell]]) -> str | None:
    """A VAT id in the block: a country's two letters and the digits of a number (every
    country's has six or more), on a line that names it. A town and postcode in capitals
    ("LONDON SW1A 1AA") is none."""
    for _, cell in cells:
        chinese = _CHINESE_TAX_ID.search(cell.text)
        if chinese:
            return chinese.group(1)
        if not _VAT_WORD.search(cell.text):
            continue
        for match in _VAT_ID.finditer(cell.text):
            found = match.group(1) or match.group(2)
            if sum(ch.isdigit() for ch in found) >= 6:
                return found.strip()
    return None


def _not_a_label(party: Party) -> Party:
    """A name that is all a heading or a title ("Bill To", "Invoice", "Provider"), or a
    label ending with its colon ("(Gazette 1163/1997):"), was read from the wrong line: it
    is no name."""
    if not party.name:
        return party
    folded = fold(party.name.strip(" :"))
    heading = party_heading(folded)
    label = party.name.rstrip().endswith(":")
    if (
        (heading and heading[1] >= len(folded))
        or TITLE.match(folded)
        or label
        or not_a_name(party.name)
        or _column_labels(folded)
    ):
        return Party(address=party.address, tax_id=party.tax_id)
    return party


def _column_labels(folded: str) -> bool:
    """Whether `folded` is nothing but the labels of an item table's columns
    ("Description", "DESCRIPTION QTY UNIT AMOUNT", "Artikel"): a header's words, read as a
    name where no block names the party."""
    start = 0
    while start < len(folded):
        found = column_label(folded, start)
        if found is None:
            return False
        start = found[1]
        while start < len(folded) and not folded[start].isalnum():
            start += 1
    return bool(folded)


def _title_line(sheet: Sheet) -> int | None:
    """The line of the document's title: a cell that is its title word alone, or with a
    number ("ΤΙΜΟΛΟΓΙΟ", "INVOICE #12"), not a field's label ("Invoice date:")."""
    for i, line in enumerate(sheet.lines):
        for cell in line.cells:
            folded = fold(cell.text.strip())
            match = TITLE.match(folded)
            if match and not re.search(r"[^\W\d_]{3}|:", folded[match.end() :]):
                return i
    return None


def _labelled_under_title(sheet: Sheet, taken: set[Cell], vendor: str | None) -> Party:
    """A name's label with its value a few lines under the document's title, in no block
    under a heading ("INVOICE 7" over "Name: Harbour Foods Ltd", a Greek invoice's
    "Επωνυμία:"): read when nothing else names the buyer, since a seller's name is its
    letterhead, printed above the title."""
    title = _title_line(sheet)
    if title is None:
        return Party()
    page = sheet.lines[title].page
    for line in sheet.lines[title + 1 : title + 8]:
        if line.page != page:
            break
        for k, cell in enumerate(line.cells):
            end = name_label(cell.text)
            rest = cell.text[end:].strip() if end is not None else ""
            if cell in taken or not rest.startswith(":"):
                continue
            value = rest[1:].strip() or (
                line.cells[k + 1].text.strip() if k + 1 < len(line.cells) else ""
            )
            if (
                value
                and not LABELLED.match(value)
                and not not_a_name(value)
                and fold(value) != fold(vendor or "")
            ):
                return Party(value, FAIR)
    return Party()


def parties(sheet: Sheet) -> tuple[Party, Party]:
    blocks = headings(sheet)
    vendor = _best_block(sheet, [b for b in blocks if b.kind == "seller"])
    customer = _best_block(sheet, [b for b in blocks if b.kind == "buyer"])
    # The buyer's and the delivery blocks' cells are nobody's letterhead.
    skip: set[Cell] = set()
    for block in blocks:
        if block.kind in ("buyer", "other"):
            skip |= {cell for _, cell in _block_lines(sheet, block)} | {block.cell}
    # Names found by evidence rather than under a heading are checked for being labels.
    if vendor.name is None:
        vendor = _not_a_label(vendor_by_evidence(sheet, skip))
    if vendor.name_conf <= GUESS or _GREETING.match(fold(vendor.name or "")):
        vendor = _signer(sheet) or vendor
    if customer.name and vendor.name and fold(customer.name) == fold(vendor.name):
        # No one bills themselves: the heading was the seller's ("Account holder" over
        # the seller's bank account), and the buyer is found as if it had none.
        customer = Party()
    if customer.name is None:
        others = [b for b in blocks if b.kind == "other"]
        customer = _not_a_label(
            buyer_by_evidence(sheet, sender_line(sheet, vendor.name), others, vendor.name)
        )
    if customer.name is None:
        customer = _not_a_label(buyer_by_address(sheet, vendor.name))
    if customer.name is None:
        customer = _not_a_label(buyer_by_name_alone(sheet, vendor.name))
    if customer.name is None:
        taken = {cell for block in blocks for _, cell in _block_lines(sheet, block)}
        customer = _not_a_label(_labelled_under_title(sheet, taken, vendor.name))
    if vendor.tax_id is None and vendor.name:
        # The first VAT id of the pages outside the buyer's and the delivery blocks: a
        # buyer's "VAT No." under its heading is no seller's. The cells are chosen by
        # _tax_id's own word, so that "Austria" or "private" does not stand first.
        vendor.tax_id = _tax_id(
            [
                (i, c)
                for i, line in enumerate(sheet.lines)
                for c in line.cells
                if _VAT_WORD.search(c.text) and c not in skip
            ][:1]
        )
    return vendor, customer
