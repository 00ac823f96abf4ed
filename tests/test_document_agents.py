"""The document agents end to end: stored PDFs in, Extractions out, through real workers."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from conveyor import App, TaskStatus
from conveyor.agents.documents import declare_document_agents
from conveyor.agents.llm_budget import estimate_tokens
from conveyor.documents import ocr
from conveyor.documents.storage import DocumentStore
from conveyor.documents.submit import submit_files
from conveyor.settings import Settings
from conveyor.testing.samples import make_contract, make_invoice, truncated
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import WorkerProcess
from tests.test_worker import Running


def _file(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _corrupt_in_store(settings: Settings, data: bytes) -> str:
    """Bytes put straight into the store, as a disk fault would leave them: the upload's
    checks (which refuse unreadable PDFs) never saw them."""
    sha256 = hashlib.sha256(data).hexdigest()
    path = DocumentStore.for_settings(settings).path_of(sha256)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha256


async def _finished(app: App, ids: list[int]) -> bool:
    done = {TaskStatus.COMPLETED, TaskStatus.FAILED}
    return all([(await app.get_task_async(i)).status in done for i in ids])


async def test_the_document_agents_in_a_worker_process(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    """`conveyor worker --app conveyor.demo:app`, offline: invoices and contracts come out
    as Extractions; a corrupt PDF and a missing file fail at once with a clear error while
    the worker goes on with the next document."""
    app = App(settings=settings)
    declare_document_agents(app)
    invoice, contract, classified = make_invoice(1), make_contract(2, pages=3), make_invoice(2)
    files = tmp_path / "in"
    files.mkdir()
    try:
        (inv,) = await submit_files(app, [_file(files, invoice.name, invoice.pdf)], agent="invoice")
        (con,) = await submit_files(
            app, [_file(files, contract.name, contract.pdf)], agent="contract"
        )
        (doc,) = await submit_files(
            app, [_file(files, classified.name, classified.pdf)], agent="document"
        )
        broken = _corrupt_in_store(settings, truncated(make_invoice(3).pdf))
        corrupt = await app.enqueue_async("invoice", {"sha256": broken, "name": "broken.pdf"})
        missing = await app.enqueue_async("invoice", {"sha256": "ab" * 32, "name": "gone.pdf"})
        after = await app.enqueue_async(
            "invoice", {"sha256": inv.document.sha256, "name": "again.pdf"}
        )
        ids = [inv.task_id, con.task_id, doc.task_id, corrupt, missing, after]
        worker = WorkerProcess(
            database_url,
            app="conveyor.demo:app",
            concurrency=2,
            env={"CONVEYOR_HOME": str(settings.home)},
            log_path=tmp_path / "worker.log",
        )
        try:
            await wait_for(lambda: _finished(app, ids), timeout=60, what="the documents")
            assert worker.proc.poll() is None, "the worker lives on"
        finally:
            worker.close()

        result = (await app.get_task_async(inv.task_id)).result
        assert result["type"] == "invoice" and result["extractor"] == "offline"
        assert result["pages"] == 1 and 0 <= result["confidence"] <= 1
        assert result["data"]["number"] == invoice.truth.number  # type: ignore[attr-defined]
        assert (await app.get_task_async(after)).status == TaskStatus.COMPLETED

        result = (await app.get_task_async(con.task_id)).result
        assert result["type"] == "contract" and result["pages"] == 3
        truth_names = {p.name for p in contract.truth.parties}  # type: ignore[attr-defined]
        assert {p["name"] for p in result["data"]["parties"]} == truth_names

        result = (await app.get_task_async(doc.task_id)).result
        assert result["type"] == "invoice"
        assert result["notes"][0].startswith("classified as invoice")

        for task_id, message in (
            (corrupt, "'broken.pdf' cannot be opened"),
            (missing, "is not in the document store"),
        ):
            task = await app.get_task_async(task_id)
            assert task.status == TaskStatus.FAILED
            assert task.attempts == 1, "a PDF that cannot be read is not retried"
            assert task.error is not None and message in task.error
    finally:
        await app.aclose()


async def test_a_payload_without_a_document_fails_clearly(settings: Settings) -> None:
    app = App(settings=settings)
    declare_document_agents(app, names={"invoice": "invoice"})
    try:
        bad = await app.enqueue_async("invoice", {"document": "x.pdf"})
        not_hex = await app.enqueue_async("invoice", {"sha256": "../../etc/passwd"})
        async with Running(Worker(app, concurrency=2)):
            await wait_for(lambda: _finished(app, [bad, not_hex]), what="failures")
        for task_id, message in ((bad, "needs a 'sha256'"), (not_hex, "is not a sha256")):
            task = await app.get_task_async(task_id)
            assert task.status == TaskStatus.FAILED and task.attempts == 1
            assert task.error is not None and message in task.error
    finally:
        await app.aclose()


def test_token_estimates_grow_with_the_document_and_are_zero_offline(
    settings: Settings,
) -> None:
    one = estimate_tokens({"pages": 1}, doc_type="contract", chunk_tokens=6000)
    many = estimate_tokens({"pages": 200}, doc_type="contract", chunk_tokens=6000)
    assert 0 < one < many
    assert many >= 200 * 800  # at least the pages' text
    by_text = estimate_tokens({"pages": 200, "chars": 4000}, doc_type="invoice", chunk_tokens=6000)
    assert by_text < one + 2000  # a short text is a small task, whatever its page count

    app = App(settings=settings)
    declare_document_agents(app)
    assert app.agents["invoice"].estimate_tokens is not None
    assert app.agents["invoice"].estimate_tokens({"pages": 3}) == 0  # offline: no tokens
    app.settings = dataclasses.replace(settings, llm_model="gpt-4o-mini")
    assert app.agents["contract"].estimate_tokens({"pages": 3}) > 0  # type: ignore[misc]


async def test_an_uploaded_invoice_is_estimated_from_its_text_and_item_rows(
    settings: Settings, tmp_path: Path
) -> None:
    """An upload's payload carries its text's length and item rows, so admission reserves
    the estimate measured against a real model (docs/benchmarks.md); a scan carries
    neither and is estimated from its page count."""
    from conveyor.documents.amounts import item_rows
    from conveyor.documents.text import extract_text
    from conveyor.testing.samples import scanned

    invoice = make_invoice(6)  # 3 line items
    app = App(settings=dataclasses.replace(settings, llm_model="gpt-4o-mini"))
    declare_document_agents(app)
    try:
        (digital,) = await submit_files(
            app, [_file(tmp_path, "a.pdf", invoice.pdf)], agent="invoice"
        )
        (scan,) = await submit_files(
            app, [_file(tmp_path, "b.pdf", scanned(invoice.pdf))], agent="invoice"
        )
        read = await app.get_task_async(digital.task_id)
        seen = await app.get_task_async(scan.task_id)
    finally:
        await app.aclose()
    text = extract_text(invoice.pdf).text
    assert read.payload["chars"] == len(text)
    assert read.payload["item_rows"] == item_rows(text) == 3
    chunk = app.settings.llm_chunk_tokens
    assert read.estimated_tokens == estimate_tokens(
        read.payload, doc_type="invoice", chunk_tokens=chunk
    )
    assert "chars" not in seen.payload and "item_rows" not in seen.payload
    assert seen.estimated_tokens == estimate_tokens(
        {"pages": 1}, doc_type="invoice", chunk_tokens=chunk
    )


async def test_a_picture_is_read_by_a_vision_model_and_refused_without_one(
    settings: Settings, tmp_path: Path
) -> None:
    import base64
    import json

    from conveyor.agents.llm_pages import render_pages
    from conveyor.testing.answers import TruthResponder
    from conveyor.testing.protocol import ChatCompletionRequest, ImagePart
    from conveyor.testing.simulator import Simulator

    invoice = make_invoice(5)
    pdf = _file(tmp_path, "scan.pdf", invoice.pdf)
    (url,) = render_pages(pdf, [1])
    png = _file(tmp_path, "invoice-0005.png", base64.b64decode(url.split(",", 1)[1]))
    truth = TruthResponder({"invoice-0005": invoice.truth.model_dump(mode="json")})
    seen: list[ChatCompletionRequest] = []

    def model(request: ChatCompletionRequest) -> str:
        seen.append(request)
        fmt = request.response_format
        if fmt and fmt.json_schema and fmt.json_schema["name"] == "document_type":
            return json.dumps({"type": "invoice"})
        return truth(request)

    simulator = Simulator(responder=model, base_latency=0)
    async with simulator.serving() as base:
        vision = dataclasses.replace(
            settings, llm_model="sim-vision", llm_base_url=f"{base}/v1", llm_vision=True
        )
        app = App(settings=vision)
        declare_document_agents(app)
        try:
            (read,) = await submit_files(app, [png], agent="document")
            async with Running(Worker(app, concurrency=1)):
                await wait_for(lambda: _finished(app, [read.task_id]), what="the picture")
            by_vision = len(seen)
            app.settings = dataclasses.replace(vision, llm_vision=False)
            (refused,) = await submit_files(app, [png], agent="invoice")
            async with Running(Worker(app, concurrency=1)):
                await wait_for(
                    lambda: _finished(app, [refused.task_id]), what="the refusal", timeout=120
                )  # OCR of a page: seconds alone, far more on a busy machine
            done = await app.get_task_async(read.task_id)
            failed = await app.get_task_async(refused.task_id)
        finally:
            await app.aclose()
    assert done.status == TaskStatus.COMPLETED, done.error
    assert done.result["type"] == "invoice"
    assert done.result["notes"][0] == "classified as invoice by the model"
    assert done.result["data"]["number"] == invoice.truth.number  # type: ignore[attr-defined]
    assert all(
        any(isinstance(p, ImagePart) for p in r.messages[-1].content or [])
        for r in seen[:by_vision]
    ), "every request carries the picture"
    if ocr.available():  # no vision: the picture is read by OCR, its text sent instead
        assert failed.status == TaskStatus.COMPLETED, failed.error
        assert any("read by OCR" in note for note in failed.result["notes"])
        return
    assert failed.status == TaskStatus.FAILED and failed.attempts == 1
    assert failed.error is not None and "is a picture (image/png)" in failed.error


def test_up_refuses_a_model_it_cannot_call_before_starting_anything(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.processes import ROOT

    env = {
        k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "CONVEYOR_LLM_API_KEY"}
    }
    env.update(
        PYTHONPATH=str(ROOT),
        CONVEYOR_HOME=str(tmp_path),
        CONVEYOR_LLM_MODEL="gpt-4o-mini",  # OpenAI's own API, and no key for it
    )
    env.pop("CONVEYOR_LLM_BASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "conveyor.cli", "up", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "needs an API key" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "postgres").exists(), "no database was started"


async def test_the_demo_batch_needs_no_sample_generator(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`conveyor up` on a fresh install: the demo documents ship as files, no reportlab."""
    import sys

    from conveyor.demo import enqueue_demo_documents

    monkeypatch.setitem(sys.modules, "reportlab", None)  # any import of it fails
    app = App(settings=settings)
    declare_document_agents(app)
    said: list[str] = []
    try:
        ids = await enqueue_demo_documents(app, said.append)
        agents = [(await app.get_task_async(i)).agent for i in ids]
    finally:
        await app.aclose()
    assert sorted(agents) == ["contract", "contract", "document", "invoice", "invoice", "invoice"]
    assert len(said) == 6 and all(line.startswith("demo: ") for line in said)
