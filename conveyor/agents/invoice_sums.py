"""The net, tax and gross totals: every labelled amount is a candidate, and the
combination that adds up wins.

Candidates come from sum labels (invoice_sum_labels.SUM_LABELS) with the amounts to their
right (the first and the last before the next label: "Umsatzsteuer (S) | 16,90 | 7 |
1,18" offers the base and the tax) or below them. A combination net + tax = gross, and
the line items summing to the net, are evidence worth more than any one label; an
amount to pay ("Zahlbetrag", "Amount due") stands in for the gross only when nothing
else does, since prepayments and earlier balances make it differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from itertools import product

from conveyor.agents.invoice_labels import fold, sum_label
from conveyor.agents.invoice_sheet import BELOW_LINES, Sheet, Spot
from conveyor.agents.invoice_sum_labels import NO_VAT, TAX_WORD
from conveyor.agents.invoice_table_header import find_header
from conveyor.agents.values import cell_amounts, currency_of
from conveyor.documents.layout import Cell, Line

CENT = Decimal("0.01")
SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6

# How much each kind of label says for the field it names, by where the value stood.
PRIOR = {
    "net": 1.0,
    "lines": 0.6,
    "tax": 1.0,
    "gross": 1.0,
    "due": 0.5,
    "charge": 1.0,
    "discount": 1.0,
    "withheld": 1.0,
}
# A sum's label with three amounts or more, two of them adding up to the last ("Sum |
# 35 311,41 | 8 827,85 | 44 139,26" under columns without, of and with VAT; "Yhteensä |
# 200,00 | 24,00 | 48,00 | 248,00" with the rate between): net, tax and gross.
ROW_OF_THREE = 0.9
MAX_ROW = 5


_QUALIFIER = re.compile(r"^\([^()]{1,24}\)")


@dataclass(frozen=True)
class Amount:
    kind: str
    value: Decimal
    weight: float
    line: int
    doubted: bool = False  # read where no label of its own names it: never read for sure


def candidates(sheet: Sheet) -> list[Amount]:
    found: list[Amount] = []
    pairs: list[tuple[int, Decimal, Decimal]] = []
    for i, line in enumerate(sheet.lines):
        cells = _qualified(sheet, line.cells)
        labelled = [sum_label(cell.text) for cell in cells]
        if not any(labelled):
            found += _under_a_row_of_labels(sheet, i)
            continue
        if _is_header(line):
            continue  # "Description | Price | Qty | Subtotal": a column's name, not a sum's
        for c, cell in enumerate(cells):
            label = labelled[c]
            if not label:
                continue
            kind, end = label
            if kind.startswith("-"):
                continue
            values: list[tuple[Decimal, float]] = []
            # What qualifies the label in parentheses stands between it and its value:
            # "Subtotal (12 pcs): 46.50", "Discount (10%): 4.65", "VAT (15.2%): 7.07".
            rest = _QUALIFIER.sub("", cell.text[end:].strip(" :"), count=1).strip(" :")
            amount = sheet.amount(rest) if rest else None
            if isinstance(amount, Decimal):
                values.append((amount, 1.0))
            right: list[Decimal] = []
            marked: list[Decimal] = []
            above = _labels_above(sheet, i)
            for other in cells[c + 1 :]:
                if sum_label(other.text) and not other.text[:1].isdigit():
                    break
                if any(a.x0 - 4 <= other.x0 and other.x1 <= a.x1 + 4 for a in above):
                    continue  # the value of the label printed over it, not of this one
                value = sheet.amount(other.text)
                if isinstance(value, Decimal):
                    right.append(value)
                    if currency_of(other.text):
                        marked.append(value)
                else:
                    right += cell_amounts(other.text, sheet.style)  # columns run together
            # "TOTAL | 55.00 | $4555.00": of several amounts, those printed as money are
            # the sums; the bare ones are hours, quantities or rates.
            if marked and len(marked) < len(right):
                right = marked
            row = _net_tax_gross(right) if kind in ("net", "lines", "gross", "due") else None
            if row is not None:
                for part, value in zip(("net", "tax", "gross"), row, strict=True):
                    found.append(Amount(part, value, ROW_OF_THREE, i))
                continue
            if kind in ("net", "gross") and len(right) == 2 and 0 < right[1] < right[0]:
                pairs.append((i, right[0], right[1]))
            if right:
                values.append((right[0], 1.0 if len(right) == 1 else 0.8))
                if len(right) > 1:
                    values.append((right[-1], 0.8))
            # The last label of its line, or a row of labels over a row of values
            # ("Wartość netto | Kwota VAT | Wartość brutto"): the value is below it.
            if not values and (
                c == len(cells) - 1 or sum_label(cells[c + 1].text) or _a_heading(cells[c + 1])
            ):
                boxed = sum(1 for found_label in labelled if found_label) >= 3
                spots = _in_its_box(sheet, i, cells, c) if boxed else sheet.below(i, cell, 1)
                for spot in spots:
                    value = sheet.amount(spot.text)
                    if isinstance(value, Decimal):
                        values.append((value, 0.6))
            for value, weight in values:
                found.append(Amount(kind, value, weight * PRIOR[kind], i))
    return _net_and_tax_rows(found, pairs)


def _net_and_tax_rows(
    found: list[Amount], pairs: list[tuple[int, Decimal, Decimal]]
) -> list[Amount]:
    """A sum's label with two amounts, the second a tax's share of the first, whose sum
    another line states as the total: the net and the tax under their columns, as a
    Chinese VAT invoice's "合计 | 11,000.00 | 660.00" over "价税合计 ¥11,660.00"."""
    for i, net, tax in pairs:
        totals = {a.value for a in found if a.kind in ("gross", "due") and a.line != i}
        if _a_rate(net, tax) and net + tax in totals:
            found = [a for a in found if a.line != i]
            found += [Amount("net", net, ROW_OF_THREE, i), Amount("tax", tax, ROW_OF_THREE, i)]
    return found


