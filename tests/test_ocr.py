"""Offline OCR (the `ocr` extra, installed with the test extra): scanned pages and
pictures read by RapidOCR's shipped models, into the layout code's word type."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import pytest

from conveyor import App, TaskStatus
from conveyor.agents.documents import declare_document_agents
from conveyor.documents import ocr
from conveyor.documents.layout import Word
from conveyor.documents.submit import submit_files
from conveyor.documents.text import extract_text, read_layouts
from conveyor.settings import Settings
from conveyor.testing.samples import make_invoice, scanned
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running

pytestmark = pytest.mark.skipif(not ocr.available(), reason="the ocr extra is not installed")


def test_a_scanned_page_is_read_into_words_where_the_text_layer_has_them() -> None:
    """The OCR'd words of a scan sit where the original's text layer puts the same words
    (PDF points, y from the top), with the engine's score; the page's text reads like the
    original's, and the notes say OCR read it instead of saying it was needed."""
    invoice = make_invoice(3)
    number = str(invoice.truth.number)  # type: ignore[attr-defined]
    scan = scanned(invoice.pdf, dpi=150)
    before = extract_text(scan)
    assert before.scanned_pages == [1]
    text = ocr.read_scanned(before, scan)
    (page,) = text.pages
    assert page.has_text_layer and number in page.text
    note = re.fullmatch(
        r"page 1 read by OCR \(mean word score (?P<score>[01]\.\d\d)\)", text.notes[0]
    )
    assert note is not None and float(note["score"]) >= 0.9, text.notes
    assert page.layout is not None and all(isinstance(w, Word) for w in page.layout.words)
    assert all(0.5 <= w.score <= 1 for w in page.layout.words)
    original = {w.text: w for w in read_layouts(invoice.pdf, [1])[1].words}
    found = [w for w in page.layout.words if w.text == number]
    assert found, f"{number} among the OCR'd words"
    printed = original[number]
    assert abs(found[0].x0 - printed.x0) < 4 and abs(found[0].middle - printed.middle) < 4


def test_a_picture_of_nothing_is_an_empty_page_with_a_note(tmp_path: Path) -> None:
    from PIL import Image

    blank = tmp_path / "white.png"
    Image.new("RGB", (800, 1100), "white").save(blank)
    text = ocr.read_picture(blank, "white.png")
    assert [p.text for p in text.pages] == [""]
    assert text.notes == ["page 1 read by OCR (mean word score 0.00); OCR found no text on page 1"]


def test_light_text_on_a_dark_picture_is_read(tmp_path: Path) -> None:
    """A phone screen in dark mode: the ink is lighter than the paper, and still ink."""
    from PIL import Image, ImageDraw, ImageFont

    dark = tmp_path / "dark.png"
    image = Image.new("RGB", (900, 300), (20, 20, 30))
    ImageDraw.Draw(image).text(
        (40, 110), "TOTAL 42.50", fill=(235, 235, 235), font=ImageFont.load_default(size=60)
    )
    image.save(dark)
    text = ocr.read_picture(dark, "dark.png")
    assert "42.50" in text.pages[0].text, text.pages[0].text


async def _finished(app: App, ids: list[int]) -> bool:
    done = {TaskStatus.COMPLETED, TaskStatus.FAILED}
    return all([(await app.get_task_async(i)).status in done for i in ids])


async def test_scans_and_pictures_are_read_by_the_agents_offline(
    settings: Settings, tmp_path: Path
) -> None:
    """A scanned PDF and a PNG of an invoice, through a worker, with no model configured:
    both come out with the invoice's number and total, saying OCR read them."""
    from conveyor.agents.llm_pages import render_pages

    invoice = make_invoice(7)
    truth = invoice.truth.model_dump(mode="json")
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scanned(invoice.pdf, dpi=150))
    (url,) = render_pages(tmp_path / "scan.pdf", [1], scale=2.0)
    picture = tmp_path / "photo.png"
    picture.write_bytes(base64.b64decode(url.split(",", 1)[1]))
    app = App(settings=settings)
    declare_document_agents(app)
    try:
        (pdf,) = await submit_files(app, [scan], agent="invoice")
        (png,) = await submit_files(app, [picture], agent="invoice")
        async with Running(Worker(app, concurrency=2)):
            await wait_for(
                lambda: _finished(app, [pdf.task_id, png.task_id]), timeout=120, what="OCR"
            )
        results = [await app.get_task_async(t) for t in (pdf.task_id, png.task_id)]
    finally:
        await app.aclose()
    for task in results:
        assert task.status == TaskStatus.COMPLETED, task.error
        assert any("read by OCR" in note for note in task.result["notes"])
        assert task.result["data"]["number"] == truth["number"]
        assert task.result["data"]["total"] == truth["total"]


def test_a_picture_that_cannot_be_decoded_is_unreadable(tmp_path: Path) -> None:
    from PIL import Image

    from conveyor.documents.errors import UnreadableDocument

    buffer = io.BytesIO()
    Image.new("RGB", (200, 200), "white").save(buffer, format="PNG")
    cut = tmp_path / "cut.png"
    cut.write_bytes(buffer.getvalue()[:60])
    with pytest.raises(UnreadableDocument, match=r"'cut\.png' cannot be decoded as a picture"):
        ocr.read_picture(cut, "cut.png")
