"""Contracts read by rules: the sentences contracts use for their key facts.

The text is read as one stream (contract_text: running headers, footers and page numbers
removed first), since a clause can wrap over lines and pages. Each fact has its module:

    contract_parties   the parties and their defined terms (preamble, party blocks)
    contract_terms     effective date, term, renewal and its notice
    contract_clauses   governing law, payment terms

Each fact has a few phrasings; a fact found by the phrasing made for it is sure, one found
by a looser phrasing less so, one not found scores how sure it is that the contract says
nothing (a contract with no renewal clause does not renew by itself, but the reader may
have missed one). Decoys are expected: "within ten (10) days" in a notices clause is not
the renewal notice, "for five (5) years thereafter" in a confidentiality clause is not the
term, so numbers are only taken from the sentence that states the fact.
"""

from __future__ import annotations

from conveyor.agents.contract_clauses import governing_law, payment_terms
from conveyor.agents.contract_parties import read_parties
from conveyor.agents.contract_terms import effective_date, renewal, term_months
from conveyor.agents.contract_text import prepare
from conveyor.documents.types import Contract, Renewal


def read_contract(text: str) -> tuple[Contract, dict[str, float]]:
    """The contract in `text` and each field's confidence."""
    prepared = prepare(text)
    fields: dict[str, float] = {}
    parties, fields["parties"] = read_parties(prepared)
    effective, fields["effective_date"] = effective_date(prepared)
    term, fields["term_months"] = term_months(prepared, effective)
    auto, notice, fields["renewal.auto_renew"], fields["renewal.notice_days"] = renewal(prepared)
    law, fields["governing_law"] = governing_law(prepared)
    payment, fields["payment_terms"] = payment_terms(prepared)
    contract = Contract(
        parties=parties,
        effective_date=effective,
        term_months=term,
        renewal=Renewal(auto_renew=auto, notice_days=notice),
        governing_law=law,
        payment_terms=payment,
    )
    return contract, fields