def _under_a_row_of_labels(sheet: Sheet, index: int) -> list[Amount]:
    """A line of amounts with no label of its own, just under a line of three labels or
    more, one a tax's, that heads no item table ("Rate | Amount net | Amount of tax |
    Amount gross" over "23% | 13 915,00 | 3 200,45 | 17 115,45"): when two of its amounts
    make the last, and the one taken for the tax stands in the tax's label's box, they are
    the net, the tax and the gross. The other labels may be words not known: read at a
    guess short of sure."""
    above, line = _just_above(sheet, index), sheet.lines[index]
    if above is None:
        return []
    if len(above.cells) < 3 or any(ch.isdigit() for ch in above.text) or _is_header(above):
        return []
    boxes = [
        _box(sheet, above.page, above.cells, c)
        for c, cell in enumerate(above.cells)
        if (label := sum_label(cell.text)) and label[0] == "tax"
    ]
    if not boxes:
        return []
    amounts = [
        (value, cell)
        for cell in line.cells
        if isinstance(value := sheet.amount(cell.text), Decimal)
    ]
    row = _net_tax_gross([value for value, _ in amounts])
    if row is None:
        return []
    tax_cell = next(cell for value, cell in amounts if value == row[1])
    if not any(left <= tax_cell.x0 and tax_cell.x1 <= right for left, right in boxes):
        return []
    return [
        Amount(part, value, ROW_OF_THREE, index, doubted=True)
        for part, value in zip(("net", "tax", "gross"), row, strict=True)
    ]


# "netto" / "brutto" / "net" / "gross" set apart from the words before it: what it qualifies.
_QUALIFIER_WORD = re.compile(r"(?:netto|brutto|net|gross|nett)\.?", re.IGNORECASE)


def _qualified(sheet: Sheet, cells: tuple[Cell, ...]) -> tuple[Cell, ...]:
    """The cells of a line with a lone "netto" or "brutto" joined to the words before it, as
    one label: "Gezahlter Betrag | brutto | 500,00" is a paid amount, "Gesamtsumme | netto"
    the net, not a gross sum and a net of their own."""
    if len(cells) < 2 or not any(_QUALIFIER_WORD.fullmatch(c.text) for c in cells[1:]):
        return cells
    joined: list[Cell] = [cells[0]]
    for cell in cells[1:]:
        before = joined[-1]
        if _QUALIFIER_WORD.fullmatch(cell.text) and sheet.amount(before.text) is None:
            joined[-1] = Cell(before.words + cell.words)
        else:
            joined.append(cell)
    return tuple(joined)


# A total's word in a net's label ("Total excl. tax", "Gesamtsumme netto", "Totaal excl.
# BTW"), as a net alone ("Netto", "Subtotal", "Sub-total") has none.
_TOTAL_WORD = re.compile(r"(?<!sub-)(?<!sub )\b(?:total|totale|totaal|totalt|gesamt\w*|razem)\b")


