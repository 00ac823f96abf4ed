"""Generated contracts: two parties, an effective date, a term, a renewal rule, payment
terms and a governing law, stated in varied wording among numbered clauses of filler, to
any length (a 200-page one is for chunking). The facts sit where contracts put them: the
parties and date up front, the term early, payment in the middle, the law near the end.
Some filler clauses mention days and notices too, as real ones do.

One contract in five is a hard case: the term in words only ("two years"), the parties
in a capitalised BETWEEN block, or the term amended by a later clause (the truth is the
amended term)."""

from __future__ import annotations

import datetime
import io
import random
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from conveyor.documents.types import Contract, Party, Renewal
from conveyor.testing.samples.formats import format_date, in_words
from conveyor.testing.samples.world import CUSTOMERS, VENDORS

KINDS = (
    ("SERVICES AGREEMENT", ("Provider", "Client")),
    ("MASTER SERVICES AGREEMENT", ("Supplier", "Customer")),
    ("SOFTWARE LICENSE AGREEMENT", ("Licensor", "Licensee")),
    ("CONSULTING AGREEMENT", ("Consultant", "Company")),
    ("SUPPLY AGREEMENT", ("Seller", "Buyer")),
)
FORMS = {
    "US": "a Delaware corporation",
    "UK": "a company registered in England and Wales",
    "DE": "a limited liability company organised under the laws of Germany",
    "CA": "an Ontario corporation",
    "AU": "a company registered in New South Wales",
    "CH": "a Swiss stock corporation",
    "JP": "a company incorporated in Japan",
    "FR": "a French société à responsabilité limitée",
    "NL": "a Dutch private limited company",
}
LAWS = (
    "the State of New York",
    "the State of Delaware",
    "the State of California",
    "England and Wales",
    "the Province of Ontario",
    "Switzerland",
    "Germany",
    "the Netherlands",
)
HARD_CASES = ("term-in-words", "parties-block", "amended-term")
TERM_MONTHS = (6, 12, 12, 24, 24, 36, 36, 48, 60)
NOTICE_DAYS = (30, 45, 60, 60, 90, 90, 120)
PAY_DAYS = (14, 15, 30, 30, 45, 60)
FILLER_TOPICS = (
    "CONFIDENTIALITY",
    "WARRANTIES",
    "LIMITATION OF LIABILITY",
    "INTELLECTUAL PROPERTY",
    "DATA PROTECTION",
    "INSURANCE",
    "SUBCONTRACTING",
    "AUDIT RIGHTS",
    "FORCE MAJEURE",
    "NOTICES",
    "ASSIGNMENT",
    "NON-SOLICITATION",
    "ACCEPTANCE",
    "SERVICE LEVELS",
    "CHANGE CONTROL",
    "DISPUTE RESOLUTION",
    "ANTI-BRIBERY",
    "RECORDS",
    "PUBLICITY",
    "SEVERABILITY",
)
SUBJECTS = (
    "Each party",
    "The receiving party",
    "The {a}",
    "The {b}",
    "Any subcontractor engaged under this Agreement",
    "The parties",
)
VERBS = (
    "shall use reasonable efforts to",
    "shall not, without prior written consent,",
    "may, at its own cost,",
    "shall promptly",
    "undertakes to",
    "agrees to",
)
OBJECTS = (
    "protect the other party's confidential information with at least the care it uses for its own",
    "maintain complete and accurate records of all activities performed under this Agreement",
    "notify the other party of any event likely to delay performance",
    "comply with all laws and regulations applicable to its obligations",
    "keep in force insurance cover appropriate to the risks it bears",
    "return or destroy all materials of the other party upon request",
    "cooperate in good faith to resolve any dispute before starting proceedings",
    "ensure that its personnel are suitably qualified and experienced",
    "make available such information as the other party reasonably requests",
    "refrain from any public announcement about this Agreement",
)
DECOYS = (
    "Notices are deemed received {w} ({n}) days after posting.",
    "Either party may terminate for material breach that is not remedied within {w} ({n}) "
    "days of written notice.",
    "Records shall be kept for at least {w} ({n}) months after the end of this Agreement.",
    "An audit requires not less than {w} ({n}) days' prior notice.",
)


@dataclass
class ContractSpec:
    truth: Contract
    title: str
    names: tuple[str, str]
    roles: tuple[str, str]
    forms: tuple[str, str]
    law_text: str
    date_style: str
    seed: int
    wording: dict[str, int]
    hard: list[str]
    original_term: int  # the term before the amendment, for "amended-term"


