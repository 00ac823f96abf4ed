"""Items printed as blocks of labels and values rather than as a table's rows: each
position its own few lines ("Menge | 10.00", "Gesamtpreis (netto) | 818,04",
"Bezeichnung: | Sanitär und Zubehör"), as e-invoice viewers print them.

Read only when no item table was found, and kept only when the arithmetic says they are
the items: their amounts add up to a sum the page prints (the net, the items' total or
the total).
"""

from __future__ import annotations

import re
from decimal import Decimal

from conveyor.agents.invoice_labels import fold
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.invoice_sums import CENT, candidates
from conveyor.documents.types import LineItem

# A position's labels, whole (a colon or a qualifier in parentheses may follow): its
# name, its quantity, its unit price and its amount, in the languages of invoice_labels.
_LABELS = {
    "description": r"bezeichnung|artikelname|produktname|leistungsbezeichnung|description|"
    r"item\s*name|product\s*name|designation|libelle|descripcion|denominacion|descrizione|"
    r"omschrijving|descricao|beskrivelse|beskrivning|nom\s*de\s*l['\u2019]?\s*article",
    "quantity": r"menge|anzahl|quantity|qty|quantite|cantidad|quantita|aantal|quantidade|"
    r"antall|antal",
    "price": r"(?:netto\s*)?preis\s*pro\s*einheit|einzelpreis|unit\s*price|net\s*price|"
    r"prix\s*unitaire|precio\s*unitario|prezzo\s*unitario|stukprijs|preco\s*unitario|"
    r"enhetspris|enhedspris|a\s*-?\s*pris|prix\s*net\s*de\s*l['\u2019]?\s*article",
    "amount": r"gesamtpreis|nettobetrag|positionsbetrag|line\s*(?:net\s*)?(?:total|amount)|"
    r"net\s*amount|montant\s*(?:ht|net)(?:\s*de\s*(?:la\s*)?ligne)?|importe(?:\s*neto)?|"
    r"importo|bedrag|valor\s*total|"
    r"belop|belopp|belob",
}
_LABEL = {
    kind: re.compile(rf"(?:{pattern})(?:\s*\([^()]{{1,20}}\))?\s*:?")
    for kind, pattern in _LABELS.items()
}


def _label(text: str) -> str | None:
    folded = fold(text.strip())
    for kind, pattern in _LABEL.items():
        if pattern.fullmatch(folded):
            return kind
    return None


def _plain(text: str) -> Decimal | None:
    """A quantity printed with a dot in a page of decimal commas ("10.00" of an XML's
    value): digits, a dot and two to four decimals, which no thousands group has."""
    match = re.fullmatch(r"\d+(?:\.\d{2,4})?", text.strip())
    return Decimal(match.group(0)) if match else None


# A position's labels and values run into one line ("Item: Widget A Qty: 2 Price: $20.00"):
# each label with its colon, its value up to the next such label.
_INLINE_LABELS = {
    "description": r"item|product|description|article|artikel|bezeichnung|produit|producto",
    "quantity": r"qty|quantity|menge|anzahl|quantite|cantidad",
    "price": r"(?:unit\s*)?price|preis|einzelpreis|prix|precio",
    "amount": r"amount|line\s*total|betrag|montant|importe",
}
_INLINE = re.compile(
    "|".join(rf"(?P<{kind}>\b(?:{pattern})\s*:)" for kind, pattern in _INLINE_LABELS.items()),
    re.IGNORECASE,
)


def _inline(text: str) -> list[tuple[str, str]]:
    """The labelled values of a line that prints a position's name and at least one of
    its figures, each after its label and colon; [] for any other line."""
    marks = list(_INLINE.finditer(text))
    if len(marks) < 2 or marks[0].start() != 0:
        return []
    found = []
    for k, mark in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        value = text[mark.end() : end].strip()
        if not value or mark.lastgroup is None:
            return []
        found.append((mark.lastgroup, value))
    kinds = [kind for kind, _ in found]
    if kinds[0] != "description" or len(set(kinds)) != len(kinds):
        return []
    return found


def read_positions(sheet: Sheet) -> list[LineItem]:
    """The items of blocks of labelled values, in the order printed; [] when the page has
    none, or when their amounts make none of its printed sums."""
    found: list[tuple[str, str]] = []  # (kind, value as printed), in reading order
    for line in sheet.lines:
        cells = line.cells
        inline = _inline(line.text) if len(cells) == 1 else []
        if inline:
            found += inline
            continue
        for c, cell in enumerate(cells[:-1]):
            kind = _label(cell.text)
            if kind is None:
                continue
            value = cells[c + 1].text.strip()
            # A cell ending in a colon is another label ("quantité | Code de type de TVA:",
            # the end of a label wrapped over two lines beside the next one): no value.
            if _label(value) is None and not value.endswith(":"):
                found.append((kind, value))
    groups: list[dict[str, str]] = []
    for kind, value in found:
        if not groups or kind in groups[-1]:
            groups.append({})
        groups[-1][kind] = value
    items: list[LineItem] = []
    for group in groups:
        amount = sheet.amount(group.get("amount", ""))
        quantity = sheet.amount(group.get("quantity", "")) or _plain(group.get("quantity", ""))
        price = sheet.amount(group.get("price", ""))
        if amount is None and isinstance(quantity, Decimal) and isinstance(price, Decimal):
            amount = quantity * price  # no amount printed: the quantity at its price
        if "description" not in group or not isinstance(amount, Decimal):
            return []  # a block without its name or its amount: not positions
        items.append(
            LineItem(
                description=group["description"],
                quantity=quantity if isinstance(quantity, Decimal) else None,
                unit_price=price if isinstance(price, Decimal) else None,
                amount=amount,
            )
        )
    if not items:
        return []
    total = sum((item.amount or Decimal(0) for item in items), Decimal(0))
    printed = {a.value for a in candidates(sheet) if a.kind in ("net", "lines", "gross")}
    if not any(abs(total - value) <= CENT for value in printed):
        return []
    return items