def _a_total_s_label(sheet: Sheet, nets: list[Amount]) -> bool:
    """Whether a line that offers one of `nets` names a total."""
    return any(_TOTAL_WORD.search(fold(sheet.lines[a.line].text)) for a in nets if a.line >= 0)


def _just_above(sheet: Sheet, index: int) -> Line | None:
    """The line just above line `index`, when it is on its page and no farther than a
    line and a half: a row of labels whose values are printed under them."""
    if index == 0:
        return None
    line, above = sheet.lines[index], sheet.lines[index - 1]
    if above.page != line.page or line.y0 - above.y1 > 1.5 * max(above.height, 8.0):
        return None
    return above


def _labels_above(sheet: Sheet, index: int) -> list[Cell]:
    """The sum labels of the line just above, when it is a row of two or more of them
    ("TVA 9% | TVA 19% | TVA TOTAL" over "TOTAL | 1.49 | 17.56 | 19.05"): the amounts under
    them are theirs, not those of a label that begins the line below."""
    above = _just_above(sheet, index)
    if above is None:
        return []
    labels = [c for c in above.cells if sum_label(c.text) and sheet.amount(c.text) is None]
    return labels if len(labels) >= 2 else []


def _box(sheet: Sheet, page: int, cells: tuple[Cell, ...], c: int) -> tuple[float, float]:
    """The box of label `cells[c]` in a row of labels, left to right: from the label to the
    next one (past the page's edge for the last), as a form prints each value anywhere in
    its label's box, often flush right against the next."""
    right = cells[c + 1].x0 + 4 if c + 1 < len(cells) else sheet.page_width(page) + 50
    return cells[c].x0 - 4, right


def _in_its_box(sheet: Sheet, index: int, cells: tuple[Cell, ...], c: int) -> list[Spot]:
    """The value under a label of a row of three labels or more, as a form's boxes print
    it: anywhere in the label's box, which runs from the label to the next one, often set
    flush right against the next box ("VALOR DO ICMS | VALOR DO ICMS ST" over
    "0,00 | 0,59", each amount ending where the next label begins)."""
    line = sheet.lines[index]
    left, right = _box(sheet, line.page, cells, c)
    for j in range(index + 1, min(len(sheet.lines), index + 4)):
        other = sheet.lines[j]
        if other.page != line.page or other.y0 - line.y1 > BELOW_LINES * line.height:
            break
        inside = [v for v in other.cells if v.x1 > left and v.x1 <= right and v.x0 >= left - 40]
        if inside:
            return [Spot(inside[0].text, "below", j, inside[0])]
    return []


def _a_heading(cell: Cell) -> bool:
    """Whether the cell after a sum's label is another label over its own value, as in a
    row of labels over a row of values ("Betrag · Importo | vor dem · entro il" over
    "152,00 Euro | 24/10/2024"): words only, short, in two languages or with a colon."""
    text = cell.text.strip()
    return (
        not any(ch.isdigit() for ch in text)
        and len(text.split()) <= 6
        and ("\u00b7" in text or " / " in text or text.endswith(":"))
    )


@lru_cache(maxsize=4096)
def _is_header(line: Line) -> bool:
    """Whether `line` heads an item table (asked for each reading of the same lines)."""
    return find_header(line) is not None


def _net_tax_gross(row: list[Decimal]) -> tuple[Decimal, Decimal, Decimal] | None:
    """The first two amounts of `row` that add up to its last one, with the last."""
    if not 3 <= len(row) <= MAX_ROW or any(v <= 0 for v in row):
        return None
    gross = row[-1]
    for a in range(len(row) - 2):
        for b in range(a + 1, len(row) - 1):
            if row[b] < row[a] and abs(row[a] + row[b] - gross) <= CENT:
                return row[a], row[b], gross
    return None


@dataclass
class Sums:
    net: Decimal | None
    tax: Decimal | None
    gross: Decimal | None
    conf: dict[str, float]
    withheld: Decimal | None = None  # taken off the total after the tax: net + tax - withheld


# The largest share of its net a tax is taken to be: VAT, GST and sales taxes are at most
# about 27 % of it, several levels of them together well under a half.
MAX_RATE = Decimal("0.5")


def _a_rate(net: Decimal, tax: Decimal) -> bool:
    """Whether `tax` can be a tax on `net`: of the same sign (a credit note's are both
    negative) and at most MAX_RATE of it."""
    if net == 0:
        return tax == 0
    share = tax / net
    return 0 <= share <= MAX_RATE


def _best(amounts: list[Amount], kind: str) -> list[Amount]:
    return [a for a in amounts if a.kind == kind]


