"""When a contract starts, how long it runs, and whether it renews.

Effective date, by the strength of its cue: a date defined as the effective date
(`March 20, 2020 (the "Effective Date")`, `1. März 2025 ("Wirksamkeitsdatum")`) or said to
be when the agreement is effective is sure; a date the preamble says the agreement is
dated, made or entered into is likely; "as of the date noted below" or "effective on
execution" point to the date by the signatures, less sure. Only the preamble is read for
the weaker cues: recitals are full of other agreements' dates.

Term: a duration in the sentence that states the term ("the initial term ... shall be one
(1) year", "for a term ("Term") of 12 months", "Agreement Term: 1 Year", "remain in force
for three years"), numbers in digits or words; the same words in a confidentiality or
survival sentence ("for a period of five (5) years thereafter") are not the term. A term
that ends on a date counts the whole months from the effective date. A bare number in
words after a weak cue ("continues for two years") is not read.

Renewal: the sentences about renewing or extending. "Automatically renews" (or extends,
or continues unless a party gives notice) is a renewal, with the days of notice found in
that sentence or the one before or after; "unless extended by both parties in writing",
"by amendment", "upon mutual agreement" is none; nothing said is nothing known.
"""

from __future__ import annotations

import datetime
import re

from conveyor.agents.contract_text import ContractText, number
from conveyor.agents.values import DateToken, dates_in, resolve, slash_order

SURE = 0.95
LIKELY = 0.9
FAIR = 0.8
WEAK = 0.7
UNKNOWN = 0.5  # nothing found, and nothing that says it is absent either

_DEFINED_EFFECTIVE = re.compile(
    r"\(\s*(?:the\s+)?\"?(?:Effective\s+Date|Commencement\s+Date|Wirksamkeitsdatum|"
    r"Stichtag|Inkrafttreten|Date\s+d'effet|Date\s+d'entr\u00e9e\s+en\s+vigueur|"
    r"Fecha\s+de\s+entrada\s+en\s+vigor|Data\s+di\s+efficacia)\b",
    re.IGNORECASE,
)
_EFFECTIVE_CUES = (
    (
        re.compile(
            r"\b(?:effective|takes\s+effect|in\s+Kraft|en\s+vigueur|prend\s+effet|"
            r"entre\s+en\s+vigueur)\s+(?:as\s+(?:of|from)|on|from|am|le|du|\u00e0\s+compter\s+du)\b",
            re.IGNORECASE,
        ),
        SURE,
    ),
    (re.compile(r"\bmade\s+and\s+effective\s+as\s+of\b", re.IGNORECASE), SURE),
    # "effective January 1, 2020": a date right after the word
    (re.compile(r"\beffective(?=\s+(?:[A-Z][a-z]{2,8}\.?\s+\d|\d))", re.IGNORECASE), SURE),
    (
        re.compile(
            r"\b(?:dated|made|entered\s+into|executed|concluded|signed|geschlossen|conclu)\b",
            re.IGNORECASE,
        ),
        LIKELY,
    ),
    (re.compile(r"\bas\s+of\b", re.IGNORECASE), FAIR),
)
# Between a cue and its date, another agreement: "entered into a license agreement dated".
_OTHER_AGREEMENT = re.compile(r"\b(?:dated|agreement)\b", re.IGNORECASE)
_THE_AGREEMENT = re.compile(
    r"\b(?:this|the)\s+Agreement\b|\b(?:le\s+pr\u00e9sent|ce)\s+contrat\b|"
    r"\b(?:dieser|der)\s+Vertrag\b",
    re.IGNORECASE,
)
_CLAUSES_READ = 15000  # how far into the text the term clause is looked for
_EFFECTIVE_AT_SIGNING = re.compile(
    r"\bas\s+of\s+the\s+(?:date|day)\s+(?:noted|set\s+forth|written|indicated|shown)\s+below|"
    r"\beffective\s+(?:up)?on\s+(?:the\s+)?(?:date\s+of\s+)?(?:its\s+)?(?:execution|signature|signing)",
    re.IGNORECASE,
)
# Case matters: "signed by the Parties" in a clause is not a signature block.
_SIGNATURES = re.compile(r"IN\s+WITNESS\s+WHEREOF|/s/|\bBy:\s|\bSIGNED\b|\bUnterschrift")
_ANOTHER_DOCUMENTS_DATE = re.compile(r"\bdated\s+(?:as\s+of\s+)?$", re.IGNORECASE)
_DATE_WINDOW = 45

