"""A long document fanned out into page-range children: the split, the merge, and the
whole path through real worker processes against the simulated endpoint."""

from __future__ import annotations

import dataclasses
import itertools
import json
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, TaskStatus
from conveyor.agents.documents import declare_document_agents
from conveyor.agents.fanout import (
    PageRange,
    assemble,
    document_evidence,
    page_ranges,
    part_of,
    read_range,
)
from conveyor.agents.llm_budget import overhead_tokens
from conveyor.agents.llm_merge import SALVAGED
from conveyor.agents.llm_pages import chunk_text_pages
from conveyor.documents.submit import submit_files
from conveyor.documents.text import DocumentText, PageText, extract_text
from conveyor.documents.types import Extraction
from conveyor.settings import Settings
from conveyor.testing.answers import TruthResponder
from conveyor.testing.protocol import ChatCompletionRequest
from conveyor.testing.samples import Sample, make_contract
from conveyor.testing.simulator import Simulator
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import WorkerProcess
from tests.test_worker import Running

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


def test_the_merge_grounds_against_the_evidence_it_is_given() -> None:
    """fan_in builds the document's evidence once and hands it to the merge (and, in hybrid
    mode, to the merge with the rules): the merge then grounds by it, not by a second
    reading of the text; without it, the merge builds the same evidence itself."""
    document = DocumentText(pages=[_page(1, "Alpha Ltd and Beta GmbH agree."), _page(2, "x")])
    data = {"parties": [{"name": "Alpha Ltd"}], "governing_law": "Mars"}
    built = assemble("contract", document, [_part(data)], model="m")
    given = assemble(
        "contract",
        document,
        [_part(data)],
        model="m",
        evidence=document_evidence(document),
    )
    assert given == built
    assert built.fields["governing_law"] == 0.4, "Mars is printed nowhere"
    mars = DocumentText(pages=[_page(1, "Alpha Ltd, under the law of Mars.")])
    other = assemble(
        "contract", document, [_part(data)], model="m", evidence=document_evidence(mars)
    )
    assert other.fields["governing_law"] > 0.4, "grounded by the evidence given"
    assert document_evidence(document, images_read=True) is None


# ------------------------------------------------------------- through worker processes

PRICES = {"sim-priced": {"input_per_mtok": 0.25, "output_per_mtok": 2.0}}
WINDOW = 10.0  # the agent's and the endpoint's rolling window, seconds
TPM = 30_000  # per window: a 40-page contract (about 42,000 tokens) needs two


def _model_env(url: str) -> dict[str, str]:
    return {
        "CONVEYOR_LLM_MODEL": "sim-priced",
        "CONVEYOR_LLM_BASE_URL": f"{url}/v1",
        "CONVEYOR_LLM_API_KEY": "simulated",
        "CONVEYOR_LLM_MODE": "llm",  # the model reads it all (hybrid would trust the rules)
        "CONVEYOR_LLM_CHUNK_TOKENS": str(CHUNK),
        "CONVEYOR_LLM_PRICES": json.dumps(PRICES),
    }


