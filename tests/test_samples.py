"""The sample generator: deterministic, varied, true to its own truth, and quick."""

from __future__ import annotations

from decimal import Decimal

from conveyor.documents.text import extract_text
from conveyor.documents.types import Contract, Invoice, cross_checks
from conveyor.testing.samples import make_contract, make_invoice


def test_the_same_seed_gives_the_same_bytes_and_truth() -> None:
    for seed in (0, 7):
        a, b = make_invoice(seed), make_invoice(seed)
        assert a.pdf == b.pdf and a.truth == b.truth and a.name == b.name
    assert make_contract(3, pages=2).pdf == make_contract(3, pages=2).pdf
    assert make_invoice(1).pdf != make_invoice(2).pdf


def test_invoices_are_consistent_and_varied() -> None:
    samples = [make_invoice(seed) for seed in range(60)]
    invoices = [s.truth for s in samples]
    assert all(isinstance(i, Invoice) for i in invoices)
    for sample in samples:
        assert isinstance(sample.truth, Invoice)
        assert sample.kind == "invoice"
        assert cross_checks("invoice", sample.truth) == [], sample.name
    typed = [i for i in invoices if isinstance(i, Invoice)]
    assert len({i.vendor.name for i in typed}) >= 8
    assert len({i.currency for i in typed}) >= 6
    counts = {len(i.line_items) for i in typed}
    assert min(counts) == 1 and max(counts) >= 20
    assert any(i.tax is None for i in typed) and any(i.due_date is None for i in typed)
    assert sum(1 for s in samples if s.hard) >= 5  # hard cases exist
    assert any(s.hard for s in samples) and not all(s.hard for s in samples)


def test_the_truth_is_what_the_pdf_says() -> None:
    for seed in range(10):
        sample = make_invoice(seed)
        invoice = sample.truth
        assert isinstance(invoice, Invoice)
        text = extract_text(sample.pdf).text
        assert invoice.number and invoice.number in text
        assert invoice.vendor.name and invoice.vendor.name in text
        assert invoice.customer.name and invoice.customer.name in text
        for item in invoice.line_items:
            assert item.description and item.description in text


def test_formats_vary_with_the_vendor() -> None:
    texts = [extract_text(make_invoice(seed).pdf).text for seed in range(40)]
    joined = "\n".join(texts)
    assert "€" in joined and "£" in joined and "CHF" in joined
    assert any(line.count(",") and line.rstrip().endswith("€") for line in joined.splitlines())
    # both 1,234.56 and 1.234,56 appear
    assert any(_looks_like(line, ",", ".") for line in joined.splitlines())
    assert any(_looks_like(line, ".", ",") for line in joined.splitlines())


def _looks_like(line: str, thousands: str, decimal: str) -> bool:
    import re

    t, d = re.escape(thousands), re.escape(decimal)
    return re.search(rf"\b\d{{1,3}}{t}\d{{3}}{d}\d{{2}}\b", line) is not None


def test_contracts_have_exact_page_counts_and_their_facts() -> None:
    for pages in (1, 3, 12):
        sample = make_contract(11, pages=pages)
        text = extract_text(sample.pdf)
        assert text.page_count == pages
        contract = sample.truth
        assert isinstance(contract, Contract)
        assert cross_checks("contract", contract) == []
        assert all(p.name and p.name in text.text for p in contract.parties)
        assert contract.governing_law and contract.governing_law in " ".join(text.text.split())


def test_a_long_contract_keeps_its_facts_apart() -> None:
    sample = make_contract(2, pages=200)
    text = extract_text(sample.pdf)
    assert text.page_count == 200
    where = {
        name: next(p.number for p in text.pages if heading in p.text)
        for name, heading in (
            ("term", ". TERM\n"),
            ("payment", ". FEES AND PAYMENT"),
            ("law", ". GOVERNING LAW"),
        )
    }
    assert where["term"] == 1
    assert 60 <= where["payment"] <= 100
    assert where["law"] == 200


def test_amounts_keep_their_currency_precision() -> None:
    yen = [
        s.truth for s in map(make_invoice, range(80)) if getattr(s.truth, "currency", "") == "JPY"
    ]
    assert yen, "no yen invoice in 80 seeds"
    for invoice in yen:
        assert isinstance(invoice, Invoice) and invoice.total is not None
        assert invoice.total == invoice.total.to_integral_value()
        assert invoice.total > Decimal(100)