# "12 months", "twelve (12) months", "two years (2)", "1 Year", "zwölf Monate".
_DURATION = (
    r"(?P<num>\d{1,3}|[A-Za-z]+(?:[- ][a-z]+)?)(?:\s*\((?P<num2>\d{1,3})\))?\s*[- ]?\s*"
    r"(?:calendar\s+|full\s+|consecutive\s+)?"
    r"(?P<unit>months?|years?|Monate?n?|Jahre?n?|mois|ans?|ann\u00e9es?)\b(?:\s*\((?P<num3>\d{1,3})\))?"
)
_TERM_IS = (
    r"\b(?:initial\s+)?term\b(?:\s+of\s+(?:this|the)\s+(?:Agreement|Contract))?"
    r"(?:\s*\([^)]{0,40}\))?(?:\s+of\s+this\s+Agreement)?"  # for a term (the "Term") of
    r"\s*(?::|is|shall\s+be|will\s+be|of|for)\s+(?:a\s+(?:period|term)\s+of\s+)?(?:an?\s+)?"
    r"(?:the\s+(?:sooner|earlier|earliest)\s+of\s+)?"  # "the sooner of six (6) months or ..."
)
_IN_FORCE_FOR = (
    r"\b(?:remain|continue|be)\s+in\s+(?:full\s+)?(?:force|effect)(?:\s+and\s+effect)?\s+"
    r"for\s+(?:a\s+(?:period|term)\s+of\s+)?"
)
# (pattern, confidence, whether a number in words alone is read)
_TERM_CUES = (
    # the sentence that states the term
    (re.compile(_TERM_IS + _DURATION, re.IGNORECASE), SURE, True),
    (re.compile(_IN_FORCE_FOR + _DURATION, re.IGNORECASE), SURE, True),
    (re.compile(r"\bLaufzeit\s+(?:von|betr\u00e4gt)\s+" + _DURATION, re.IGNORECASE), SURE, True),
    (
        re.compile(r"\bpour\s+une\s+dur\u00e9e\s+(?:initiale\s+)?de\s+" + _DURATION, re.I),
        SURE,
        True,
    ),
    # weaker cues: only in a sentence about the agreement's term
    (re.compile(r"\b(?:period|term)\s+of\s+" + _DURATION, re.IGNORECASE), FAIR, True),
    (
        re.compile(r"\bcontinues?\s+(?:thereafter\s+)?for\s+" + _DURATION, re.IGNORECASE),
        FAIR,
        False,
    ),
)
_TERM_WORDS = ("term", "period", "force", "effect", "continue", "laufzeit", "dur\u00e9e")
_AMENDED_TERM = re.compile(
    rf"\bterm\s+(?:is|shall\s+be)\s+(?:hereby\s+)?(?:extended|amended|changed)\s+to\s+{_DURATION}",
    re.IGNORECASE,
)
_NOT_THE_TERM = re.compile(
    r"^[^.;]{0,40}?\b(?:following|after|from|of)\s+(?:the\s+|such\s+|any\s+)?(?:termination|expiration|expiry|"
    r"date\s+of\s+termination)|^\s*(?:thereafter|after\s+(?:the|such))",
    re.IGNORECASE,
)
_OTHER_PERIODS = re.compile(
    r"confidential|non-?compet|solicit|warrant|surviv|indemn|limitation|retain|records|"
    r"audit|exclusiv|lead\s+time|vest|option|statute",
    re.IGNORECASE,
)
_ABOUT_THE_TERM = re.compile(
    r"\b(?:this\s+Agreement|the\s+Agreement|the\s+Term|initial\s+term|term\s+of\s+this|"
    r"Vertrag|contrat|Service\s+Period)\b",
    re.IGNORECASE,
)
_TERM_SUBJECT = re.compile(r"\bterm\b|\b(?:this|the)\s+Agreement\b", re.IGNORECASE)
_TERM_ENDS = re.compile(
    r"\b(?:terminate|expire|end|continue\s+(?:in\s+effect\s+)?until|run\s+until|expiring)s?\s+"
    r"(?:on|at\s+the\s+close\s+of)?\s*",
    re.IGNORECASE,
)