async def test_a_long_contract_is_read_by_children_on_two_workers_within_the_budget(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    """Two `conveyor worker` processes, an endpoint whose token limit the agent declares:
    the contract becomes one child per page range, the children run on both workers at
    once and are paced by the budget (no 429), the parent merges them into the truth, and
    its cost is its children's."""
    contract = make_contract(3, pages=40)
    document = extract_text(contract.pdf)
    ranges = page_ranges(document, "contract", CHUNK)
    assert len(ranges) >= 6
    truth = {contract.name.removesuffix(".pdf"): {"type": "contract", "data": _truth(contract)}}
    simulator = Simulator(
        responder=TruthResponder(truth),
        tpm=TPM,
        window_seconds=WINDOW,
        base_latency=2.0,  # long enough for the attempts of two workers to overlap
        per_token_latency=0,
    )
    limits = {"max_tpm": TPM, "window_seconds": WINDOW}
    async with simulator.serving() as url:
        env = _model_env(url)
        app = App(settings=_with_model(settings, url))
        declare_document_agents(app, names={"contract": "contract"}, limits=limits)
        path = tmp_path / contract.name
        path.write_bytes(contract.pdf)
        workers = [
            WorkerProcess(
                database_url,
                app="tests.fanout_app:app",
                concurrency=2,  # fewer slots than children that fit: both workers claim
                env={**env, "FANOUT_LIMITS": json.dumps(limits)},
                log_path=tmp_path / f"worker-{i}.log",
            )
            for i in range(2)
        ]
        try:
            (submitted,) = await submit_files(app, [path], agent="contract")
            await wait_for(lambda: _ended(app, submitted.task_id), timeout=300, what="the contract")
            task = await app.get_task_async(submitted.task_id)
            kids = await _children(database_url, submitted.task_id)
        finally:
            for worker in workers:
                worker.close()
            await app.aclose()
    assert task.status == TaskStatus.COMPLETED, (task.error, workers[0].output()[-3000:])
    result = task.result
    assert result["data"] == _truth(contract)
    assert result["extractor"] == "llm:sim-priced" and result["pages"] == 40
    assert f"read in {len(ranges)} parts, one child task each" in result["notes"]

    # One child per range, each one request, on both workers, several at once.
    assert [k["child_key"] for k in kids] == [f"pages-{r.first}-{r.last}" for r in ranges]
    assert all(k["status"] == "completed" for k in kids)
    log = [e for e in simulator.log() if e.status != 400]  # a refused request form is free
    assert [e.status for e in log] == [200] * len(ranges), "one request per child, no 429"
    assert simulator.stats().within_limits
    assert len({k["worker_id"] for k in kids}) == 2
    assert any(
        a["worker_id"] != b["worker_id"]
        and a["started_at"] < b["finished_at"]
        and b["started_at"] < a["finished_at"]
        for a, b in itertools.combinations(kids, 2)
    ), "two workers read parts at the same time"

    # The parent asked nothing itself: its attempts are the spawn and the merge.
    assert [a.status for a in task.attempt_history] == ["spawned", "succeeded"]
    assert all(not a.input_tokens for a in task.attempt_history)
    # Its cost is the sum of its children's, which is what the endpoint counted.
    family = task.children
    assert family is not None and family.total == family.done == len(ranges)
    assert family.input_tokens == sum(e.prompt_tokens for e in log)
    assert family.output_tokens == sum(e.completion_tokens for e in log)
    children_cost = sum(k["llm_cost_usd"] for k in kids)
    assert family.llm_cost_usd == pytest.approx(children_cost, abs=1e-9)
    expected = (family.input_tokens * 0.25 + family.output_tokens * 2.0) / 1e6
    assert family.llm_cost_usd == pytest.approx(expected, abs=1e-6)


def _truth(sample: Sample) -> dict[str, Any]:
    return sample.truth.model_dump(mode="json")


def _with_model(settings: Settings, url: str) -> Settings:
    return dataclasses.replace(
        settings,
        llm_model="sim-priced",
        llm_base_url=f"{url}/v1",
        llm_api_key="simulated",
        llm_mode="llm",
        llm_chunk_tokens=CHUNK,
        llm_prices=json.dumps(PRICES),
    )


async def _ended(app: App, task_id: int) -> bool:
    status = (await app.get_task_async(task_id)).status
    return status in {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}


async def _children(database_url: str, parent: int) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=dict_row) as conn:
        cursor = await conn.execute(
            """
            SELECT t.child_key, t.status, a.worker_id, a.started_at, a.finished_at,
                   coalesce(a.llm_cost_usd, 0) AS llm_cost_usd
            FROM tasks t JOIN task_attempts a ON a.task_id = t.id AND a.status = 'succeeded'
            WHERE t.parent_id = %s
            ORDER BY t.id
            """,
            (parent,),
        )
        return [
            {**row, "llm_cost_usd": float(row["llm_cost_usd"])} for row in await cursor.fetchall()
        ]


