"""The invoice's currency: behind its label, from the signs and codes printed beside
amounts, from a currency named in words, or, with none, at a guess from the country the
page names (its name, its VAT ids).

A module of its own because no rule of the number's or the dates' is read here: the
currency is read from the page alone, and the dates take its code, not its rules.
"""

from __future__ import annotations

import re
from collections import Counter

from conveyor.agents.invoice_fields import FAIR, LIKELY, SURE, WEAK
from conveyor.agents.invoice_labels import fold
from conveyor.agents.invoice_sheet import Sheet
from conveyor.agents.values import (
    currencies_in,
    currency_of,
    currency_word,
    shared_sign,
    sign_currencies,
    yen_or_yuan,
)
from conveyor.documents.layout import Cell

_CURRENCY_LABEL = re.compile(r"^(?:rechnungs)?wahrung|^currency|^devise|^valuta|^moneda")


# No sign and no code anywhere: the currency of the country the addresses name, a guess.
_COUNTRY_CURRENCIES = (
    (re.compile(r"\bU\.?S\.?A\b|\bunited states\b|, [A-Z]{2} \d{5}\b", re.IGNORECASE), "USD"),
    (re.compile(r"\bunited kingdom\b|\bengland\b|\b[A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}\b"), "GBP"),
    (re.compile(r"\bcanada\b", re.IGNORECASE), "CAD"),
    (re.compile(r"\baustralia\b", re.IGNORECASE), "AUD"),
    (re.compile(r"\bindia\b", re.IGNORECASE), "INR"),
    (re.compile(r"\bswitzerland\b|\bschweiz\b|\bsuisse\b", re.IGNORECASE), "CHF"),
    (
        re.compile(
            r"\b(?:deutschland|germany|france|nederland|netherlands|belgi(?:e|um|que)|"
            r"espa(?:ña|na)|spain|itali[ae]|italy|österreich|austria|portugal|ireland|"
            r"luxemb(?:o|u)rg)\b",
            re.IGNORECASE,
        ),
        "EUR",
    ),
    # Japan by its name, or a page in Japanese: its kana (hiragana, katakana), which no
    # other language writes.
    (re.compile(r"\bjapan\b|日本|[\u3041-\u3096\u30a1-\u30fa]", re.IGNORECASE), "JPY"),
)


def _country_currency(sheet: Sheet) -> str | None:
    for pattern, code in _COUNTRY_CURRENCIES:
        if pattern.search(sheet.head):
            return code
    return _vat_id_currency(sheet.text)


# A European VAT id begins with its country's code ("VAT: FI76543218", "USt-IdNr.
# DE123456789", "BTW NL001234567B01"): the currency of that country, when the ids the page
# prints agree on one.
_VAT_ID = re.compile(
    r"(?i:\b(?:vat|tva|btw|ust|mwst|iva|uid|nif|moms|mva|p\.?\s*iva)[\w.\s/-]{0,20}?[:\s])\s*"
    r"(?P<cc>[A-Z]{2})\s?(?:U\s?)?\d[\d\s]{6,13}\d"
)
_VAT_COUNTRIES = {
    **dict.fromkeys("AT BE CY DE EE EL ES FI FR HR IE IT LT LU LV MT NL PT SI SK".split(), "EUR"),
    "DK": "DKK",
    "SE": "SEK",
    "PL": "PLN",
    "CZ": "CZK",
    "HU": "HUF",
    "RO": "RON",
    "BG": "BGN",
    "GB": "GBP",
    "NO": "NOK",
}


def _vat_id_currency(text: str) -> str | None:
    codes = {_VAT_COUNTRIES.get(m.group("cc")) for m in _VAT_ID.finditer(text)}
    codes.discard(None)
    return next(iter(codes)) if len(codes) == 1 else None