# "... a minimum period of 12 months and thereafter upon the mutual agreement": what
# happens after the term is said without the word "renew".
_RENEWAL_WORDS = re.compile(
    r"renew|extend|extension|reconduction|verl\u00e4nger|prolong|\bthereafter\b", re.IGNORECASE
)
_NO_RENEWAL = re.compile(
    r"\b(?:shall|will|does|do)\s+not\s+(?:be\s+)?(?:automatically\s+)?(?:renew|extend)|"
    r"\bno\s+(?:automatic\s+)?(?:renewal|extension)|\bnot\s+(?:be\s+)?renewed\s+automatically|"
    r"\bkeine\s+(?:automatische\s+)?Verl\u00e4ngerung|\bnicht\s+automatisch",
    re.IGNORECASE,
)
_AUTO_RENEWAL = re.compile(
    r"\bautomatically\s+(?:be\s+)?(?:renew|extend)|\b(?:renew|extend)(?:s|ed)?\s+automatically|"
    r"\bautomatic(?:ally)?\s+renewal|\b(?:renew|extend)(?:s|ed)?\s+(?:for|by)\s+(?:successive|"
    r"additional|further|one\s+or\s+more)\b[^.;]{0,80}\bunless\b|"
    r"verl\u00e4ngert\s+sich\s+(?:automatisch|stillschweigend|jeweils)|tacite\s+reconduction|"
    r"pr\u00f3rroga\s+autom\u00e1tica|rinnov\w+\s+(?:automaticamente|tacitamente)",
    re.IGNORECASE,
)
_MUTUAL_RENEWAL = re.compile(
    r"\b(?:unless|only\s+if|if)\s+(?:extended|renewed)\s+by\s+(?:both|the)\s+parties|"
    r"\b(?:mutual|both\s+parties'?|the\s+parties'?)\s+(?:written\s+)?(?:agreement|consent)|"
    r"\bwritten\s+consent\s+of\s+both\s+parties|\bby\s+(?:an\s+)?amendment|"
    r"\bin\s+a\s+writing\s+(?:executed|signed)\s+by|\bupon\s+the\s+mutual\s+agreement",
    re.IGNORECASE,
)
# "unless either party requests termination at least 30 days prior to the end of the
# then-current term": the contract goes on by itself.
_CONTINUES_UNLESS = re.compile(
    r"\bunless\s+(?:either|a|one)\s+party\b[^.;]{0,120}\b(?:prior\s+to|before)\s+the\s+"
    r"(?:end|expiration|expiry)\s+of\s+the\s+(?:then[- ]current|initial|renewal)\s+term",
    re.IGNORECASE,
)
_NOTICE_DAYS = re.compile(
    r"(?P<num>\d{1,3}|[a-z]+(?:-[a-z]+)?)(?:\s*\((?P<num2>\d{1,3})\))?\s*(?:calendar\s+|business\s+)?"
    r"(?:days?|Tage?n?|jours)\b(?:'|')?",
    re.IGNORECASE,
)
_NOTICE_AFTER = re.compile(
    r"[^.;]{0,20}?\b(?:prior|before|notice|in\s+advance|vor|avant)\b", re.IGNORECASE
)
_NOTICE_BEFORE = re.compile(
    r"\b(?:at\s+least|not\s+less\s+than|no\s+later\s+than|within|mindestens|au\s+moins)\s*$",
    re.IGNORECASE,
)
_OF_THE_AGREEMENT = re.compile(
    r"\b(?:this|the)\s+(?:Agreement|Contract)\b|\bterms?\b|\bVertrag\b|\bcontrat\b|"
    r"\bLaufzeit\b|\bdur\u00e9e\b|\breconduction\b",
    re.IGNORECASE,
)
_NOTICE_MONTHS = re.compile(
    r"\b(?:\w+\s+)?(?:\(\d+\)\s+)?(?:calendar\s+)?(?:months?|Monate?n?|mois)\b(?:'|')?\s+(?:prior|before|written|notice|vor)",
    re.IGNORECASE,
)


