"""OCR, offline: the words of scanned pages and pictures, with RapidOCR (PaddleOCR's
PP-OCRv6 models in ONNX, shipped inside the `rapidocr` wheel; run by onnxruntime).

    available()                    -> is the `ocr` extra installed?
    read_scanned(text, pdf)        -> the DocumentText with its scanned pages read by OCR
    read_picture(path, name)       -> the DocumentText of a PNG, JPEG, GIF, WebP or TIFF

`pip install 'conveyor[ocr]'` brings it. Nothing is downloaded when it runs: the engine is
given the model files of the installed wheel by path, so a missing one is an error, never
a fetch. Without the extra the text path is as before: the result says OCR was needed.

The words come out as `layout.Word` in the page's PDF points (y from the top), each with
the engine's score, so the layout code reads an OCR'd page like a page with a text layer;
the page's text is its lines, cells two spaces apart. A page is rendered at RENDER_SCALE
(144 dpi: small print stays legible to the recogniser, and a page takes seconds, not tens
of them); at most MAX_PAGES pages of a document are read, the rest noted, so that a
2,000-page scan ends in minutes, not hours.

Engine calls hold one lock per process: onnxruntime already uses every core for one
page, and the engine object is not documented as thread-safe. Rendering holds
PDFIUM_LOCK, OCR does not: other threads read PDFs meanwhile.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conveyor.documents.errors import UnreadableDocument
from conveyor.documents.layout import PageLayout, Word, lines_of
from conveyor.documents.pdf import PDFIUM_LOCK, open_pdf
from conveyor.documents.text import DocumentText, PageText, _ranges

RENDER_SCALE = 2.0  # 144 dpi
MAX_PAGES = 20  # per document; scanned invoices are a few pages, contracts are read as text
MAX_SIDE = 3000  # pixels: a larger picture is scaled down first (a phone photo is 4000)
MIN_SCORE = 0.5  # words the recogniser is less sure of than this are dropped as noise
DETECT_SIDE = 1280  # pixels: the detector sees the page scaled to this (twice as fast as
# the full render, and every word of the corpus's small print still found)
INK_CONTRAST, INK_PIXELS = 60, 20  # fewer pixels this far from the paper's shade: blank

_ENGINE_LOCK = threading.Lock()
_engine: Any = None


def available() -> bool:
    """True when the `ocr` extra is installed (rapidocr and its onnxruntime)."""
    return all(importlib.util.find_spec(m) is not None for m in ("rapidocr", "onnxruntime"))


@dataclass(frozen=True)
class OcrText(DocumentText):
    """A DocumentText some of whose pages were read by OCR: its notes say which, and how
    sure the engine was, instead of saying that OCR would be needed."""

    read_by_ocr: tuple[int, ...] = ()

    @property
    def notes(self) -> list[str]:
        notes = []
        done = set(self.read_by_ocr)
        if done:
            scores = [w.score for p in self.pages if p.layout for w in p.layout.words]
            mean = sum(scores) / len(scores) if scores else 0.0
            empty = [p.number for p in self.pages if p.number in done and not p.text]
            notes.append(
                f"{_pages(sorted(done))} read by OCR (mean word score {mean:.2f})"
                + (f"; OCR found no text on {_pages(empty)}" if empty else "")
            )
        left = [n for n in self.scanned_pages if n not in done]  # past MAX_PAGES
        if left:
            notes.append(
                f"{_pages(left)} not read: OCR reads at most {MAX_PAGES} pages of a document"
            )
        return notes


def _pages(numbers: list[int]) -> str:
    return f"{'page' if len(numbers) == 1 else 'pages'} {_ranges(numbers)}"


def read_scanned(text: DocumentText, pdf: Path | bytes) -> DocumentText:
    """`text` with its scanned pages (no text layer, something drawn) read by OCR, the
    first MAX_PAGES of them. Returned as it is when it has none."""
    wanted = text.scanned_pages[:MAX_PAGES]
    if not wanted:
        return text
    layouts = {number: _ocr(image, number, scale) for number, image, scale in _render(pdf, wanted)}
    pages = [
        _read_page(page, layouts[page.number]) if page.number in layouts else page
        for page in text.pages
    ]
    return OcrText(pages=pages, name=text.name, source=text.source, read_by_ocr=tuple(wanted))


def read_picture(path: Path, name: str | None = None) -> DocumentText:
    """The text of a picture of a document. UnreadableDocument when it is not a picture
    that can be decoded (damaged, or too large to decode safely)."""
    import numpy as np
    from PIL import Image

    which = f"{name!r}" if name else "the picture"
    try:
        with warnings.catch_warnings():
            # Pillow warns (and at twice the bound raises) about decompression bombs; here
            # both are a refusal, not a warning to print.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as opened:
                opened.seek(0)  # the first frame of a GIF or a multi-page TIFF
                image = opened.convert("RGB")
    except (
        OSError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:
        raise UnreadableDocument(f"{which} cannot be decoded as a picture: {exc}") from None
    scale = min(1.0, MAX_SIDE / max(image.size))
    if scale < 1.0:
        image = image.resize((round(image.width * scale), round(image.height * scale)))
    # A picture has no points: a pixel of the original counts as a point (72 dpi).
    layout = _ocr(np.asarray(image), 1, scale)
    blank = PageText(number=1, text="", has_text_layer=False, chars=0)
    page = _read_page(blank, layout)
    return OcrText(pages=[page], name=name, source=None, read_by_ocr=(1,))


def _read_page(page: PageText, layout: PageLayout) -> PageText:
    # The page now has a text layer, made by OCR (as a scanner's OCR software would add
    # one): every reader of text reads it, and it is no longer a scan left unread.
    lines = ["  ".join(cell.text for cell in line.cells) for line in lines_of(layout)]
    text = "\n".join(lines)
    return replace(page, text=text, has_text_layer=bool(text), layout=layout)


def _render(pdf: Path | bytes, numbers: Sequence[int]) -> Iterator[tuple[int, Any, float]]:
    """(number, RGB pixels, pixels per point) of each page, one page at a time."""
    import numpy as np

    with open_pdf(pdf, "the PDF (for OCR)") as document:
        for number in numbers:
            with PDFIUM_LOCK:
                page = document[number - 1]
                try:
                    width, height = page.get_size()
                    # A huge page (a poster, a bogus MediaBox) is rendered no larger than a
                    # picture would be read.
                    scale = min(RENDER_SCALE, MAX_SIDE / max(width, height, 1.0))
                    bitmap = page.render(scale=scale, grayscale=True)
                    gray = bitmap.to_numpy().copy()
                    bitmap.close()
                finally:
                    page.close()
            yield number, np.repeat(gray.reshape(gray.shape[0], gray.shape[1], 1), 3, axis=2), scale


def _ocr(image: Any, number: int, scale: float) -> PageLayout:
    """The words the engine finds in `image`, in points (pixels / scale)."""
    height, width = image.shape[:2]
    if _no_ink(image):
        return PageLayout(number, width / scale, height / scale, ())
    with _ENGINE_LOCK:
        result = _get_engine()(image, return_word_box=True)
    words: list[Word] = []
    # A page where nothing was detected has no boxes (and placeholder word results).
    found = result.word_results if getattr(result, "boxes", None) is not None else ()
    for line in found or ():
        for text, score, box in line:
            if not str(text).strip() or float(score) < MIN_SCORE:
                continue
            xs = [float(p[0]) for p in box]
            ys = [float(p[1]) for p in box]
            words.append(
                Word(
                    str(text),
                    min(xs) / scale,
                    min(ys) / scale,
                    max(xs) / scale,
                    max(ys) / scale,
                    number,
                    round(float(score), 3),
                )
            )
    return PageLayout(number, width / scale, height / scale, tuple(words))


def _no_ink(image: Any) -> bool:
    """True for a page with (next to) nothing that stands out from its paper: a blank
    scan, a picture of nothing. The detector would take seconds to find no text on it.
    Ink may be lighter than the paper too (a dark screen, white on a coloured band)."""
    import numpy as np

    gray = image[::2, ::2, 0].astype(np.int16)  # every other pixel is plenty to see ink
    paper = int(np.median(gray))
    return bool(np.count_nonzero(np.abs(gray - paper) > INK_CONTRAST) < INK_PIXELS)


def _get_engine() -> Any:
    """The engine, made once per process from the model files the wheel ships."""
    global _engine
    if _engine is None:
        import rapidocr

        models = Path(rapidocr.__file__).parent / "models"
        paths = {
            "Det.model_path": models / "PP-OCRv6_det_small.onnx",
            "Rec.model_path": models / "PP-OCRv6_rec_small.onnx",
            "Cls.model_path": models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
        }
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise RuntimeError(f"the rapidocr wheel lacks its models: {', '.join(missing)}")
        _engine = rapidocr.RapidOCR(
            params={
                **{key: str(path) for key, path in paths.items()},
                "Global.log_level": "error",
                "Det.limit_type": "max",
                "Det.limit_side_len": DETECT_SIDE,
                # Scanned documents are upright; the angle classifier costs time and
                # turns a few upright lines upside down.
                "Global.use_cls": False,
            }
        )
    return _engine
