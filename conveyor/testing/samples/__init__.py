"""Sample documents with known truth: realistic invoices and contracts as PDFs, made here
with reportlab (nothing is downloaded), for tests, benchmarks and the demo.

    make_invoice(seed)             an invoice; the same seed gives the same bytes
    make_contract(seed, pages=3)   a contract of exactly `pages` pages (200 for chunking)
    scanned(pdf, pages)            the same PDF with those pages turned into images
    truncated(pdf), garbage(seed), encrypted(seed)    files no reader can open

reportlab is an optional dependency (the `samples` extra), imported when a PDF is drawn.
"""

from __future__ import annotations

import io
import random
from collections.abc import Collection
from dataclasses import dataclass

from pydantic import BaseModel

from conveyor.testing.samples.contracts import contract_spec, draw_contract
from conveyor.testing.samples.invoices import draw_invoice, invoice_spec


@dataclass(frozen=True)
class Sample:
    kind: str  # "invoice" or "contract": the document type
    pdf: bytes
    truth: BaseModel
    name: str
    hard: tuple[str, ...] = ()  # the deliberate difficulties in it, if any


def make_invoice(seed: int) -> Sample:
    spec = invoice_spec(seed)
    return Sample(
        kind="invoice",
        pdf=draw_invoice(spec),
        truth=spec.truth,
        name=f"invoice-{seed:04d}.pdf",
        hard=tuple(spec.hard),
    )


def make_contract(seed: int, pages: int = 3) -> Sample:
    spec = contract_spec(seed)
    return Sample(
        kind="contract",
        pdf=draw_contract(spec, pages),
        truth=spec.truth,
        name=f"contract-{seed:04d}-{pages}p.pdf",
        hard=tuple(spec.hard),
    )


def scanned(pdf: bytes, pages: Collection[int] | None = None, *, dpi: int = 72) -> bytes:
    """`pdf` with the given 1-based pages (all when None) replaced by pictures of
    themselves: what a scanner makes, with no text layer."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    from conveyor.documents.pdf import PDFIUM_LOCK

    with PDFIUM_LOCK:
        source = pdfium.PdfDocument(pdf)
        out = pdfium.PdfDocument.new()
        try:
            for index in range(len(source)):
                if pages is not None and index + 1 not in pages:
                    out.import_pages(source, [index])
                    continue
                page = source[index]
                width, height = page.get_size()
                bitmap = page.render(scale=dpi / 72)
                new = out.new_page(width, height)
                image = pdfium.PdfImage.new(out)
                image.set_bitmap(bitmap)
                image.set_matrix(pdfium.PdfMatrix().scale(width, height))
                new.insert_obj(image)
                new.gen_content()
                for done in (image, new, bitmap, page):
                    done.close()
            buffer = io.BytesIO()
            out.save(buffer)
        finally:
            out.close()
            source.close()
    return buffer.getvalue()


def truncated(pdf: bytes, keep: float = 0.5) -> bytes:
    """The first `keep` of the file, as a download cut short leaves it."""
    return pdf[: max(1, int(len(pdf) * keep))]


def garbage(seed: int, size: int = 4096) -> bytes:
    """A PDF header followed by noise: sniffed as a PDF, readable by nobody."""
    noise = random.Random(f"garbage-{seed}").randbytes(size)
    return b"%PDF-1.7\n" + noise


def encrypted(seed: int, password: str = "secret") -> bytes:
    """An invoice that needs a password to open."""
    from reportlab.pdfgen.canvas import Canvas  # type: ignore[import-untyped]

    sample = make_invoice(seed)
    buffer = io.BytesIO()
    canvas = Canvas(buffer, encrypt=password, invariant=True)
    canvas.setFont("Helvetica", 11)
    canvas.drawString(50, 780, f"Invoice {getattr(sample.truth, 'number', '')}")
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


__all__ = [
    "Sample",
    "encrypted",
    "garbage",
    "make_contract",
    "make_invoice",
    "scanned",
    "truncated",
]