def contract_spec(seed: int) -> ContractSpec:
    r = random.Random(f"contract-{seed}")
    title, roles = r.choice(KINDS)
    first = r.choice(VENDORS)
    second = r.choice([c for c in CUSTOMERS if c.name != first.name])
    effective = datetime.date(r.choice((2024, 2025, 2026)), r.randint(1, 12), r.randint(1, 28))
    term = r.choice(TERM_MONTHS)
    auto = r.random() < 0.65
    notice = r.choice(NOTICE_DAYS) if auto else None
    pay_days = r.choice(PAY_DAYS)
    law = r.choice(LAWS)
    hard = [r.choice(HARD_CASES)] if r.random() < 0.2 else []
    original_term = term
    if "amended-term" in hard:
        term = original_term + 12
    if "term-in-words" in hard:
        term = 12 * r.randint(1, 5)
    truth = Contract(
        parties=[Party(name=first.name, role=roles[0]), Party(name=second.name, role=roles[1])],
        effective_date=effective,
        term_months=term,
        renewal=Renewal(auto_renew=auto, notice_days=notice),
        governing_law=law.removeprefix("the "),
        payment_terms=f"Net {pay_days}",
    )
    return ContractSpec(
        truth=truth,
        title=title,
        names=(first.name, second.name),
        roles=roles,
        forms=(FORMS[first.country], FORMS[second.country]),
        law_text=law,
        date_style=r.choice(("long_us", "long_eu", "iso")),
        seed=seed,
        wording={k: r.randint(0, 2) for k in ("preamble", "term", "renewal", "payment", "law")},
        hard=hard,
        original_term=original_term,
    )


def _clauses(spec: ContractSpec) -> dict[str, list[str]]:
    """The clauses that carry the truth, as paragraphs."""
    t = spec.truth
    a, b = spec.names
    ra, rb = spec.roles
    fa, fb = spec.forms
    w = spec.wording
    date = format_date(t.effective_date, spec.date_style) if t.effective_date else ""
    preamble = (
        f'This {spec.title.title()} (the "Agreement") is entered into as of {date} (the '
        f'"Effective Date") by and between {a}, {fa} ("{ra}"), and {b}, {fb} ("{rb}").',
        f"This Agreement is made between {a}, {fa} (the {ra}), and {b}, {fb} (the {rb}). "
        f"It takes effect on {date} (the Effective Date).",
        f"THIS AGREEMENT is dated {date} and is made between: (1) {a}, {fa} "
        f'("{ra}"); and (2) {b}, {fb} ("{rb}"), each a "party".',
    )[w["preamble"]]
    if "parties-block" in spec.hard:
        preamble = (
            f"THIS AGREEMENT is dated {date}. BETWEEN: (1) {a.upper()}, {fa} "
            f"(the {ra.upper()}); AND (2) {b.upper()}, {fb} (the {rb.upper()})."
        )
    months = spec.original_term if "amended-term" in spec.hard else t.term_months or 0
    years, rest = divmod(months, 12)
    term = (
        f"This Agreement commences on the Effective Date and continues for an initial term "
        f"of {in_words(months)} ({months}) months.",
        f"The initial term of this Agreement is {months} months from the Effective Date.",
        f"This Agreement shall remain in force for a period of {in_words(years)} ({years}) "
        f"year{'s' if years != 1 else ''} from the Effective Date."
        if years and not rest
        else f"This Agreement shall remain in force for {months} months from the Effective Date.",
    )[w["term"]]
    if "term-in-words" in spec.hard:
        term = (
            "This Agreement begins on the Effective Date and continues for "
            f"{in_words(years)} year{'s' if years != 1 else ''}."
        )
    notice = t.renewal.notice_days or 0
    renewal = (
        (
            "Thereafter this Agreement renews automatically for successive periods of twelve "
            "(12) months unless either party gives written notice of non-renewal at least "
            f"{in_words(notice)} ({notice}) days before the end of the then-current term.",
            "At the end of the initial term, this Agreement will automatically renew for "
            f"further one-year terms, unless terminated by either party on {notice} days' "
            "written notice prior to the renewal date.",
            "This Agreement shall be renewed automatically for consecutive renewal terms of "
            "one year each, unless a party notifies the other in writing of its intention not "
            f"to renew no later than {notice} days before expiry.",
        )[w["renewal"]]
        if t.renewal.auto_renew
        else (
            "This Agreement does not renew automatically; any extension requires a written "
            "amendment signed by both parties.",
            "This Agreement shall expire at the end of the initial term and shall not renew "
            "automatically.",
            "There is no automatic renewal. The parties may agree in writing to extend the term.",
        )[w["renewal"]]
    )
    days = int((t.payment_terms or "Net 0").split()[-1])
    payment = (
        f"The {rb} shall pay each undisputed invoice within {in_words(days)} ({days}) days of "
        "the invoice date.",
        f"Payment terms are net {days} days from receipt of a valid invoice.",
        f"Invoices are payable {days} days net. Late payments bear interest at 1% per month.",
    )[w["payment"]]
    law = (
        "This Agreement is governed by and construed in accordance with the laws of "
        f"{spec.law_text}.",
        f"This Agreement shall be governed by the laws of {spec.law_text}, without regard to "
        "its conflict of laws rules.",
        f"The laws of {spec.law_text} govern this Agreement and any dispute arising from it.",
    )[w["law"]]
    return {
        "preamble": [preamble],
        "TERM": [term],
        "RENEWAL": [renewal],
        "FEES AND PAYMENT": [
            f"In consideration of the services the {rb} shall pay the fees set out in Schedule 1.",
            payment,
        ],
        "GOVERNING LAW": [law],
        "AMENDMENT": [
            f"Notwithstanding clause 1, the parties agree that the initial term is extended "
            f"to {t.term_months} months."
        ],
    }