# --------------------------------------------------------------------- effective date


def effective_date(text: ContractText) -> tuple[datetime.date | None, float]:
    order = _SlashOrder(text)
    for match in _DEFINED_EFFECTIVE.finditer(text.flat[:8000]):
        before = dates_in(text.flat[max(0, match.start() - _DATE_WINDOW) : match.start()])
        found = _date(before[-1:], order)
        if found:
            return found, SURE
    for cue, confidence in _EFFECTIVE_CUES:
        for match in cue.finditer(text.preamble):
            after = text.preamble[match.end() : match.end() + _DATE_WINDOW]
            found = _date(dates_in(after)[:1], order)
            if found and not _OTHER_AGREEMENT.search(after[: after.find(str(found.year))]):
                return found, confidence
    # Past the preamble, only "this Agreement ... takes effect on DATE" (the term clause).
    cue = _EFFECTIVE_CUES[0][0]
    for match in cue.finditer(text.flat, len(text.preamble), _CLAUSES_READ):
        if _THE_AGREEMENT.search(text.flat[max(0, match.start() - 80) : match.start()]):
            after = text.flat[match.end() : match.end() + _DATE_WINDOW]
            found = _date(dates_in(after)[:1], order)
            if found:
                return found, LIKELY
    if _EFFECTIVE_AT_SIGNING.search(text.flat):
        signed = _signature_date(text, order)
        if signed:
            return signed, FAIR
    return None, UNKNOWN


class _SlashOrder:
    """How the contract writes 03/04/2026 (month or day first), worked out from its dates
    only when a date that reads both ways turns up; US style when nothing says."""

    def __init__(self, text: ContractText) -> None:
        self._text = text
        self._order: str | None = None

    def __call__(self) -> str:
        if self._order is None:
            self._order = slash_order(dates_in(self._text.flat[:6000])) or "mdy"
        return self._order


def _resolve(token: DateToken, order: _SlashOrder) -> datetime.date | None:
    return token.date if token.both is None else resolve(token, order())


def _date(tokens: list[DateToken], order: _SlashOrder) -> datetime.date | None:
    for token in tokens:
        found = _resolve(token, order)
        if found and 1900 <= found.year <= 2100:
            return found
    return None


def _signature_date(text: ContractText, order: _SlashOrder) -> datetime.date | None:
    """The latest date printed by the signatures (the agreement's last half)."""
    half = len(text.flat) // 2
    marks = [m.start() for m in _SIGNATURES.finditer(text.flat, half)]
    if not marks:
        return None
    start = max(half, marks[0] - 300)
    window = text.flat[start : marks[0] + 600]
    found = []
    for token in dates_in(window):
        at = window.find(token.text)
        date = _resolve(token, order)
        if date and not _ANOTHER_DOCUMENTS_DATE.search(window[max(0, at - 20) : at]):
            found.append(date)
    return max(found) if found else None


# ------------------------------------------------------------------------------- term


def term_months(text: ContractText, effective: datetime.date | None) -> tuple[int | None, float]:
    best: tuple[int, float] | None = None
    windows = text.windows(_TERM_WORDS, before=60, after=120)
    for cue, confidence, words_ok in _TERM_CUES:
        for match, at in _matches(cue, windows):
            months = _months(match, words_ok=words_ok)
            if months is None or _NOT_THE_TERM.match(text.flat[at + len(match.group(0)) :][:60]):
                continue
            sentence = text.sentence_at(at)
            if _OTHER_PERIODS.search(sentence):
                continue
            if confidence < SURE and not _ABOUT_THE_TERM.search(sentence):
                continue
            best = (months, confidence)
            break
        if best:
            break
    if best is None and effective is not None:
        best = _term_to_date(text, effective)
    amended = _AMENDED_TERM.search(text.flat)
    if amended:
        months = _months(amended, words_ok=True)
        if months is not None and (best is None or months != best[0]):
            # A later clause changes the term: it wins, but a contract that amends itself
            # is one to have read by a person.
            return months, WEAK
    return best if best else (None, UNKNOWN)