def choose(sheet: Sheet, lines_total: Decimal | None) -> Sums:
    amounts = candidates(sheet)
    nets = _best(amounts, "net") + _best(amounts, "lines")
    taxes = _best(amounts, "tax")
    # Several VAT rates, each on its own line, and no line with their sum: the tax is
    # their sum, if that is what makes the totals add up.
    by_line: dict[int, Amount] = {}
    for tax in taxes:
        if tax.weight >= PRIOR["tax"] * 0.8 and tax.line not in by_line:
            by_line[tax.line] = tax
    if len(by_line) >= 2:
        total = sum((a.value for a in by_line.values()), Decimal(0))
        taxes.append(Amount("tax", total, 0.7, min(by_line)))
    taxes += _sum_of_its_row(taxes)
    grosses = _best(amounts, "gross") + [
        Amount("gross", a.value, a.weight * 0.8, a.line) for a in _best(amounts, "due")
    ]
    nets += _totals_of_nets(amounts)
    none = Amount("none", Decimal(0), 0.0, -1)
    # Shipping and the like add to the net, a discount takes from it, before the total.
    charges = _one_per_line(amounts, "charge") - _one_per_line(amounts, "discount")
    # A tax withheld is taken off after the tax is added, and is no part of the net: one
    # such line, or all of them.
    withheld = {Decimal(0), _one_per_line(amounts, "withheld")}
    withheld |= {a.value for a in _unique(_best(amounts, "withheld"))}
    between = {(extra, held) for extra in {charges, Decimal(0)} for held in withheld}
    best: tuple[float, Amount, Amount, Amount, bool, tuple[Decimal, Decimal]] | None = None
    for net, tax, gross, (extra, held) in product(
        [*_unique(nets), none], [*_unique(taxes), none], [*_unique(grosses), none], between
    ):
        present = [a for a in (net, tax, gross) if a is not none]
        if not present:
            continue
        score = sum(a.weight for a in present)
        agree = False
        if net is not none and gross is not none:
            total = net.value + (tax.value if tax is not none else Decimal(0)) + extra - held
            agree = abs(total - gross.value) <= CENT
            if agree and tax is not none and not _a_rate(net.value, tax.value):
                agree = False  # amounts that add up by chance: no tax is such a share of its net
            score += 2.0 if agree else -1.0
            score -= 0.1 if extra else 0.0  # the plainer reading first
            score -= 0.1 if held else 0.0
        if lines_total is not None and net is not none and abs(lines_total - net.value) <= CENT:
            score += 0.5
        if gross is not none and tax is not none and tax.value > gross.value:
            score -= 2.0
        if best is None or score > best[0]:
            best = (score, net, tax, gross, agree, (extra, held))
    if best is None:
        return Sums(None, None, None, {"subtotal": 0.0, "tax": 0.0, "total": 0.0})
    _, net, tax, gross, agree, (extra, held) = best
    conf: dict[str, float] = {}
    result = Sums(
        net.value if net is not none else None,
        tax.value if tax is not none else None,
        gross.value if gross is not none else None,
        conf,
    )
    for name, picked, pool in (
        ("subtotal", net, nets),
        ("tax", tax, taxes),
        ("total", gross, grosses),
    ):
        if picked is none:
            conf[name] = 0.0
            continue
        rivals = {a.value for a in pool if a.weight >= picked.weight and a.value != picked.value}
        if agree:
            conf[name] = SURE if picked.weight >= 0.8 and not rivals else LIKELY
        else:
            conf[name] = WEAK if not rivals else GUESS
        if net.kind == "total-net" or picked.doubted:
            conf[name] = min(conf[name], FAIR)  # the sums agree by a net that no label names
    inside = False  # the taxes are inside the prices, and printed
    if (
        agree
        and result.tax == 0
        and result.net == result.gross
        and net.kind == "lines"
        and any(0 < a.value < result.gross for a in taxes if result.gross is not None)
    ):
        # The items' total is the total, a tax is printed (not zero) and nothing is added:
        # the taxes are inside the prices (Brazil's ICMS on its base), and a total without
        # them is printed nowhere. A sum labelled as without tax stays the net.
        result.net, result.tax = None, None
        conf["subtotal"], conf["tax"] = 0.0, LIKELY
        inside = True
    if result.tax is None and agree and not inside:
        # Nothing is missing from the total: no tax is charged; unless a tax is printed
        # all the same ("VAT 20% 16.67" under a net equal to the total: inside the prices,
        # and the net without it is printed nowhere), which this reading leaves unread.
        printed = any(a.value != 0 and a.weight >= PRIOR["tax"] * 0.8 for a in taxes)
        conf["tax"] = FAIR if printed else LIKELY
        if printed:
            conf["subtotal"] = min(conf["subtotal"], FAIR)
    if agree and held:
        result.withheld = held  # the sums add up only with it taken off
        conf["withheld"] = min(conf["total"], LIKELY)
    if agree and extra and result.net is not None:
        # The net is the invoice's total without VAT (EN 16931 BT-109): its charges
        # added, its discounts taken off, as the total has them.
        result.net += extra
        conf["subtotal"] = min(conf["subtotal"], FAIR)
    if (
        result.tax is None
        and not agree
        and result.net is not None
        and result.gross is not None
        and _at_a_printed_rate(sheet, result.net, result.gross - result.net)
    ):
        # "TVA | 21 %" and no amount beside it: the tax is what the total adds to the net,
        # when that is the printed rate of it. Printed nowhere: never read for sure.
        result.tax = result.gross - result.net
        conf["tax"] = min(conf["subtotal"], conf["total"], FAIR)
    if result.net is None and result.gross is not None and result.tax is not None:
        result.net = result.gross - result.tax  # printed nowhere, implied by the sums
        conf["subtotal"] = min(conf["total"], conf["tax"], FAIR)
    if (
        result.gross is None
        and result.net is not None
        and result.tax is not None
        and not grosses
        and not charges
        and not any(a.kind == "withheld" for a in amounts)
    ):
        # A net and its tax, and no total under any label known: the total they make,
        # at a guess (it may stand under a label not known, or not be printed).
        result.gross = result.net + result.tax
        conf["total"] = min(conf["subtotal"], conf["tax"], WEAK)
    exempt = result.tax is None and not _a_tax_printed(taxes) and NO_VAT.search(sheet.folded)
    if exempt and result.gross is None and result.net is not None:
        result.gross = result.net  # no VAT is charged, the page says: the net is the total
        conf["total"] = min(conf["subtotal"], FAIR)
    if (
        result.gross is None
        and result.net is not None
        and result.tax is None
        and lines_total is not None
        and abs(lines_total - result.net) <= CENT
        and _a_total_s_label(sheet, [a for a in nets if a.value == result.net])
        and not taxes
        and not any(a.kind in ("due", "charge", "discount", "withheld") for a in amounts)
    ):
        # One sum, a total's label without tax, that the items make, and no tax line at
        # all: all there is to pay ("Total excl. tax: 120"), the total, less sure than
        # under a total's own label; and still the net its label states. A "Netto" alone
        # names no total: it stays a net.
        result.gross = result.net
        conf["total"] = min(conf["subtotal"], WEAK)
        conf["subtotal"] = min(conf["subtotal"], FAIR)
    if exempt and result.gross is not None:
        _exempt(result)
    return result


