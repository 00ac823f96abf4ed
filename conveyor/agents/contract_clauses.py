"""Two clauses every commercial contract has or should: its governing law and its
payment terms.

Governing law: the jurisdiction after "governed by / construed / interpreted ... the laws
of" (in any order of those verbs, "the internal laws", "the laws and judicial decisions"),
"the laws of X shall apply / govern", "unterliegt dem Recht des/der X", "régi par le
droit X". The jurisdiction ends where the clause goes on ("without regard to", ",",
"applicable to"). Other laws are decoys: a party "organized under the laws of Nevada",
"the laws of any jurisdiction"; the jurisdiction must be a proper name. A clause under
a "Governing Law" heading, or whose subject is this agreement, wins over another; two
clauses naming different laws leave doubt. A venue clause alone ("a court in Florida")
is not a governing law.

Payment terms: "net 30", "payable within thirty (30) days of (receipt of) the invoice",
"zahlbar innerhalb von 30 Tagen", "à 30 jours". Days counted from anything but an
invoice (receipt of payment, collection, execution, a milestone) are not payment terms.
"""

from __future__ import annotations

import re

from conveyor.agents.contract_text import ContractText, number

SURE = 0.95
LIKELY = 0.9
FAIR = 0.8
UNKNOWN = 0.5

# "English law", "deutsches Recht", "droit français": a country's law by its adjective.
_NATIONAL_LAW = {
    "english": "England", "scottish": "Scotland", "irish": "Ireland", "german": "Germany",
    "french": "France", "swiss": "Switzerland", "dutch": "the Netherlands",
    "italian": "Italy", "spanish": "Spain", "austrian": "Austria", "belgian": "Belgium",
    "swedish": "Sweden", "danish": "Denmark", "norwegian": "Norway", "finnish": "Finland",
    "polish": "Poland", "indian": "India", "chinese": "China", "japanese": "Japan",
    "deutschem": "Germany", "deutschen": "Germany", "deutsches": "Germany",
    "\u00f6sterreichischem": "Austria", "\u00f6sterreichischen": "Austria",
    "schweizerischem": "Switzerland", "schweizerischen": "Switzerland",
    "fran\u00e7ais": "France", "belge": "Belgium", "suisse": "Switzerland",
}  # fmt: skip
_LAW_CLAUSES = (
    re.compile(
        r"\b(?:governed|construed|interpreted|enforced|determined)\b[^.;]{0,90}?\b(?:by|under|"
        r"with|to|pursuant\s+to)[,\s]+(?:the\s+)?(?:internal\s+|substantive\s+)?laws?\s+"
        r"(?:and\s+judicial\s+decisions\s+)?of\s+(?P<law>[^.;]{2,80})",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:the\s+)?laws?\s+of\s+(?P<law>[^.;]{2,60}?)\s+(?:shall|will|do|does)\s+"
        r"(?:apply|govern|be\s+applicable)",
        re.IGNORECASE,
    ),
    re.compile(r"\bThe\s+laws?\s+of\s+(?P<law>[^,.;]+?)\s+governs?\b"),
    re.compile(
        r"\b(?:governed|construed|interpreted)\b[^.;]{0,60}?\b(?:by|under|with|to)\s+"
        rf"(?P<law>{'|'.join(k.capitalize() for k in _NATIONAL_LAW)})\s+law\b"
    ),
    re.compile(
        r"\b(?:unterliegt|unterliegen)\s+(?:dem|den|ausschlie\u00dflich\s+dem)\s+"
        r"(?:materiellen\s+)?Recht(?:en)?\s+(?:des|der|von)\s+(?P<law>[^.;]{2,60})",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:unterliegt|unterliegen|gilt)\s+(?:ausschlie\u00dflich\s+)?(?:dem\s+)?"
        r"(?P<law>\w+)\s+Recht\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:r\u00e9gie?s?|soumise?s?)\s+(?:par\s+|au\s+)?(?:le\s+)?droit\s+(?P<law>[^.;]{2,60})",
        re.IGNORECASE,
    ),
)
_LAW_WORDS = ("law", "recht", "droit")
_LAW_END = re.compile(
    r",|\s+(?:without|excluding|except|exclusive\s+of|applicable|as\s+applied|as\s+in\s+effect|"
    r"in\s+force|regardless|and\s+(?:the|any|all|each|that)\b|which|that|to\s+the\s+exclusion|"
    r"unter\s+Ausschluss|\u00e0\s+l'exclusion|shall|will|\()",
    re.IGNORECASE,
)
_HEADING = re.compile(
    r"(?:Governing\s+Law|Choice\s+of\s+Law|Applicable\s+Law|Law\s+and\s+Jurisdiction|"
    r"Anwendbares\s+Recht|Rechtswahl|Droit\s+applicable|Loi\s+applicable)",
    re.IGNORECASE,
)
_THIS_AGREEMENT = re.compile(
    r"\b(?:this|the)\s+(?:Agreement|Contract)\b|\bVertrag\b|\bcontrat\b", re.IGNORECASE
)

