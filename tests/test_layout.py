"""Words with their boxes from a PDF's text layer, and lines and cells made of them."""

from __future__ import annotations

import io
from pathlib import Path

from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

from conveyor.documents.layout import PageLayout, Word, lines_of, text_layout
from conveyor.documents.text import DocumentText, PageText, extract_text


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


def test_layouts_are_read_once_and_fall_back_to_the_text(tmp_path: Path) -> None:
    path = tmp_path / "invoice.pdf"
    path.write_bytes(_pdf([(72, 100, "Invoice 17")]))
    text = extract_text(path)
    first = text.layouts()
    assert [w.text for w in first[0].words] == ["Invoice", "17"]
    assert text.layouts()[0] is first[0]  # read once
    # The file gone before its words were asked for: the text is laid out instead.
    again = extract_text(path)
    path.unlink()
    (layout,) = again.layouts()
    assert [w.text for w in layout.words] == ["Invoice", "17"] and layout.width > 0


def test_a_page_made_without_a_pdf_keeps_the_layout_it_was_given() -> None:
    words = (Word("Total", 300, 500, 330, 510, 1, 0.8), Word("9,50", 400, 500, 420, 510, 1, 0.9))
    given = PageLayout(1, 595, 842, words)
    text = DocumentText(pages=[PageText(1, "Total 9,50", True, 10, layout=given)])
    assert text.layouts() == [given]
    assert [c.text for c in lines_of(given)[0].cells] == ["Total", "9,50"]


def test_a_rotated_stamp_s_tall_box_makes_a_line_of_its_own() -> None:
    # A "PAID" stamp drawn at 45 degrees: its box is 200 points high, over the sums.
    words = [
        Word("Subtotal", 300, 400, 340, 410, 1),
        Word("85.00", 500, 400, 530, 410, 1),
        Word("PAID", 150, 300, 350, 500, 1),
        Word("Tax", 300, 420, 320, 430, 1),
        Word("8.50", 500, 420, 525, 430, 1),
        Word("Total", 300, 440, 330, 450, 1),
        Word("93.50", 500, 440, 530, 450, 1),
    ]
    lines = [line.text for line in lines_of(PageLayout(1, 595, 842, tuple(words)))]
    assert lines == ["PAID", "Subtotal 85.00", "Tax 8.50", "Total 93.50"]  # not one line of all


def test_tex_s_spacing_accents_go_on_the_letter_under_them() -> None:
    # As a TeX text layer gives "Numéro" and "Quantité": the accent a glyph of its own
    # over the e, and the word cut where the accented letter was drawn apart.
    words = [
        Word("Numero", 100, 50, 138, 60, 1),
        Word("\u00b4", 123.7, 50, 127.3, 60, 1),
        Word("Quantit", 200, 50, 232.7, 60, 1),
        Word("e", 232.7, 50, 237.5, 60, 1),
        Word("\u00b4", 233.3, 50, 236.9, 60, 1),
        Word("`", 300, 50, 304, 60, 1),  # over nothing: left as it is
    ]
    (line,) = lines_of(PageLayout(1, 595, 842, tuple(words)))
    assert [w.text for w in line.words] == ["Numéro", "Quantité", "`"]
