"""A long document fanned out into page-range children: the split and the merge."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conveyor.agents.fanout import PageRange, assemble, page_ranges, part_of, read_range
from conveyor.agents.llm import SALVAGED, chunk_text_pages, overhead_tokens
from conveyor.documents.text import DocumentText, PageText, extract_text
from conveyor.documents.types import Extraction
from conveyor.testing.samples import Sample, make_contract

CHUNK = 6000


@cache
def long_contract() -> tuple[Sample, DocumentText]:
    sample = make_contract(11, pages=200)
    return sample, extract_text(sample.pdf, name=sample.name)


def _page(number: int, text: str) -> PageText:
    return PageText(number=number, text=text, has_text_layer=bool(text), chars=len(text))


def _scan(number: int) -> PageText:
    return PageText(number=number, text="", has_text_layer=False, chars=0)


def test_the_ranges_cover_every_page_once_and_send_what_the_sequential_chunks_send() -> None:
    _, document = long_contract()
    ranges = page_ranges(document, "contract", CHUNK)
    room = CHUNK - overhead_tokens("contract")
    sequential = chunk_text_pages(document.pages, room)
    assert len(ranges) == len(sequential) > 20
    assert ranges[0].first == 1 and ranges[-1].last == 200
    assert all(b.first == a.last + 1 for a, b in itertools.pairwise(ranges))
    # Each child, chunking its own pages by the same rules, sends one request, the one
    # the sequential path sends for them: the same text, no more tokens.
    per_part = [chunk_text_pages(part_of(document, r).pages, room) for r in ranges]
    assert all(len(chunks) == 1 for chunks in per_part)
    assert [c[0] for c in per_part] == sequential


def test_a_document_of_one_chunk_is_not_split() -> None:
    document = DocumentText(pages=[_page(1, "short"), _page(2, "text")])
    assert page_ranges(document, "contract", CHUNK) == []


def test_a_page_longer_than_a_chunk_stays_in_one_range_and_scans_join_the_range_before() -> None:
    room_chars = (CHUNK - overhead_tokens("invoice")) * 4
    long = "\n".join(["x" * 70] * (room_chars // 71 * 2))  # two chunks' worth of lines
    pages = [_scan(1), _page(2, "a" * 100), _page(3, long), _scan(4), _page(5, "b" * 100)]
    document = DocumentText(pages=pages)
    ranges = page_ranges(document, "invoice", CHUNK)
    # Chunks: page 2 | page 3 (first half) | page 3 (second half) | page 5.
    assert ranges == [PageRange(1, 2), PageRange(3, 4), PageRange(5, 5)]
    numbers = [n for r in ranges for n in range(r.first, r.last + 1)]
    assert numbers == [1, 2, 3, 4, 5]  # page 3, cut in pieces, is in one range only


def test_too_small_a_chunk_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="CONVEYOR_LLM_CHUNK_TOKENS"):
        page_ranges(DocumentText(pages=[_page(1, "x")]), "contract", 300)


def test_a_child_reads_only_its_range_from_the_pdf(tmp_path: Path) -> None:
    sample, document = long_contract()
    path = tmp_path / sample.name
    path.write_bytes(sample.pdf)
    part = read_range(path, PageRange(41, 45), name=sample.name)
    assert part.page_count == 200
    assert [p.number for p in part.pages if p.has_text_layer] == [41, 42, 43, 44, 45]
    assert part.pages[40:45] == document.pages[40:45]
    assert part.scanned_pages == []  # the other pages are blank, not scans to render
    with pytest.raises(ValueError, match="past the 200 page"):
        read_range(path, PageRange(199, 201), name=sample.name)


def test_a_payload_range_is_checked() -> None:
    assert PageRange.from_json([3, 7], 10) == PageRange(3, 7)
    for bad in ([7, 3], [0, 2], [1], "1-2", [1, True], [1, 11]):
        with pytest.raises(ValueError):
            PageRange.from_json(bad, 10)


def _part(data: dict[str, Any], notes: list[str] | None = None, **fields: float) -> Extraction:
    return Extraction(
        type="contract",
        data=data,
        confidence=0.9,
        fields=fields,
        notes=notes or [],
        pages=200,
        extractor="llm:m",
    )


def test_the_merge_takes_first_values_parties_once_and_settles_by_the_whole_text() -> None:
    text = (
        'This Agreement between Alpha Ltd ("Supplier") and Beta GmbH ("Customer") is '
        "effective as of 2025-03-01. It is governed by the laws of England and Wales."
    )
    document = DocumentText(pages=[_page(1, text), _page(2, "filler"), _page(3, "more")])
    first = {
        "parties": [{"name": "Alpha Ltd", "role": None}],
        "effective_date": "2025-03-02",  # misread: the text prints the 1st
        "governing_law": None,
        "term_months": 12,
    }
    second = {
        "parties": [{"name": "ALPHA LTD", "role": "Supplier"}, {"name": "Beta GmbH"}],
        "effective_date": "2025-03-01",
        "governing_law": "England and Wales",
        "term_months": None,
    }
    extraction = assemble(
        "contract",
        document,
        [_part(first, ["read in 1 requests"]), _part(second, ["read as numbers: x"])],
        model="m",
        labels=["page 1", "pages 2-3"],
    )
    data = extraction.data
    assert [p["name"] for p in data["parties"]] == ["Alpha Ltd", "Beta GmbH"]
    assert data["parties"][0]["role"] == "Supplier"  # the role a later part gave
    # No child could settle this: each saw one value. The whole text prints one of them.
    assert data["effective_date"] == "2025-03-01"
    assert data["governing_law"] == "England and Wales" and data["term_months"] == 12
    assert extraction.fields["effective_date"] == 0.95
    assert "pages 2-3: read as numbers: x" in extraction.notes
    assert not any(n.startswith("page 1: read in") for n in extraction.notes)
    assert "read in 2 parts, one child task each" in extraction.notes
    assert extraction.pages == 3 and extraction.extractor == "llm:m"


def test_the_merge_keeps_what_a_child_could_not_validate_and_grounds_the_rest() -> None:
    document = DocumentText(pages=[_page(1, "Alpha Ltd and Beta GmbH agree."), _page(2, "x")])
    one = {"parties": [{"name": "Alpha Ltd"}], "term_months": None, "governing_law": "Mars"}
    two = {"parties": [{"name": "Beta GmbH"}], "term_months": None}
    extraction = assemble(
        "contract", document, [_part(one, term_months=SALVAGED), _part(two)], model="m"
    )
    assert extraction.fields["term_months"] == SALVAGED
    assert extraction.fields["governing_law"] == 0.4  # Mars is printed nowhere
    assert extraction.confidence <= 0.85
    assert any("not printed in the document" in n for n in extraction.notes)
