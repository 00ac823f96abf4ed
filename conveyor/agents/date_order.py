"""Which way an invoice's ambiguous slash dates go: 03/04/2026 is 4 March in the United
States and 3 April almost everywhere else.

The evidence, strongest first: another date of the same document that can only be read
one way (13/04/2026); the payment terms, when exactly one order puts the due date that
many days after the issue date; a due date that comes after the issue date in only one
order; the vendor's country, from its address; and failing all, a guess.
"""

from __future__ import annotations

import datetime
import re

from conveyor.agents.values import DateToken, dates_in, resolve, slash_order


def slash_date_order(
    issue: DateToken | None, due: DateToken | None, lines: list[str], currency: str | None
) -> tuple[str, str]:
    """("mdy" or "dmy", what decided it): "printed" when neither date is ambiguous, else
    "other date", "terms", "only fit", "fit against country", "country" or "guess"."""
    if not any(t is not None and t.both for t in (issue, due)):
        return "mdy", "printed"
    known = slash_order([t for line in lines for t in dates_in(line)])
    if known:
        return known, "other date"
    fitting = [o for o in ("mdy", "dmy") if _plausible(issue, due, o)]
    days = _terms_days(lines)
    exact = [o for o in fitting if days is not None and _gap(issue, due, o) == days]
    country = _country_order(lines, currency)
    if len(exact) == 1:
        return exact[0], "terms"
    if len(fitting) == 1:
        return fitting[0], "only fit" if country in (None, fitting[0]) else "fit against country"
    # Both readings fit: the vendor's country decides, which is a guess.
    return (country, "country") if country else ("dmy", "guess")


_TERMS = re.compile(r"\b(?:net\s*(\d{1,3})\b|(\d{1,3})\s*days\b)", re.IGNORECASE)
_MDY_PLACES = re.compile(r"\bunited states\b|\busa\b|, [A-Z]{2} \d{5}\b", re.IGNORECASE)
# Countries that write the day first, in English and, for the languages the labels know
# beyond the first six, in their own ("România", "Magyarország", "Ελλάδα").
_DMY_PLACES = re.compile(
    r"\b(?:united kingdom|uk|australia|new zealand|ireland|france|netherlands|germany|"
    r"spain|italy|belgium|india|singapore|switzerland|austria|portugal|poland|polska|"
    r"rom[aâ]nia|czech republic|czechia|česká republika|slovakia|slovensko|hungary|"
    r"magyarország|croatia|hrvatska|slovenia|slovenija|bulgaria|българия|lithuania|"
    r"lietuva|latvia|latvija|estonia|eesti|finland|suomi|turkey|türkiye|greece|ελλ[αά]δα|"
    r"catalunya|espanya)\b",
    re.IGNORECASE,
)


def _terms_days(lines: list[str]) -> int | None:
    for line in lines:
        if "terms" in line.lower() or "net" in line.lower():
            match = _TERMS.search(line)
            if match:
                return int(match.group(1) or match.group(2))
    return None


def _country_order(lines: list[str], currency: str | None) -> str | None:
    """The date order of the vendor's country, from its address (the first lines)."""
    head = "\n".join(lines[:8])
    if _MDY_PLACES.search(head):
        return "mdy"
    if _DMY_PLACES.search(head):
        return "dmy"
    return "mdy" if currency == "USD" else None


def _gap(issue: DateToken | None, due: DateToken | None, order: str) -> int | None:
    if issue is None or due is None:
        return None
    a, b = resolve(issue, order), resolve(due, order)
    return (b - a).days if a and b else None


def _plausible(issue: DateToken | None, due: DateToken | None, order: str) -> bool:
    if issue is None:
        return False
    a = resolve(issue, order)
    if a is None:
        return False
    if due is None:
        return True
    b = resolve(due, order)
    return b is not None and datetime.timedelta(0) <= b - a <= datetime.timedelta(days=120)
