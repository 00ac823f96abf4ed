"""Words with their boxes from a PDF's text layer, and lines and cells made of them."""

from __future__ import annotations

import io

from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

from conveyor.documents.layout import PageLayout, Word, lines_of, text_layout
from conveyor.documents.text import extract_text


def _pdf(draw: list[tuple[float, float, str]]) -> bytes:
    """A one-page A4 PDF with each text drawn at (x, y from the top), 10 pt Helvetica."""
    out = io.BytesIO()
    page = canvas.Canvas(out, pagesize=(595, 842))
    page.setFont("Helvetica", 10)
    for x, y, text in draw:
        page.drawString(x, 842 - y, text)
    page.save()
    return out.getvalue()


def test_words_have_boxes_in_points_from_the_top() -> None:
    # Drawn right column first: lines come from positions, not drawing order.
    pdf = _pdf([(400, 100, "Total 12.00"), (72, 100, "Invoice"), (72, 130, "Second line")])
    text = extract_text(pdf)
    (layout,) = text.layouts()
    assert (layout.width, layout.height) == (595, 842)
    invoice = next(w for w in layout.words if w.text == "Invoice")
    assert 71 <= invoice.x0 <= 73 and invoice.x1 > invoice.x0 + 25
    assert invoice.y0 < 100 < invoice.y1  # the baseline lies inside the loose box
    assert invoice.page == 1 and invoice.score == 1.0
    lines = lines_of(layout)
    assert [line.text for line in lines] == ["Invoice Total 12.00", "Second line"]
    assert [cell.text for cell in lines[0].cells] == ["Invoice", "Total 12.00"]


def test_a_page_without_a_pdf_is_laid_out_from_its_text() -> None:
    layout = text_layout(1, "Invoice no:  17\nTotal 1,234.00 EUR")
    lines = lines_of(layout)
    assert [[c.text for c in line.cells] for line in lines] == [
        ["Invoice no:", "17"],
        ["Total 1,234.00 EUR"],
    ]


def test_words_of_different_sizes_on_one_baseline_are_one_line() -> None:
    words = (
        Word("INVOICE", 72, 90, 150, 110, 1),
        Word("No.", 300, 96, 315, 106, 1),
        Word("42", 318, 96, 328, 106, 1),
        Word("below", 72, 120, 100, 130, 1),
    )
    lines = lines_of(PageLayout(1, 595, 842, words))
    assert [line.text for line in lines] == ["INVOICE No. 42", "below"]
    assert [c.text for c in lines[0].cells] == ["INVOICE", "No. 42"]