_DAYS = r"(?P<num>\d{1,3}|[a-z]+(?:-[a-z]+)?)(?:\s*\((?P<num2>\d{1,3})\))?\s*(?:calendar\s+)?"
_PAYMENT = (
    (re.compile(rf"\bnet\s+{_DAYS}days\b", re.IGNORECASE), SURE),
    (re.compile(r"\bnet\s+(?P<num>\d{1,3})\b(?!\s*%)", re.IGNORECASE), LIKELY),
    (re.compile(r"\bpayable\s+(?P<num>\d{1,3})\s+days\s+net\b", re.IGNORECASE), SURE),
    (
        re.compile(
            rf"\b(?:due|payable|paid)\s+{_DAYS}days?\s+(?P<rest>(?:from|after|following)\b[^.;]{{0,60}})",
            re.IGNORECASE,
        ),
        LIKELY,
    ),
    # days counted from something: an invoice must be what it is
    (re.compile(rf"\bwithin\s+{_DAYS}days?\b(?P<rest>[^.;]{{0,80}})", re.IGNORECASE), LIKELY),
    (
        re.compile(
            r"\b(?:zahlbar|zu\s+zahlen|f\u00e4llig)\s+innerhalb\s+(?:von\s+)?(?P<num>\d{1,3})\s+"
            r"Tagen\b(?P<rest>[^.;]{0,60})",
            re.IGNORECASE,
        ),
        LIKELY,
    ),
    (
        re.compile(
            r"\b(?:dans\s+un\s+d\u00e9lai\s+de|\u00e0)\s+(?P<num>\d{1,3})\s+jours\b"
            r"(?P<rest>[^.;]{0,60})",
            re.IGNORECASE,
        ),
        FAIR,
    ),
)
_PAYMENT_WORDS = ("day", "net", "tage", "jour")
_PAYING = re.compile(r"\bpa(?:y|id|ble|yment)|\bdue\b|zahl|pai|r\u00e8glement", re.IGNORECASE)
_INVOICE = re.compile(r"invoice|billing|bill\b|Rechnung|facture|factura|fattura", re.IGNORECASE)
# Days counted from these are not payment terms of invoices.
_NOT_INVOICE_DAYS = re.compile(
    r"receipt\s+of\s+(?:such\s+)?payment|collect|receivable|delivery|shipment|execution|"
    r"signing|closing|notice|end\s+of|termination|expiration|milestone|achievement|"
    r"effective\s+date|date\s+of\s+this|request",
    re.IGNORECASE,
)


def governing_law(text: ContractText) -> tuple[str | None, float]:
    candidates: list[tuple[int, int, str]] = []  # (-score, position, law)
    for offset, window in text.windows(_LAW_WORDS, before=160, after=100):
        for pattern in _LAW_CLAUSES:
            for match in pattern.finditer(window):
                law = _jurisdiction(match.group("law"))
                if not law:
                    continue
                at = offset + match.start()
                score = 0
                if _HEADING.search(text.flat[max(0, at - 80) : at]):
                    score += 2
                if _THIS_AGREEMENT.search(text.sentence_at(at)):
                    score += 1
                candidates.append((-score, at, law))
    if not candidates:
        return None, UNKNOWN
    candidates.sort()
    best = candidates[0]
    others = {_key(law) for _, _, law in candidates} - {_key(best[2])}
    if others:
        return best[2], FAIR  # two laws named: the heading's or the agreement's, with doubt
    return best[2], SURE if best[0] < 0 else LIKELY


def _jurisdiction(text: str) -> str | None:
    first = text.split()[0] if text.split() else ""
    if first.casefold() in _NATIONAL_LAW:
        return _NATIONAL_LAW[first.casefold()]
    law = _LAW_END.split(text, maxsplit=1)[0].strip()
    law = re.sub(r"^(?:the|der|des|la|le|l')\s+", "", law, flags=re.IGNORECASE).strip()
    # A proper name: "the State of New York", "India", "the state of New York"; not "any
    # jurisdiction", "its state".
    if not law or len(law.split()) > 8:
        return None
    if not re.match(r"[A-Z]|(?:state|commonwealth)\s+of\s+[A-Z]", law):
        return None
    return law


def _key(law: str) -> str:
    words = re.findall(r"[^\W_]+", law.casefold())
    return " ".join(w for w in words if w not in {"state", "of", "commonwealth", "the"})


def payment_terms(text: ContractText) -> tuple[str | None, float]:
    windows = text.windows(_PAYMENT_WORDS, before=60, after=100)
    for pattern, confidence in _PAYMENT:
        for offset, window in windows:
            for match in pattern.finditer(window):
                days = _payment_days(text, match, offset + match.start())
                if days is not None:
                    return f"Net {days}", confidence
    return None, UNKNOWN


def _payment_days(text: ContractText, match: re.Match[str], at: int) -> int | None:
    """The days of a payment-terms phrase, or None if it is not one."""
    groups = match.groupdict()
    digits = groups.get("num2")
    days = int(digits) if digits else number(match.group("num"))
    if days is None or not 0 < days <= 180:
        return None
    if "rest" in groups:  # "within N days ...": of an invoice, in a sentence about paying
        rest = groups["rest"] or ""
        sentence = text.sentence_at(at)
        if _NOT_INVOICE_DAYS.search(rest[:60]) and not _INVOICE.search(rest[:60]):
            return None
        if not (_INVOICE.search(rest) or _INVOICE.search(sentence)):
            return None
        if not _PAYING.search(sentence):
            return None
    return days