def _matches(
    pattern: re.Pattern[str], windows: list[tuple[int, str]]
) -> list[tuple[re.Match[str], int]]:
    """`pattern`'s matches in `windows`, each with where it is in the whole stream."""
    return [(m, offset + m.start()) for offset, w in windows for m in pattern.finditer(w)]


def _months(match: re.Match[str], *, words_ok: bool) -> int | None:
    digits = match.group("num2") or match.group("num3")
    if digits:
        n: int | None = int(digits)
    elif match.group("num").isdigit() or words_ok:
        n = number(match.group("num"))
    else:
        n = None
    if n is None or n <= 0:
        return None
    unit = match.group("unit").lower()
    return n if unit.startswith(("month", "monat", "mois")) else n * 12


def _term_to_date(text: ContractText, effective: datetime.date) -> tuple[int, float] | None:
    """A term that ends on a date: its whole months from the effective date."""
    for match in _TERM_ENDS.finditer(text.flat):
        sentence = text.sentence_at(match.start())
        if not _TERM_SUBJECT.search(sentence) or _OTHER_PERIODS.search(sentence):
            continue
        ends = dates_in(text.flat[match.end() : match.end() + _DATE_WINDOW])
        end = ends[0].date if ends else None
        if end and end > effective:
            months = _whole_months(effective, end)
            if months:
                return months, FAIR
    return None


def _whole_months(start: datetime.date, end: datetime.date) -> int | None:
    after = end + datetime.timedelta(days=1)
    if after.day != start.day:
        return None
    months = (after.year - start.year) * 12 + after.month - start.month
    return months if months > 0 else None


# ---------------------------------------------------------------------------- renewal


def renewal(text: ContractText) -> tuple[bool | None, int | None, float, float]:
    """(auto_renew, notice_days, confidence of each)."""
    sentences = text.sentences()
    for i, (start, sentence) in enumerate(sentences):
        if not _RENEWAL_WORDS.search(sentence) and not _CONTINUES_UNLESS.search(sentence):
            continue
        # About the agreement ("It renews ..." after a sentence about it, or under its
        # heading), not an insurance's renewal or an extension of time to perform.
        if not _OF_THE_AGREEMENT.search(text.flat[max(0, start - 200) : start + len(sentence)]):
            continue
        if _NO_RENEWAL.search(sentence):
            return False, None, SURE, SURE
        if _AUTO_RENEWAL.search(sentence) or _CONTINUES_UNLESS.search(sentence):
            days = _notice_days(sentence)
            if days is not None:
                return True, days, SURE, SURE
            if _NOTICE_MONTHS.search(sentence):
                return True, None, SURE, FAIR  # notice in months: not a number of days
            around = [s for _, s in sentences[max(0, i - 1) : i + 2] if s is not sentence]
            for other in around:
                days = _notice_days(other)
                if days is not None and re.search(r"notif|notice|extend|renew", other, re.I):
                    return True, days, SURE, FAIR
            return True, None, SURE, FAIR
        if _MUTUAL_RENEWAL.search(sentence):
            return False, None, LIKELY, LIKELY
    return None, None, WEAK, WEAK


def _notice_days(sentence: str) -> int | None:
    """The days of notice in `sentence`: a number of days said to be notice ("at least
    sixty (60) days prior"), else the first one that is not a period ("30-day periods")."""
    fallback = None
    for match in _NOTICE_DAYS.finditer(sentence):
        digits = match.group("num2")
        n = int(digits) if digits else number(match.group("num"))
        if n is None or not 0 < n <= 365:
            continue
        after = sentence[match.end() : match.end() + 40]
        before = sentence[max(0, match.start() - 25) : match.start()]
        if _NOTICE_AFTER.match(after) or _NOTICE_BEFORE.search(before):
            return n
        if fallback is None and not re.match(r"\s*periods?\b", after, re.IGNORECASE):
            fallback = n
    return fallback