# ------------------------------------------------------------------- in this process


class Breaking:
    """The truth, except for requests about the pages in `broken`: not JSON."""

    def __init__(self, truth: TruthResponder) -> None:
        self.truth = truth
        self.broken: str | None = None
        self.asked: list[str] = []  # the part each request was about

    def __call__(self, request: ChatCompletionRequest) -> str:
        text = str(request.messages[-1].content)
        label = text.split("This part: ", 1)[-1].split(".", 1)[0]
        self.asked.append(label)
        if self.broken is not None and label == self.broken:
            return "Sure! Here is what I found."
        return self.truth(request)


async def test_a_failed_part_fails_the_parent_and_a_retry_reads_only_that_part(
    settings: Settings, tmp_path: Path
) -> None:
    contract = make_contract(4, pages=12)
    chunk = 3000
    ranges = page_ranges(extract_text(contract.pdf), "contract", chunk)
    assert len(ranges) >= 4
    truth = {contract.name.removesuffix(".pdf"): {"type": "contract", "data": _truth(contract)}}
    responder = Breaking(TruthResponder(truth))
    responder.broken = ranges[1].label
    simulator = Simulator(responder=responder, base_latency=0, per_token_latency=0)
    async with simulator.serving() as url:
        app = App(settings=dataclasses.replace(_with_model(settings, url), llm_chunk_tokens=chunk))
        declare_document_agents(app, names={"contract": "contract"})
        path = tmp_path / contract.name
        path.write_bytes(contract.pdf)
        try:
            async with Running(Worker(app, concurrency=4)):
                (submitted,) = await submit_files(app, [path], agent="contract")
                await wait_for(lambda: _ended(app, submitted.task_id), timeout=60, what="a fail")
                failed = await app.get_task_async(submitted.task_id)
                responder.broken = None
                await app.retry_async(submitted.task_id)
                await wait_for(lambda: _ended(app, submitted.task_id), timeout=60, what="retry")
                task = await app.get_task_async(submitted.task_id)
        finally:
            await app.aclose()
    assert failed.status == TaskStatus.FAILED
    assert failed.error is not None and f"pages-{ranges[1].first}-{ranges[1].last}" in failed.error
    assert task.status == TaskStatus.COMPLETED, task.error
    assert task.result["data"] == _truth(contract)
    # The parts that had succeeded were not read again; the broken one was, until it gave.
    asked = responder.asked
    assert all(asked.count(r.label) == 1 for r in ranges if r != ranges[1]), asked
    assert asked.count(ranges[1].label) == 3 + 1  # its three attempts, then the retry's


async def test_hybrid_spawns_nothing_when_the_rules_vouch_for_the_document(
    settings: Settings, tmp_path: Path
) -> None:
    contract = make_contract(5, pages=40)
    simulator = Simulator(base_latency=0, per_token_latency=0)
    async with simulator.serving() as url:
        app = App(settings=dataclasses.replace(_with_model(settings, url), llm_mode="hybrid"))
        declare_document_agents(app, names={"contract": "contract"})
        path = tmp_path / contract.name
        path.write_bytes(contract.pdf)
        try:
            async with Running(Worker(app, concurrency=2)):
                (submitted,) = await submit_files(app, [path], agent="contract")
                await wait_for(lambda: _ended(app, submitted.task_id), timeout=60, what="it")
                task = await app.get_task_async(submitted.task_id)
        finally:
            await app.aclose()
    assert task.status == TaskStatus.COMPLETED, task.error
    assert task.result["extractor"] == "hybrid:sim-priced"
    assert any("the model was not asked" in n for n in task.result["notes"])
    assert simulator.log() == [] and task.children is not None and task.children.total == 0
    assert task.estimated_tokens == 0  # a long document's parent reserves nothing itself