def _exempt(sums: Sums) -> None:
    """No VAT is charged, the page says in words ("TVA non applicable, art. 293 B du CGI"):
    the tax is 0 and the net is the total. (A total with no tax printed at all, not even
    so, may hold one it does not itemise, a receipt's: no net is read then.)"""
    conf = sums.conf
    sums.tax = Decimal(0)
    conf["tax"] = max(conf.get("tax", 0.0), min(conf["total"], FAIR))  # a net = total kept
    if sums.net is None:
        sums.net = sums.gross
        conf["subtotal"] = min(conf["total"], FAIR)


def as_stated(sheet: Sheet, sums: Sums) -> None:
    """Sums another chooser read (invoice_sum_model) made to follow the convention that
    choose() follows: with no tax read and none printed, an exemption stated in words
    is a tax of 0 and makes the net the total."""
    if sums.tax is not None or sums.gross is None or not NO_VAT.search(sheet.folded):
        return
    if not _a_tax_printed(_best(candidates(sheet), "tax")):
        _exempt(sums)


def absent_as_stated(
    sheet: Sheet, total: Decimal, total_conf: float, lines_total: Decimal | None
) -> float:
    """The confidence that a document states no net and no tax, so that their absence
    (None, the convention of invoice_reader's docstring) is read right; 0 when not sure.

    Why: an absent field scored 0 makes a total-only document read entirely right look
    unread (its weakest key field bounds it, types.document_confidence). The absence is
    read right when the total stands under a label of its own, no label of a net, a
    subtotal or a tax and no tax's word or rate is printed anywhere (a net or tax printed
    but unread is a miss, and stays 0), and the items, if any, make the total. Never above
    the total's own confidence, and below 0.9 (FAIR): nothing printed says it for sure."""
    if not any(a.kind in ("gross", "due") and a.value == total for a in candidates(sheet)):
        return 0.0  # the total read by no label of its own
    if lines_total is not None and abs(lines_total - total) > CENT:
        return 0.0
    for line in sheet.lines:
        for cell in line.cells:
            label = sum_label(cell.text)
            if label and label[0] in ("net", "lines", "tax", "withheld"):
                return 0.0
    if TAX_WORD.search(sheet.folded) or _RATE.search(sheet.folded):
        return 0.0
    return min(total_conf, FAIR)


