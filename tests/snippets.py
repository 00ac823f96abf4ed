"""Invoices drawn here as tiny PDFs (reportlab), read the way a worker reads them: the
snippets of the layout and vocabulary tests."""

from __future__ import annotations

import io

from reportlab.pdfbase.pdfmetrics import stringWidth  # type: ignore[import-untyped]
from reportlab.pdfgen import canvas  # type: ignore[import-untyped]

from conveyor.agents.offline import extract_offline
from conveyor.documents.text import DocumentText, PageText, extract_text
from conveyor.documents.types import Extraction

# (x, y from the top, text[, font size | "right"]): 9 pt Helvetica unless a size is given;
# "right" draws the text ending at x (a column set flush right).
Draw = list[
    tuple[float, float, str] | tuple[float, float, str, float] | tuple[float, float, str, str]
]


def pdf(*pages: Draw) -> bytes:
    """A PDF of A4 pages, each with the texts of its `Draw`."""
    out = io.BytesIO()
    canvas_ = canvas.Canvas(out, pagesize=(595, 842))
    for draw in pages:
        for item in draw:
            x, y, text = item[0], item[1], item[2]
            size = item[3] if len(item) > 3 and not isinstance(item[3], str) else 9
            if len(item) > 3 and item[3] == "right":
                x -= stringWidth(text, "Helvetica", size)
            canvas_.setFont("Helvetica", size)
            canvas_.drawString(x, 842 - y, text)
        canvas_.showPage()
    canvas_.save()
    return out.getvalue()


def extraction(*pages: Draw) -> Extraction:
    """The pages read by the offline invoice reader, as a worker reads an upload."""
    return extract_offline(extract_text(pdf(*pages)), "invoice")


def invoice_data(draw: Draw) -> dict[str, object]:
    data = extraction(draw).data
    assert isinstance(data, dict)
    return data


def text_layer(text: str) -> DocumentText:
    """One page of text as a PDF's text layer would give it (no PDF drawn): for snippets in
    scripts whose glyphs reportlab's standard fonts cannot draw, laid out by spaces."""
    return DocumentText(pages=[PageText(1, text, True, len(text))])


def text_invoice_data(text: str) -> dict[str, object]:
    data = extract_offline(text_layer(text), "invoice").data
    assert isinstance(data, dict)
    return data


def party_name(data: dict[str, object], key: str) -> object:
    """The name of the party `key` ("vendor", "customer") of an invoice's data."""
    party = data[key]
    assert isinstance(party, dict)
    return party["name"]