def _filler(spec: ContractSpec) -> Iterator[tuple[str, list[str]]]:
    r = random.Random(f"contract-filler-{spec.seed}")
    n = 0
    while True:
        topic = FILLER_TOPICS[n % len(FILLER_TOPICS)]
        n += 1
        paragraphs = []
        for _ in range(r.randint(2, 5)):
            sentences = []
            for _ in range(r.randint(2, 4)):
                subject = r.choice(SUBJECTS).format(a=spec.roles[0], b=spec.roles[1])
                sentences.append(f"{subject} {r.choice(VERBS)} {r.choice(OBJECTS)}.")
            if r.random() < 0.15:
                k = r.choice((5, 10, 14, 30, 60, 90))
                sentences.append(r.choice(DECOYS).format(w=in_words(k), n=k))
            paragraphs.append(" ".join(sentences))
        yield topic, paragraphs


WRAP = 96  # characters per line of 10-point Helvetica across an A4 text block
LEADING = 13.0


def draw_contract(spec: ContractSpec, pages: int) -> bytes:
    """The contract as a PDF of exactly `pages` pages."""
    from reportlab.lib.pagesizes import A4  # type: ignore[import-untyped]
    from reportlab.pdfgen.canvas import Canvas  # type: ignore[import-untyped]

    if pages < 1:
        raise ValueError("a contract has at least one page")
    width, height = A4
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4, invariant=True)
    canvas.setTitle(spec.title.title())
    clauses = _clauses(spec)
    # When each clause may appear: term and renewal early, payment mid-way, law at the end.
    due = [
        ("TERM", 1),
        ("RENEWAL", 1),
        ("FEES AND PAYMENT", max(1, round(pages * 0.4))),
        ("GOVERNING LAW", pages),
    ]
    if "amended-term" in spec.hard:
        due.insert(3, ("AMENDMENT", max(1, round(pages * 0.7))))
    signature = [
        "IN WITNESS WHEREOF the parties have executed this Agreement.",
        f"For {spec.names[0]}: ____________________  Name: ____________  Title: ____________",
        f"For {spec.names[1]}: ____________________  Name: ____________  Title: ____________",
    ]
    state: dict[str, Any] = {"page": 1, "y": height - 60.0, "section": 0}
    bottom = 70.0
    text = canvas.beginText()

    def footer_and_break() -> None:
        canvas.drawText(text)
        canvas.setFont("Helvetica", 8)
        canvas.drawCentredString(width / 2, 40, f"Page {state['page']} of {pages}")
        canvas.showPage()
        state["page"] += 1
        state["y"] = height - 60.0

    def put(lines: list[tuple[str, bool]]) -> None:
        nonlocal text
        for line, bold in lines:
            if state["y"] < bottom:
                footer_and_break()
                text = canvas.beginText()
            text.setTextOrigin(50, state["y"])
            text.setFont("Helvetica-Bold" if bold else "Helvetica", 10)
            text.textOut(line)
            state["y"] -= LEADING

    def section(heading: str, paragraphs: list[str]) -> list[tuple[str, bool]]:
        state["section"] += 1
        n = state["section"]
        lines = [(f"{n}. {heading}", True)]
        for i, para in enumerate(paragraphs, 1):
            wrapped = textwrap.wrap(f"{n}.{i} {para}", WRAP)
            lines.extend((line, False) for line in wrapped)
        lines.append(("", False))
        return lines

    def room() -> float:
        return float((state["y"] - bottom) / LEADING)

    canvas.setFont("Helvetica-Bold", 14)
    canvas.drawCentredString(width / 2, state["y"], spec.title)
    state["y"] -= 30
    put([(line, False) for line in textwrap.wrap(clauses["preamble"][0], WRAP)] + [("", False)])
    filler = _filler(spec)
    while True:
        last = state["page"] == pages
        if due and due[0][1] <= state["page"]:
            name = due[0][0]
            lines = section(name, clauses[name])
            if len(lines) > room() and not last:
                footer_and_break()
                text = canvas.beginText()
                continue
            due.pop(0)
            put(lines)
            continue
        if last:
            break
        topic, paragraphs = next(filler)
        lines = section(topic, paragraphs)
        # On the page before the last, leave the filler out if it would spill onto the last
        # page and crowd out the clauses and signatures that must be there.
        if state["page"] == pages - 1 and len(lines) > room():
            state["section"] -= 1
            footer_and_break()
            text = canvas.beginText()
            continue
        put(lines)
    put([("", False)] + [(line, False) for line in signature])
    canvas.drawText(text)
    canvas.setFont("Helvetica", 8)
    canvas.drawCentredString(width / 2, 40, f"Page {state['page']} of {pages}")
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()
