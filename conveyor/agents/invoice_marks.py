"""What marks a party's block on an invoice page, shared by the readers of headed blocks
(invoice_parties) and of letterheads (invoice_letterhead): how sure each finding is, the
shapes of labels, addresses and contact lines, and what a finding holds."""

from __future__ import annotations

import re
from dataclasses import dataclass

from conveyor.agents.bank_codes import is_iban
from conveyor.agents.invoice_party_labels import TAX_ID
from conveyor.agents.legal_forms import LEGAL_FORM
from conveyor.agents.values import dates_in
from conveyor.documents.layout import Cell

SURE = 0.97
LIKELY = 0.93
FAIR = 0.85
WEAK = 0.75
GUESS = 0.6

LABELLED = re.compile(r"^[^\d:]{2,40}:")
# A sender line's parts: "Name GmbH • Street 1 • 12345 Town" (bullets, bars, dashes).
SEPARATORS = re.compile(r"\s+(?:[\u2022\u00b7|\u2013\u2014]|-)\s+|\s*[\u2022\u00b7|]\s*")
ADDRESS = re.compile(r"\d")
# A postal address line: "60486 Frankfurt", "1234 AB Utrecht", "Seattle, WA 98101",
# "Leeds LS2 7AB", "DE 12345 Musterstadt".
POSTCODE = re.compile(
    r"\b(?:[A-Z]{1,2}[- ]?)?\d{4,5}\s+[^\W\d_]{2,}|\b\d{4}\s?[A-Z]{2}\b|"
    r"\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b|\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b"
)
# An address line that names the person a letter is for, not the party: "c/o", "z. Hd.".
CARE_OF = re.compile(r"^(?:c/o|c\.o\.|z\.\s?h(?:d)?\.?|attn\.?|attention|a/a)\s")
CONTACT = re.compile(r"@|www\.|https?:|\btel\b|\bfax\b|\bphone\b|\btelefon\b|\+\d", re.IGNORECASE)


@dataclass
class Party:
    name: str | None = None
    name_conf: float = 0.0
    address: str | None = None
    tax_id: str | None = None
    by_label: bool = False  # the name stood behind a "Name" label


@dataclass
class Block:
    kind: str  # seller, buyer, other
    line: int
    cell: Cell
    rest: str
    by_column: bool = False  # the name read beside the heading, in a column of values


def segments(text: str) -> list[str]:
    """A sender line's parts: "Name GmbH • Street 1 • 12345 Town"."""
    return [s.strip(" ,;") for s in SEPARATORS.split(text) if s.strip(" ,;")]


# A house number and a street ("234 Client Address St", "1 Makebelieve Avenue,"): a
# block's address line, which a name with a legal form ("1&1 Telecom GmbH") is not.
STREET = re.compile(r"^\d{1,5}[a-z]?\s+[^\W\d_]")


# The marks a specimen or a copy is stamped with, in the six languages: a word alone,
# never a party's name.
_MARK = re.compile(
    r"(?:muster|specimen|sp[eé]cimen|sample|draft|copy|entwurf|kopie|duplikat|duplicate|"
    r"ejemplo|esempio|exemplo|voorbeeld|kopia|copia|original|void|annul[eé])",
    re.IGNORECASE,
)


def not_a_name(text: str) -> bool:
    """What a party's name never is, wherever it was read: a number ("# 36651"), a date
    ("August 28, 2025"), a street line, a specimen's mark ("Muster", "Sample") or a
    sentence ("Empty fields are not shown."). Such a reading took the wrong line."""
    name = text.strip(" ,;:")
    if not any(ch.isalpha() for ch in name) or name.startswith("#") or is_iban(name):
        return True
    if _MARK.fullmatch(name):
        return True
    # A sentence: four words or more and its final stop, no legal form to end it ("Acme
    # Trading Co." ends in one).
    if len(name.split()) >= 4 and name[-1] in ".!?" and not LEGAL_FORM.search(name):
        return True
    dated = sum(len(token.text) for token in dates_in(name))
    if dated and dated >= 0.6 * len(name):
        return True
    # A code in groups, most of them holding digits ("NL33 ABNA 0383 9284 93", an account
    # whose check digits do not hold; "AB 12 34 56 C"): names are mostly words.
    tokens = name.split()
    if len(tokens) >= 3 and 2 * sum(any(ch.isdigit() for ch in t) for t in tokens) > len(tokens):
        return True
    # A row of tax-id labels ("CNPJ / CPF / NIF", "VAT / Tax ID") names no one.
    words = [w for w in re.split(r"[\s/]+", name.lower()) if w]
    if words and all(TAX_ID.fullmatch(w) or w in ("tax", "id", "no", "nr") for w in words):
        return True
    return bool(STREET.match(name)) and not LEGAL_FORM.search(name)


def label_row(cells: tuple[Cell, ...] | list[Cell]) -> bool:
    """Whether a line's cells are a row of column labels: three or more, each of words
    only, each in capitals ("TIPO DOCUMENTO | FOLIO | FECHA", "QTD | UN | VL UNIT"). A
    name standing in such a row is a column's label."""
    return len(cells) >= 3 and all(
        c.text.isupper() and not any(ch.isdigit() for ch in c.text) for c in cells
    )