def _a_tax_printed(taxes: list[Amount]) -> bool:
    """Whether a tax's label prints an amount other than zero."""
    return any(a.value != 0 and a.weight >= PRIOR["tax"] * 0.8 for a in taxes)


_RATE = re.compile(r"(?<![\d.,])(\d{1,2}(?:[.,]\d{1,2})?)\s?%")


def _at_a_printed_rate(sheet: Sheet, net: Decimal, tax: Decimal) -> bool:
    """Whether `tax` is, to a hundredth of itself, a rate of `net` that a tax's label
    prints with no amount on its line ("TVA | 21 %", "VAT 7.5%")."""
    if net <= 0 or not 0 < tax <= net * MAX_RATE:
        return False
    for line in sheet.lines:
        label = next((sum_label(c.text) for c in line.cells if sum_label(c.text)), None)
        if label is None or label[0] != "tax":
            continue
        text = " ".join(c.text for c in line.cells)
        rates = _RATE.findall(text)
        if not rates or any(
            isinstance(sheet.amount(w), Decimal) for w in _RATE.sub(" ", text).split()
        ):
            continue
        for rate in rates:
            share = Decimal(rate.replace(",", ".")) / 100
            if abs(net * share - tax) <= max(CENT, tax / 100):
                return True
    return False


def _sum_of_its_row(taxes: list[Amount]) -> list[Amount]:
    """A tax of a row of three or more that is the sum of the others ("TVA 9% | TVA 19% |
    TVA TOTAL" over "1.49 | 17.56 | 19.05"): the invoice's tax, surer than each of them."""
    found = []
    for line in {t.line for t in taxes}:
        row = [t for t in taxes if t.line == line]
        values = [t.value for t in row]
        if len(set(values)) < 3:
            continue
        for tax in row:
            rest = sum(values, Decimal(0)) - tax.value
            if tax.value > 0 and abs(rest - tax.value) <= CENT:
                found.append(Amount("tax", tax.value, min(1.0, tax.weight * 1.5), line))
    return found


def _totals_of_nets(amounts: list[Amount]) -> list[Amount]:
    """Totals that are nets: "Total goods and services | 25,00" over "Total VAT | 5,50"
    over "Total | 30,50", a total whose tax, printed below it, makes the bigger total
    below that. Only the arithmetic says it is the net, not its label: worth half a net's
    label, and the sums it makes agree are never read for sure."""
    grosses, taxes = _best(amounts, "gross"), _best(amounts, "tax")
    return [
        Amount("total-net", a.value, a.weight * 0.5, a.line)
        for a in grosses
        if any(
            a.line < t.line < b.line and abs(a.value + t.value - b.value) <= CENT
            for b in grosses
            for t in taxes
            if b.value > a.value
        )
    ]


def _one_per_line(amounts: list[Amount], kind: str) -> Decimal:
    """The sum of the amounts of one kind, one per line (a discount counts as taken off,
    whether it is printed with a minus or not)."""
    per_line: dict[int, Amount] = {}
    for amount in amounts:
        if amount.kind == kind and (
            amount.line not in per_line or amount.weight > per_line[amount.line].weight
        ):
            per_line[amount.line] = amount
    return sum((abs(a.value) for a in per_line.values()), Decimal(0))


MAX_CANDIDATES = 12  # per kind: the combinations tried grow as the cube of it


def _unique(amounts: list[Amount]) -> list[Amount]:
    """One candidate per value: the best-weighted (first on ties); the strongest few."""
    best: dict[Decimal, Amount] = {}
    for amount in amounts:
        if amount.value not in best or amount.weight > best[amount.value].weight:
            best[amount.value] = amount
    ranked = sorted(best.values(), key=lambda a: (-a.weight, a.line))
    return ranked[:MAX_CANDIDATES]
