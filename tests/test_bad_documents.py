"""Bad input to the document agents, through a real `conveyor worker` process: a corrupt,
garbage, encrypted, page-less or empty PDF, a 2,000-page PDF and a 2,000-page scan, an
XML that is not an invoice, a picture of nothing and a broken picture. Each ends its task
with a clear error (at once: retrying reads the same bytes) or an empty extraction with a
note, well within one lease, and the worker lives on to read a good invoice after them."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from conveyor import App, TaskStatus
from conveyor.agents.documents import LEASE_SECONDS, declare_document_agents
from conveyor.documents import ocr
from conveyor.documents.sniff import PDF, XML
from conveyor.documents.storage import DocumentStore
from conveyor.documents.submit import submit_files
from conveyor.settings import Settings
from conveyor.testing.samples import encrypted, garbage, make_invoice, truncated
from tests.conftest import wait_for
from tests.processes import WorkerProcess


def _in_store(settings: Settings, data: bytes) -> str:
    """Bytes put straight into the store, past the upload's checks (which refuse most of
    these files): what a disk fault, or an older Conveyor, leaves for a worker."""
    sha256 = hashlib.sha256(data).hexdigest()
    path = DocumentStore.for_settings(settings).path_of(sha256)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha256


def _pdf(pages: int, *, text: bool = True, picture: bool = False) -> bytes:
    """A PDF of `pages` pages drawn by reportlab: a line of text on each, a white picture
    on each (a scan of nothing: one image, drawn on every page), or neither (blank)."""
    from PIL import Image
    from reportlab.lib.utils import ImageReader  # type: ignore[import-untyped]
    from reportlab.pdfgen.canvas import Canvas  # type: ignore[import-untyped]

    white = ImageReader(Image.new("RGB", (64, 64), "white"))
    drawn = io.BytesIO()
    canvas = Canvas(drawn, invariant=True)
    for number in range(pages):
        if text:
            canvas.drawString(72, 760, f"Page {number + 1} of a very long document")
        if picture:
            canvas.drawImage(white, 0, 0, 595, 842)
        canvas.showPage()
    canvas.save()
    if pages:
        return drawn.getvalue()
    # reportlab always writes a page; PDFium makes a document with none.
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    empty, out = pdfium.PdfDocument.new(), io.BytesIO()
    empty.save(out)
    empty.close()
    return out.getvalue()


def _png(*, cut: bool = False) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (600, 800), "white").save(out, format="PNG")
    return out.getvalue()[:80] if cut else out.getvalue()


async def _finished(app: App, ids: list[int]) -> bool:
    done = {TaskStatus.COMPLETED, TaskStatus.FAILED}
    return all([(await app.get_task_async(i)).status in done for i in ids])


async def test_bad_documents_end_clearly_and_the_worker_goes_on(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    app = App(settings=settings)
    declare_document_agents(app)
    failing = {
        "truncated.pdf": (truncated(make_invoice(1).pdf), PDF, "'truncated.pdf' cannot be opened"),
        "garbage.pdf": (garbage(2), PDF, "'garbage.pdf' cannot be opened"),
        "locked.pdf": (encrypted(3), PDF, "protected by a password"),
        # PDFium refuses to open a document without pages at all; the file says why.
        "no-pages.pdf": (_pdf(0, text=False), PDF, "'no-pages.pdf' has no pages"),
        "books.xml": (b"<?xml version='1.0'?><books/>", XML, "'books.xml' is not an e-invoice"),
        "cut.png": (_png(cut=True), "image/png", "cannot be decoded as a picture"),
    }
    uploaded = {
        "blank.pdf": _pdf(1, text=False),
        "long.pdf": _pdf(2000),
        "long-scan.pdf": _pdf(2000, text=False, picture=True),
        "nothing.png": _png(),
        "good.pdf": make_invoice(4).pdf,  # after all of them: the worker still reads
    }
    try:
        ids = {
            name: await app.enqueue_async(
                "invoice", {"sha256": _in_store(settings, data), "name": name, "media_type": kind}
            )
            for name, (data, kind, _) in failing.items()
        }
        for name, data in uploaded.items():
            (tmp_path / name).write_bytes(data)
            (done,) = await submit_files(app, [tmp_path / name], agent="invoice")
            ids[name] = done.task_id
        worker = WorkerProcess(
            database_url,
            app="conveyor.demo:app",
            concurrency=2,
            env={"CONVEYOR_HOME": str(settings.home)},
            log_path=tmp_path / "worker.log",
        )
        try:
            # Well within one lease: nothing here may hang until a sweeper finds it.
            await wait_for(
                lambda: _finished(app, list(ids.values())),
                timeout=LEASE_SECONDS,
                what="the bad documents",
            )
            assert worker.proc.poll() is None, "the worker lives on"
        finally:
            worker.close()
        tasks = {name: await app.get_task_async(i) for name, i in ids.items()}
    finally:
        await app.aclose()
    assert "Traceback" not in worker.output()
    for name, (_, _, message) in failing.items():
        task = tasks[name]
        assert task.status == TaskStatus.FAILED, (name, task.result)
        assert task.attempts == 1, f"{name}: the same bytes are not tried again"
        assert task.error is not None and message in task.error, (name, task.error)
    for name in uploaded:
        if name == "nothing.png" and not ocr.available():
            continue  # a picture, with neither OCR nor a vision model: refused instead
        assert tasks[name].status == TaskStatus.COMPLETED, (name, tasks[name].error)
    blank = tasks["blank.pdf"].result
    assert blank["pages"] == 1 and blank["confidence"] == 0
    assert "no text to read: every field is empty" in blank["notes"]
    long = tasks["long.pdf"].result
    assert long["pages"] == 2000 and long["data"]["total"] is None
    scan = tasks["long-scan.pdf"].result
    assert scan["pages"] == 2000 and scan["confidence"] == 0
    if ocr.available():
        nothing = tasks["nothing.png"].result
        assert nothing["confidence"] == 0 and nothing["data"]["number"] is None
        assert f"pages {ocr.MAX_PAGES + 1}-2000 not read" in " ".join(scan["notes"])
        assert "OCR found no text on page 1" in " ".join(nothing["notes"])
    else:
        assert any("OCR would be needed" in note for note in scan["notes"])
    assert tasks["good.pdf"].result["data"]["number"] is not None
