"""The learned item-row chooser: one logistic model over the features of
invoice_item_features, each line that prints a number scored by it, the lines it
likes read as the invoice's items.

    choose(sheet) -> (items, confidence) | None

The model is trained by benchmarks/train_items.py (scikit-learn, training only) and
exported to invoice_item_model.json beside this file; here it is a dot product in plain
Python (conveyor.agents.logistic). It is meant only for where the rules (invoice_table,
invoice_positions, the line reader) read no item at all: their header vocabulary did
not know the table's words. Its confidence is the least sure row's probability, never
over TRUST, and WEAK where the items' amounts do not make a sum the pages print.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from conveyor.agents.invoice_columns import TABLE_END
from conveyor.agents.invoice_item_features import ALIGN, FEATURES, Candidate, candidates
from conveyor.agents.invoice_labels import fold, sum_label
from conveyor.agents.invoice_reader import styled_sheet
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.logistic import Model, model_of, score
from conveyor.documents.text import DocumentText
from conveyor.documents.types import Invoice, LineItem

MODEL_FILE = Path(__file__).with_name("invoice_item_model.json")
# The switch of its one wiring (learned_items, from offline._read_invoice).
LEARNED_ITEMS = True
# Its confidence, as measured (benchmarks/train_items.py, leave-one-source-out over the
# opened sets): where its items make a sum the pages print and every row's probability is
# TRUST or more, 48 documents' items right of 65 (74 %); elsewhere 5 of 22. With rounds 9 to
# 11 opened (125 documents with items): 57 of 78 (73 %), elsewhere 6 of 25.
TRUST = 0.75
WEAK = 0.5
# A line is an item when the model gives it this probability or more.
ITEM = 0.5


@lru_cache(maxsize=1)
def load(path: Path = MODEL_FILE) -> Model:
    return from_json(json.loads(path.read_text()))


def from_json(data: dict[str, Any]) -> Model:
    return model_of(data, FEATURES)


def probability(model: Model, candidate: Candidate) -> float:
    return probability_of(score(model.weights, candidate.vector()))


def probability_of(log_odds: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(log_odds, 50.0), -50.0)))


def pick(sheet: Sheet, found: list[Candidate], model: Model) -> tuple[list[LineItem], float] | None:
    """The candidates the model takes for items, as items, and their confidence: of the
    blocks of lines it takes (no line it does not take between them), the one it is
    surest of, as a whole (the most log-odds): the table, not the sums' rows above or
    below it; never a block that itemises a row of another one."""
    scores = [score(model.weights, c.vector()) for c in found]
    blocks: list[list[int]] = []
    open_block = False
    for k, s in enumerate(scores):
        if probability_of(s) < ITEM:
            open_block = False
            continue
        if not open_block:
            blocks.append([])
            open_block = True
        blocks[-1].append(k)
    # A block whose amounts make the amount of a row of another one is that row's detail
    # ("Materiaal | 281.71" in the table, the materials' own table under it).
    amounts = [found[k].reading.amount for k in range(len(found))]
    detail = [
        b
        for b in blocks
        if len(b) >= 2
        and any(
            sum((amounts[k] for k in b), Decimal(0)) == amounts[j]
            for other in blocks
            if other is not b
            for j in other
        )
    ]
    blocks = [b for b in blocks if b not in detail] or blocks
    if not blocks:
        return None
    block = max(blocks, key=lambda b: sum(scores[k] for k in b))
    chosen = [(found[k], probability_of(scores[k])) for k in _table(found, blocks, block)]
    rows = {c.index for c, _ in chosen}
    items = [
        LineItem(
            description=sheet.joined(_description(sheet, c, rows)) or None,
            quantity=c.reading.quantity,
            unit_price=c.reading.unit_price,
            amount=c.reading.amount,
        )
        for c, _ in chosen
    ]
    confidence = min(min(p for _, p in chosen), TRUST)
    total = sum((i.amount or Decimal(0) for i in items), Decimal(0))
    if not _printed_sum(sheet, total, {c.index for c, _ in chosen}):
        confidence = min(confidence, WEAK)
    return items, confidence


def _table(found: list[Candidate], blocks: list[list[int]], block: list[int]) -> list[int]:
    """The surest block and the blocks of the same table: their amounts in its amount
    column, no sum's label between them and it (rows parted by lines of details with a
    number, "Basismenge: 1 Stk", or by a page's end)."""
    x1 = sorted(found[k].reading.amount_cell.x1 for k in block)[len(block) // 2]
    sums = [
        k for k, c in enumerate(found) if c.features.get("sum_label") or c.features.get("table_end")
    ]
    start = max((k for k in sums if k < block[0]), default=-1)
    end = min((k for k in sums if k > block[-1]), default=len(found))
    rows = []
    for other in blocks:
        same = all(abs(found[k].reading.amount_cell.x1 - x1) < ALIGN for k in other)
        if other is block or (same and start < other[0] and other[-1] < end):
            rows += other
    return sorted(rows)


# How many lines of words under a row may go on its description.
MORE_LINES = 3


def _description(sheet: Sheet, row: Candidate, chosen: set[int]) -> list[str]:
    """The row's words, and the lines under it that are none of the table's rows and
    print nothing in its amount column (a name and its details over several lines, "100
    gramos", "(17.01.2016 - 16.02.2016)"), none a sum's label."""
    parts = list(row.reading.description)
    line = sheet.lines[row.index]
    x1 = row.reading.amount_cell.x1
    for j in range(row.index + 1, min(len(sheet.lines), row.index + 1 + MORE_LINES)):
        other = sheet.lines[j]
        if j in chosen or other.page != line.page or other.y0 - line.y1 > 3 * line.height:
            break
        if other.x1 > x1 - ALIGN or sum_label(other.cells[0].text):
            break
        if TABLE_END.match(fold(other.cells[0].text)):
            break
        parts.append(other.text)
        line = other
    return parts


def _printed_sum(sheet: Sheet, total: Decimal, rows: set[int]) -> bool:
    """Whether an amount the pages print on a line of no item is the items' sum (their
    net, or their total)."""
    for index, line in enumerate(sheet.lines):
        if index in rows:
            continue
        for cell in line.cells:
            for part in (cell.text, cell.text.split(":")[-1].strip(), cell.text.split(" ")[-1]):
                if sheet.amount(part) == total:
                    return True
    return False


def choose(sheet: Sheet) -> tuple[list[LineItem], float] | None:
    return pick(sheet, candidates(sheet), load())


def learned_items(
    text: DocumentText, invoice: Invoice, fields: dict[str, float]
) -> tuple[Invoice, dict[str, float]]:
    """Where the rules read no item at all, the model's items, never trusted outright
    (offline._read_invoice). Nothing else of the invoice changes: its sums were read
    without items, as before."""
    if not LEARNED_ITEMS or invoice.line_items:
        return invoice, fields
    picked = choose(styled_sheet(text)[0])
    if picked is None:
        return invoice, fields
    items, confidence = picked
    return invoice.model_copy(update={"line_items": items}), {**fields, "line_items": confidence}
