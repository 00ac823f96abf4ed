"""PDF text per page: counts, table rows on one line, scanned pages, unreadable files."""

from __future__ import annotations

from pathlib import Path

import pytest

from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.text import extract_text
from conveyor.documents.types import Invoice
from conveyor.testing.samples import (
    encrypted,
    garbage,
    make_contract,
    make_invoice,
    scanned,
    truncated,
)


def test_pages_and_their_text(tmp_path: Path) -> None:
    sample = make_contract(5, pages=4)
    path = tmp_path / sample.name
    path.write_bytes(sample.pdf)
    text = extract_text(path, name=sample.name)
    assert text.page_count == 4
    assert [p.number for p in text.pages] == [1, 2, 3, 4]
    assert all(p.has_text_layer for p in text.pages)
    assert all(p.chars > 2000 for p in text.pages[:3])  # full pages of clauses
    assert text.pages[0].text.split("\n")[0].endswith("AGREEMENT")  # the title comes first
    assert "Page 1 of 4" in text.pages[0].text
    assert "Page 4 of 4" in text.pages[3].text
    assert text.text == "\n\n".join(p.text for p in text.pages)
    assert text.scanned_pages == [] and text.notes == []
    assert "\r" not in text.text


def test_table_rows_stay_on_one_line() -> None:
    sample = make_invoice(3)
    invoice = sample.truth
    assert isinstance(invoice, Invoice)
    lines = extract_text(sample.pdf).text.splitlines()
    item = invoice.line_items[0]
    row = next(line for line in lines if line.startswith(item.description or "?"))
    # description, quantity, unit price and amount on the same line, in that order
    assert row.split()[-1].replace(".", "").replace(",", "").isdigit()
    assert len(row.split()) >= len((item.description or "").split()) + 3


def test_scanned_pages_are_listed_with_a_note() -> None:
    pdf = scanned(make_contract(2, pages=5).pdf, pages=[2, 3, 5])
    text = extract_text(pdf)
    assert text.page_count == 5
    assert text.scanned_pages == [2, 3, 5]
    assert [p.has_text_layer for p in text.pages] == [True, False, False, True, False]
    assert text.pages[1].text == "" and text.pages[1].chars == 0
    assert text.notes == ["pages 2-3, 5 have no text layer; OCR would be needed"]


def test_a_fully_scanned_document_says_so() -> None:
    text = extract_text(scanned(make_invoice(1).pdf))
    assert text.scanned_pages == [1]
    assert "scanned document" in text.notes[0] and "OCR" in text.notes[0]


def test_a_blank_page_is_not_a_scan() -> None:
    import io

    from reportlab.pdfgen.canvas import Canvas  # type: ignore[import-untyped]

    buffer = io.BytesIO()
    canvas = Canvas(buffer)
    canvas.drawString(72, 720, "Cover")
    canvas.showPage()
    canvas.showPage()  # nothing drawn
    canvas.save()
    text = extract_text(buffer.getvalue())
    assert text.page_count == 2
    assert text.pages[1].blank and not text.pages[1].has_text_layer
    assert text.scanned_pages == [] and text.notes == []


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: encrypted(1), "protected by a password"),
        (lambda: garbage(1), "damaged or not a PDF"),
        (lambda: truncated(make_invoice(4).pdf), "damaged or not a PDF"),
        (lambda: truncated(make_contract(4, pages=3).pdf, keep=0.9), "damaged or not a PDF"),
        (lambda: b"", "damaged or not a PDF"),
    ],
)
def test_unreadable_pdfs_are_refused_clearly(make: object, expected: str) -> None:
    data = make()  # type: ignore[operator]
    with pytest.raises(UnreadableDocument, match=expected) as caught:
        extract_text(data, name="scan.pdf")
    assert "'scan.pdf'" in str(caught.value)


def _no_pages() -> bytes:
    import io

    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    empty, out = pdfium.PdfDocument.new(), io.BytesIO()
    empty.save(out)
    empty.close()
    return out.getvalue()


def test_a_pdf_without_pages_says_so_even_after_an_encrypted_one(tmp_path: Path) -> None:
    # PDFium's error code is its last error: read after an encrypted PDF, a page-less one
    # was reported as protected by a password. The reason comes from the file now.
    with pytest.raises(UnreadableDocument, match="protected by a password"):
        extract_text(encrypted(2), name="locked.pdf")
    (tmp_path / "empty.pdf").write_bytes(_no_pages())
    for source in (_no_pages(), tmp_path / "empty.pdf"):
        with pytest.raises(UnreadableDocument, match=r"'empty\.pdf' has no pages$"):
            extract_text(source, name="empty.pdf")


def test_a_missing_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDocument):
        extract_text(tmp_path / "nope.pdf")


def test_threads_read_documents_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pdfs = [make_contract(seed, pages=6).pdf for seed in range(4)] + [make_invoice(9).pdf]
    alone = [extract_text(pdf).text for pdf in pdfs]
    with ThreadPoolExecutor(max_workers=5) as pool:
        together = list(pool.map(lambda pdf: extract_text(pdf).text, pdfs * 3))
    assert together == alone * 3
