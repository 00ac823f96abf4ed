"""Every name-like text of an invoice's first page as a candidate for the seller's or the
buyer's name, for a learned chooser (invoice_party_model), with features that name no
document, vendor, layout or language: words only through the vocabularies the rules use
(a legal form, a party's heading, a name's label, a tax id's words), where it stands, what
its block holds, how it is shaped, whether the rules chose it.

    candidates(sheet, table, chosen) -> list[Candidate]   # one per distinct folded text

A candidate is a cell's text, or a part of it: the first part of a sender line ("Name •
Street • Town"), what follows a heading, a name's label or another label in its cell, the
name up to its legal form, a cell and the one under it (a name set on two lines). The
rules' own names (`chosen`, by role) are candidates wherever they stand. A text printed in
several places is one candidate: each feature is the most any of its places has.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

from conveyor.agents.bank_codes import is_iban
from conveyor.agents.invoice_labels import TITLE, field_label, fold, sum_label
from conveyor.agents.invoice_marks import (
    CONTACT,
    LABELLED,
    POSTCODE,
    STREET,
    not_a_name,
    segments,
)
from conveyor.agents.invoice_party_labels import SALUTATION, TAX_ID, name_label, party_heading
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.legal_forms import name_forms
from conveyor.documents.layout import Cell

ROLES = ("vendor", "customer")
KINDS = ("seller", "buyer", "other")
HOW = ("cell", "segment", "after_heading", "after_name", "after_label", "to_form", "joined")
BLOCK = ("tax", "iban", "email", "phone", "web", "postcode", "street")

FEATURES = (
    *(f"how_{how}" for how in HOW),
    *(f"{place}_{kind}" for place in ("same", "left", "above") for kind in KINDS),
    "above_near",  # 1 / lines between it and the heading above it
    "first_under",  # the first line under its heading
    "name_label",  # a name's label before it, beside it or over it
    "other_label",  # another field's label before it in its cell
    *(f"block_{what}" for what in BLOCK),
    "salutation_above",  # a salutation alone on the line over it ("Herrn", "Mrs")
    "under_sender",  # a sender line ("Name - Street - Town") up to three lines over it
    "first_legal",  # the first name with a legal form on the page
    "later_legal",  # a name with a legal form after the first
    "block_top",  # the first line of its block
    "block_depth",  # lines of its block above it / 5
    "first_page",
    "height",  # how far down its page, 0 the top
    "top_fifth",
    "top_third",
    "foot",  # the last sixth of its page
    "left",  # where it begins across the page, 0 the left edge
    "right_half",
    "left_third",
    "right_third",
    "window",  # where an envelope's window is: the upper third's left half, under the top
    "size",  # its words' height / the page's median word height
    "largest",  # as tall as the tallest words of its page
    "over_title",
    "under_title",
    "title_line",
    "printed",  # log(1 + times printed on the pages)
    "footer_again",  # printed again in a page's last sixth, elsewhere
    "domain",  # the name of an e-mail's or a web address's domain on the pages
    "in_table",
    "legal",  # a legal form ends a word of it
    "legal_end",  # ... at its end
    "caps",  # share of its letters in capitals
    "all_caps",
    "digit_share",
    "digits",
    "length",  # characters / 40
    "words",  # words / 5
    "one_word",
    "comma",
    "contact",
    "street",
    "postcode",
    "not_a_name",
    "title",
    "field_label",
    "sum_label",
    "heading_only",  # a party's heading and nothing more
    "starts_heading",  # a party's heading, then more ("Bill To Acme Ltd")
    "starts_name_label",  # "Name: Acme Ltd"
    "starts_label",  # "Invoice For: Acme Ltd", any label and its colon
    "ends_colon",  # a label itself
    "salutation_before",
    "person",  # two to four capitalised words
    *(f"rules_{role}" for role in ROLES),
    *(f"rules_{role}_conf" for role in ROLES),
    "bias",
)

MAX_LENGTH = 80
FOOT = 5 / 6
_DOMAIN = re.compile(r"(?:@|www\.|https?://(?:www\.)?)([a-z0-9][a-z0-9-]{2,})\.", re.IGNORECASE)
_PHONE = re.compile(r"\b(?:tel|phone|fax|mob|telefon|telefono|telefone|gsm)\b|\+\d", re.I)
_PERSON = re.compile(r"^[A-ZÀ-Þ][^\W\d_]*\.?(?:\s+[A-ZÀ-Þ][^\W\d_]*\.?){1,3}$")


@dataclass
class Candidate:
    value: str
    features: dict[str, float] = field(default_factory=dict)
    times: int = 0

    def vector(self) -> list[float]:
        return [self.features.get(name, 0.0) for name in FEATURES]


@dataclass
class _Page:
    """What the features of one sheet share: computed once."""

    first: int
    title: int | None
    median: float
    tallest: float
    domains: frozenset[str]
    folded_lines: list[str]


def _key(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", fold(text)))


def _cell_height(cell: Cell) -> float:
    return max((w.y1 - w.y0 for w in cell.words), default=0.0)


def _shared(sheet: Sheet) -> _Page:
    first = sheet.lines[0].page
    title = next(
        (
            i
            for i, line in enumerate(sheet.lines)
            if line.page == first and any(TITLE.match(fold(c.text.strip())) for c in line.cells)
        ),
        None,
    )
    heights = [w.y1 - w.y0 for line in sheet.lines if line.page == first for w in line.words]
    median = statistics.median(heights) if heights else 9.0
    tallest = max(heights, default=9.0)
    domains = frozenset(
        m.group(1).lower().replace("-", "") for m in _DOMAIN.finditer(sheet.text) if m.group(1)
    )
    folded = [_key(line.text) for line in sheet.lines]
    return _Page(first, title, max(median, 1.0), tallest, domains, folded)


def _parts(cell: Cell, below: Cell | None) -> list[tuple[str, str, str]]:
    """The candidate texts of a cell: (text, how, the text before it in the cell)."""
    text = cell.text.strip()
    out = [(text, "cell", "")]
    parts = segments(text)
    if len(parts) > 1:
        out.append((parts[0], "segment", ""))
    heading = party_heading(text)
    if heading:
        rest = text[heading[1] :].strip(" :/")
        out.append((rest, "after_heading", text[: heading[1]]))
    end = name_label(text)
    if end is not None and text[end:].strip().startswith(":"):
        out.append((text[end:].strip(" :"), "after_name", text[:end]))
    elif not heading and LABELLED.match(text):
        colon = text.index(":")
        out.append((text[colon + 1 :].strip(), "after_label", text[:colon]))
    forms = name_forms(text)
    if forms and forms[-1].end() < len(text.rstrip(" .,")):
        out.append((text[: forms[-1].end()].strip(), "to_form", ""))
    if below is not None:
        under = below.text.strip()
        if not any(ch.isdigit() for ch in text + under) and len(text) + len(under) < 60:
            out.append((f"{text} {under}", "joined", ""))
    return out


def _wanted(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 2 and len(text) <= MAX_LENGTH


def candidates(
    sheet: Sheet,
    table: tuple[int, int] | None = None,
    chosen: dict[str, tuple[str | None, float]] | None = None,
) -> list[Candidate]:
    """The candidates of the sheet's first page; `chosen`: the rules' name and its
    confidence for each role, candidates wherever they stand."""
    if not sheet.lines:
        return []
    chosen = chosen or {}
    shared = _shared(sheet)
    found: dict[str, Candidate] = {}
    for i, line in enumerate(sheet.lines):
        if line.page != shared.first:
            continue
        for c, cell in enumerate(line.cells):
            for text, how, before in _parts(cell, _under(sheet, i, cell)):
                if _wanted(text):
                    _place(found, sheet, shared, i, c, text, how, before, table)
    for role in ROLES:
        name = chosen.get(role, (None, 0.0))[0]
        if name and _wanted(name) and _key(name) not in found:
            at = _find(sheet, name)
            if at is not None:
                _place(found, sheet, shared, *at, name, "cell", "", table)
            else:
                found[_key(name)] = Candidate(name, {"bias": 1.0}, 1)
    legal = [key for key, cand in found.items() if cand.features.get("legal_end")]
    for rank, key in enumerate(legal):
        found[key].features["first_legal" if rank == 0 else "later_legal"] = 1.0
    for key, cand in found.items():
        cand.features["printed"] = math.log1p(sum(line.count(key) for line in shared.folded_lines))
        for role in ROLES:
            name, conf = chosen.get(role, (None, 0.0))
            if name and _key(name) == key:
                cand.features[f"rules_{role}"] = 1.0
                cand.features[f"rules_{role}_conf"] = conf
    return [c for key, c in found.items() if key]


def _find(sheet: Sheet, name: str) -> tuple[int, int] | None:
    key = _key(name)
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            if key in _key(cell.text):
                return i, c
    return None


def _under(sheet: Sheet, index: int, cell: Cell) -> Cell | None:
    """The cell under `cell` on the next line, in line with its left edge and close."""
    if index + 1 >= len(sheet.lines):
        return None
    line, below = sheet.lines[index], sheet.lines[index + 1]
    if below.page != line.page or below.y0 - line.y1 > line.height:
        return None
    return next((c for c in below.cells if abs(c.x0 - cell.x0) < 6), None)


def _place(
    found: dict[str, Candidate],
    sheet: Sheet,
    shared: _Page,
    i: int,
    c: int,
    text: str,
    how: str,
    before: str,
    table: tuple[int, int] | None,
) -> None:
    key = _key(text)
    cand = found.setdefault(key, Candidate(text))
    cand.times += 1
    for name, x in _features(sheet, shared, i, c, text, how, before, table).items():
        cand.features[name] = max(cand.features.get(name, 0.0), x)


def _heading_kind(text: str) -> str | None:
    heading = party_heading(text)
    return heading[0] if heading else None


def _features(
    sheet: Sheet,
    shared: _Page,
    i: int,
    c: int,
    text: str,
    how: str,
    before: str,
    table: tuple[int, int] | None,
) -> dict[str, float]:
    line = sheet.lines[i]
    cell = line.cells[c]
    f: dict[str, float] = {"bias": 1.0, f"how_{how}": 1.0}
    kind = _heading_kind(before) if before else None
    if kind:
        f[f"same_{kind}"] = 1.0
    if before and name_label(before) is not None:
        f["name_label"] = 1.0
    elif before and not kind:
        f["other_label"] = 1.0
    if c > 0:
        left = line.cells[c - 1].text.strip()
        left_kind = _heading_kind(left)
        if left_kind:
            f[f"left_{left_kind}"] = 1.0
        if name_label(left) is not None and len(left) < 30:
            f["name_label"] = 1.0
    _above(sheet, i, cell, f)
    _over(sheet, i, cell, f)
    _block(sheet, i, cell, f)
    height = line.y0 / max(sheet.page_height(line.page), 1.0)
    width = max(sheet.page_width(line.page), 1.0)
    f["first_page"] = 1.0 if line.page == shared.first else 0.0
    f["height"] = height
    f["top_fifth"] = 1.0 if height < 0.2 else 0.0
    f["top_third"] = 1.0 if height < 1 / 3 else 0.0
    f["foot"] = 1.0 if height > FOOT else 0.0
    f["left"] = cell.x0 / width
    f["right_half"] = 1.0 if cell.x0 > width / 2 else 0.0
    f["left_third"] = 1.0 if cell.x0 < width / 3 else 0.0
    f["right_third"] = 1.0 if cell.x0 > 2 * width / 3 else 0.0
    f["window"] = 1.0 if 0.1 < height < 1 / 3 and cell.x0 < width / 2 else 0.0
    size = _cell_height(cell)
    f["size"] = min(size / shared.median, 3.0)
    f["largest"] = 1.0 if size >= shared.tallest - 0.5 else 0.0
    if shared.title is not None and sheet.lines[shared.title].page == line.page:
        f["over_title"] = 1.0 if i < shared.title else 0.0
        f["under_title"] = 1.0 if i > shared.title else 0.0
        f["title_line"] = 1.0 if i == shared.title else 0.0
    key = _key(text)
    f["footer_again"] = (
        1.0
        if any(
            j != i
            and key in shared.folded_lines[j]
            and sheet.lines[j].y0 > FOOT * sheet.page_height(sheet.lines[j].page)
            for j in range(len(sheet.lines))
        )
        else 0.0
    )
    squashed = key.replace(" ", "")
    first_word = key.split()[0] if key else ""
    f["domain"] = (
        1.0
        if any(
            (len(d) >= 4 and d in squashed) or (len(first_word) >= 4 and first_word in d)
            for d in shared.domains
        )
        else 0.0
    )
    f["in_table"] = 1.0 if table and table[0] < i < table[1] else 0.0
    _shape(text, f)
    return f


def _above(sheet: Sheet, i: int, cell: Cell, f: dict[str, float]) -> None:
    """The nearest party heading over the cell, up to six lines up on its page."""
    line = sheet.lines[i]
    for j in range(i - 1, max(-1, i - 7), -1):
        above = sheet.lines[j]
        if above.page != line.page:
            return
        over = [o for o in above.cells if o.x0 <= cell.x1 + 12 and o.x1 >= cell.x0 - 12]
        for o in over:
            kind = _heading_kind(o.text)
            if kind:
                f[f"above_{kind}"] = 1.0
                f["above_near"] = 1.0 / (i - j)
                f["first_under"] = 1.0 if i - j == 1 else 0.0
                return
            if name_label(o.text) is not None and len(o.text.strip(" :")) < 30:
                f["name_label"] = 1.0 if i - j == 1 else f.get("name_label", 0.0)


def _over(sheet: Sheet, i: int, cell: Cell, f: dict[str, float]) -> None:
    """A salutation on the line just over the cell, a sender line up to three over it."""
    line = sheet.lines[i]
    for j in range(i - 1, max(-1, i - 4), -1):
        above = sheet.lines[j]
        if above.page != line.page:
            return
        over = [o for o in above.cells if o.x0 <= cell.x1 and o.x1 >= cell.x0 - 12]
        if not over:
            continue
        text = over[0].text.strip()
        if j == i - 1 and SALUTATION.match(fold(text)):
            f["salutation_above"] = 1.0
        if len(segments(text)) >= 3 and _cell_height(over[0]) <= _cell_height(cell):
            f["under_sender"] = 1.0


def _block(sheet: Sheet, i: int, cell: Cell, f: dict[str, float]) -> None:
    """What the block of lines the cell stands in holds (the cells in its column, line
    after line without a gap), and how deep in it the cell is."""
    line = sheet.lines[i]

    def column(j: int) -> Cell | None:
        other = sheet.lines[j]
        return next(
            (o for o in other.cells if o.x0 <= cell.x1 and o.x1 >= cell.x0 - 4 and o is not cell),
            None,
        )

    depth = 0
    bottom = line.y0
    for j in range(i - 1, max(-1, i - 8), -1):
        other = sheet.lines[j]
        if other.page != line.page or bottom - other.y1 > 1.2 * max(line.height, 8.0):
            break
        if column(j) is None:
            break
        depth += 1
        bottom = other.y0
    f["block_top"] = 1.0 if depth == 0 else 0.0
    f["block_depth"] = min(depth, 5) / 5
    texts = [cell.text]
    bottom = line.y1
    for j in range(i + 1, min(len(sheet.lines), i + 8)):
        other = sheet.lines[j]
        if other.page != line.page or other.y0 - bottom > 1.2 * max(line.height, 8.0):
            break
        under = column(j)
        if under is None:
            break
        texts.append(under.text)
        bottom = other.y1
    for t in texts[1:] if len(texts) > 1 else []:
        folded = fold(t)
        f["block_tax"] = max(f.get("block_tax", 0.0), 1.0 if TAX_ID.search(folded) else 0.0)
        iban = is_iban(t.replace(" ", "")) or "iban" in folded
        f["block_iban"] = max(f.get("block_iban", 0.0), 1.0 if iban else 0.0)
        f["block_email"] = max(f.get("block_email", 0.0), 1.0 if "@" in t else 0.0)
        f["block_phone"] = max(f.get("block_phone", 0.0), 1.0 if _PHONE.search(t) else 0.0)
        web = "www." in folded or "http" in folded
        f["block_web"] = max(f.get("block_web", 0.0), 1.0 if web else 0.0)
        f["block_postcode"] = max(f.get("block_postcode", 0.0), 1.0 if POSTCODE.search(t) else 0.0)
        f["block_street"] = max(f.get("block_street", 0.0), 1.0 if STREET.match(t) else 0.0)


def _shape(text: str, f: dict[str, float]) -> None:
    letters = [ch for ch in text if ch.isalpha()]
    upper = sum(ch.isupper() for ch in letters)
    digits = sum(ch.isdigit() for ch in text)
    words = text.split()
    forms = name_forms(text)
    folded = fold(text.strip(" :"))
    heading = party_heading(folded)
    f["legal"] = 1.0 if forms else 0.0
    f["legal_end"] = 1.0 if forms and forms[-1].end() >= len(text.rstrip(" .,")) else 0.0
    f["caps"] = upper / max(len(letters), 1)
    f["all_caps"] = 1.0 if letters and upper == len(letters) else 0.0
    f["digit_share"] = digits / max(len(text), 1)
    f["digits"] = 1.0 if digits else 0.0
    f["length"] = len(text) / 40
    f["words"] = min(len(words), 10) / 5
    f["one_word"] = 1.0 if len(words) == 1 else 0.0
    f["comma"] = 1.0 if "," in text else 0.0
    f["contact"] = 1.0 if CONTACT.search(text) else 0.0
    f["street"] = 1.0 if STREET.match(text) else 0.0
    f["postcode"] = 1.0 if POSTCODE.search(text) else 0.0
    f["not_a_name"] = 1.0 if not_a_name(text) else 0.0
    f["title"] = 1.0 if TITLE.match(folded) else 0.0
    f["field_label"] = 1.0 if field_label(text) else 0.0
    f["sum_label"] = 1.0 if sum_label(text) else 0.0
    f["heading_only"] = 1.0 if heading and heading[1] >= len(folded) else 0.0
    f["starts_heading"] = 1.0 if heading and heading[1] < len(folded) else 0.0
    f["starts_name_label"] = 1.0 if name_label(text) is not None else 0.0
    f["starts_label"] = 1.0 if LABELLED.match(text) else 0.0
    f["ends_colon"] = 1.0 if text.rstrip().endswith(":") else 0.0
    f["salutation_before"] = 1.0 if words and SALUTATION.match(fold(words[0])) else 0.0
    f["person"] = 1.0 if _PERSON.match(text) else 0.0