# A sign several countries print ("$"): the currency of the country the page names by its
# name or its national tax id, of those that print it. Mexico's RFC, "M.N." (moneda
# nacional) and CFDI, Argentina's CUIT, Chile's RUT; Canada and Australia as above.
_SIGN_COUNTRIES = (
    (re.compile(r"\bm[eé]xico\b|\bRFC\b|\bM\.\s?N\.|\bCFDI\b", re.IGNORECASE), "MXN"),
    (re.compile(r"\bargentina\b|\bCUIT\b", re.IGNORECASE), "ARS"),
    (re.compile(r"\bchile\b|\bR\.?U\.?T\.?\b"), "CLP"),
    (re.compile(r"\bcolombia\b", re.IGNORECASE), "COP"),
    # Norway's MVA and Foretaksregisteret, Denmark's CVR, Sweden's momsregistreringsnummer.
    (re.compile(r"\bnorge\b|\bnorway\b|\bMVA\b|\bforetaksregisteret\b", re.IGNORECASE), "NOK"),
    (re.compile(r"\bdanmark\b|\bdenmark\b|\bCVR\b", re.IGNORECASE), "DKK"),
    (re.compile(r"\bsverige\b|\bsweden\b|\bmomsreg", re.IGNORECASE), "SEK"),
    *_COUNTRY_CURRENCIES,
)


_KRONE = re.compile(r"(?<![^\W\d_])kr\.?(?![^\W\d_])", re.IGNORECASE)


def _cells(sheet: Sheet) -> list[Cell]:
    return [cell for line in sheet.lines for cell in line.cells]


def _national(sheet: Sheet, sign: str) -> str | None:
    """The currency of the country the page names, among those whose sign is `sign`."""
    among = sign_currencies(sign)
    for pattern, code in _SIGN_COUNTRIES:
        if code in among and pattern.search(sheet.head):
            return code
    return None


# A currency named beside an amount ("703.15 euro", "Euro 152,00") or in a column's
# header ("Prijs (euro)", "Amount (EUR)"): what price-parser reads as a currency there.
_AFTER_AMOUNT = re.compile(r"\d\s+([^\W\d_]{3,12})(?![\w])")
_BEFORE_AMOUNT = re.compile(r"(?<![\w])([^\W\d_]{3,12})\s+-?\d")
_IN_PARENTHESES = re.compile(r"\(\s*([^()\d]{1,12}?)\s*\)")


def _named_currencies(sheet: Sheet) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in sheet.lines:
        for cell in line.cells:
            for pattern in (_AFTER_AMOUNT, _BEFORE_AMOUNT, _IN_PARENTHESES):
                for match in pattern.finditer(cell.text):
                    code = currency_word(match.group(1))
                    if code:
                        counts[code] += 1
    return counts


def currency(sheet: Sheet) -> tuple[str | None, float]:
    for i, line in enumerate(sheet.lines):
        for c, cell in enumerate(line.cells):
            if _CURRENCY_LABEL.match(fold(cell.text)):
                for spot in sheet.values_of(i, c, len(cell.text.split(":")[0]), below=1):
                    # A currency's code, not any three capitals: "Moneda | Cota TVA" over
                    # "RON | 19%" is a row of column labels, "TVA" the next one's word.
                    codes = [w for w in re.findall(r"\b[A-Z]{3}\b", spot.text) if currency_word(w)]
                    if codes:
                        return codes[0], SURE
    counts: Counter[str] = Counter()
    for line in sheet.lines:
        for cell in line.cells:
            # Signs next to amounts only: "8 rue des Lilas" names no currency.
            if sheet.amount(cell.text) is not None:
                code = currency_of(cell.text)
                if code:
                    counts[code] += 1
    if not counts:
        counts = _named_currencies(sheet)
    if not counts:
        counts = currencies_in(sheet.text)
        if not counts:
            if any(
                _KRONE.search(c.text) and sheet.amount(c.text) is not None for c in _cells(sheet)
            ):
                national = _national(sheet, "kr")  # the krone or krona of the country named
                if national is not None:
                    return national, FAIR
            guess = _country_currency(sheet)
            return guess, WEAK if guess else 0.0
    code, n = counts.most_common(1)[0]
    code = yen_or_yuan(code, sheet.text)
    confidence = SURE if len(counts) == 1 and n >= 2 else LIKELY if len(counts) == 1 else WEAK
    if shared_sign(code, sheet.text):
        confidence = min(confidence, FAIR)  # "¥" is the yen's and the yuan's
    if code == "USD" and not any(re.search(r"\bUSD\b|US\$", line.text) for line in sheet.lines):
        confidence = min(confidence, FAIR)  # a bare "$" is several countries' dollar
        # ... or peso: the one of the country the page names, if it names one.
        national = _national(sheet, "$")
        if national is not None and national != "USD":
            return national, FAIR
    return code, confidence
