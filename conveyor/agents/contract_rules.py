"""Contracts read by rules: the sentences contracts use for their key facts.

The text is read as one stream (line breaks and page footers removed), since a clause can
wrap over lines and pages. Each fact has a few phrasings; a fact found by the phrasing made
for it is sure, one found by a looser phrasing less so. Decoys are expected: "within ten
(10) days" in a notices clause is not the renewal notice, so numbers are only taken from
the sentence that states the fact.
"""

from __future__ import annotations

import re

from conveyor.agents.values import dates_in
from conveyor.documents.types import Contract, Party, Renewal

SURE = 0.95
LIKELY = 0.9
WEAK = 0.7

_FOOTER = re.compile(r"^\s*page \d+ of \d+\s*$", re.IGNORECASE | re.MULTILINE)
_ROLE = r"\((?:the\s+)?[\"“]?(?P<role{n}>[A-Z][\w-]*(?: [A-Z][\w-]*)?)[\"”]?\)"
_PARTY = r"(?:\({n}\)\s*)?(?P<name{n}>[A-Z][^;()]*?),\s+(?:a|an)\s+[^()]*?\s*" + _ROLE
_PARTIES = re.compile(
    r"\b(?i:between):?\s*" + _PARTY.format(n=1) + r"[;,]?\s*(?:(?i:and)\s+)?" + _PARTY.format(n=2)
)
# The date is looked for in the few words after the cue.
_EFFECTIVE = [
    (re.compile(r"as of (?P<d>[^()]{6,30}?) \(the [\"“]?Effective Date", re.I), SURE),
    (re.compile(r"takes effect on (?P<d>[^()]{6,30}?) \(the Effective Date\)", re.I), SURE),
    (re.compile(r"\beffective (?:as of |on )?(?P<d>.{6,30})", re.I), LIKELY),
    (re.compile(r"\bdated (?P<d>.{6,30})", re.I), LIKELY),
]
_NUM = r"(?:[a-z-]+ \()?(?P<n>\d+)\)?"
_TERM = [
    (re.compile(rf"initial term (?:of this Agreement )?(?:is |of ){_NUM} months", re.I), 1),
    (re.compile(rf"in force for (?:a period of )?{_NUM} months", re.I), 1),
    (re.compile(rf"in force for (?:a period of )?{_NUM} years?", re.I), 12),
    (re.compile(rf"(?:term|period) of {_NUM} (?P<unit>months|years?)", re.I), 0),
]
_AMENDED_TERM = re.compile(
    rf"term (?:is|shall be) (?:hereby )?(?:extended|amended|changed) to {_NUM} months", re.I
)
_SENTENCE = re.compile(r"[^.]*(?:\.(?!\d)|$)")
_NO_RENEWAL = re.compile(
    r"(?:not|no) (?:renew|automatic renewal)|shall not renew|no automatic renewal", re.I
)
_AUTO_RENEWAL = re.compile(r"renews? automatically|automatically renew|renewed automatically", re.I)
_DAYS = re.compile(rf"{_NUM}(?:\s+|')days?", re.I)
_LAW = [
    re.compile(r"governed by (?:and construed in accordance with )?the laws? of (?P<law>[^,.]+)"),
    re.compile(r"The laws? of (?P<law>[^,.]+?) governs?\b"),
]
_PAYMENT = [
    re.compile(rf"\bnet {_NUM} days", re.I),
    re.compile(rf"payable {_NUM} days net", re.I),
    re.compile(rf"shall pay each [\w ]*?invoice within {_NUM} days", re.I),
]


def read_contract(text: str) -> tuple[Contract, dict[str, float]]:
    """The contract in `text` and each field's confidence."""
    flat = " ".join(_FOOTER.sub(" ", text).split())
    fields: dict[str, float] = {}
    parties = _parties(flat, fields)
    effective = None
    fields["effective_date"] = 0.0
    for pattern, confidence in _EFFECTIVE:
        match = pattern.search(flat)
        dates = dates_in(match.group("d")) if match else []
        if dates and dates[0].date:
            effective, fields["effective_date"] = dates[0].date, confidence
            break
    term = None
    fields["term_months"] = 0.0
    for pattern, factor in _TERM:
        match = pattern.search(flat)
        if match:
            unit = match.groupdict().get("unit") or ""
            months = factor or (1 if unit.startswith("month") else 12)
            term, fields["term_months"] = int(match.group("n")) * months, SURE if factor else WEAK
            break
    amended = _AMENDED_TERM.search(flat)
    if amended and int(amended.group("n")) != term:
        # A later clause changes the term: it wins, but a contract that amends itself
        # is one to have read by a person.
        term, fields["term_months"] = int(amended.group("n")), WEAK
    renewal = _renewal(flat, fields)
    law = None
    fields["governing_law"] = 0.0
    for pattern in _LAW:
        match = pattern.search(flat)
        if match:
            law, fields["governing_law"] = match.group("law").strip().removeprefix("the "), SURE
            break
    payment = None
    fields["payment_terms"] = 0.0
    for pattern in _PAYMENT:
        match = pattern.search(flat)
        if match:
            payment, fields["payment_terms"] = f"Net {int(match.group('n'))}", SURE
            break
    contract = Contract(
        parties=parties,
        effective_date=effective,
        term_months=term,
        renewal=renewal,
        governing_law=law,
        payment_terms=payment,
    )
    return contract, fields


def _parties(flat: str, fields: dict[str, float]) -> list[Party]:
    match = _PARTIES.search(flat[:4000])
    if not match:
        fields["parties"] = 0.0
        return []
    fields["parties"] = SURE
    return [
        Party(name=match.group(f"name{n}").strip(), role=match.group(f"role{n}")) for n in (1, 2)
    ]


def _renewal(flat: str, fields: dict[str, float]) -> Renewal:
    for sentence in _SENTENCE.findall(flat):
        if "renew" not in sentence.lower():
            continue
        if _NO_RENEWAL.search(sentence):
            fields["renewal.auto_renew"] = SURE
            fields["renewal.notice_days"] = SURE
            return Renewal(auto_renew=False)
        if _AUTO_RENEWAL.search(sentence):
            fields["renewal.auto_renew"] = SURE
            days = _DAYS.search(sentence)
            fields["renewal.notice_days"] = SURE if days else WEAK
            return Renewal(auto_renew=True, notice_days=int(days.group("n")) if days else None)
    fields["renewal.auto_renew"] = WEAK  # nothing said about renewal: it does not renew
    fields["renewal.notice_days"] = WEAK
    return Renewal(auto_renew=None)
