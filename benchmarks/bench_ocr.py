"""The `invoice` agent on ../shared/realdocs read two more ways, scored like realdocs.py:

    python benchmarks/bench_ocr.py einvoice [--corpus DIR]
    python benchmarks/bench_ocr.py ocr [--corpus DIR] [--dpi 200] [--scans DIR] [--only SRC]
    python benchmarks/bench_ocr.py scans --corpus benchmarks/corpus

einvoice  the documents whose invoice is e-invoice XML, as they are: the PDFs that carry
          it (read e-invoice first, as a worker does) and the UBL invoice that carries
          its PDF (read as an uploaded XML would be).
scans     the corpus's own scanned PDFs and pictures, as they are (for benchmarks/corpus,
          the held-out set: PNG and JPEG pages, photos of receipts), read with OCR.
ocr       every document rasterised: each page of its text-only copy (no XML) rendered at
          --dpi into a picture, the pictures wrapped into an image-only PDF (kept in
          --scans), then read as a worker reads a scan with the `ocr` extra: text layer
          (none), OCR, the offline invoice rules. Reports OCR pages/s besides the fields.

Truth, fields, the tuned / held-out split and the reliability table are realdocs.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from realdocs import (  # noqa: E402
    DEFAULT_CORPUS,
    Doc,
    failed,
    failures,
    languages,
    report,
    scored,
)

from conveyor.agents.einvoice import from_pdf, from_xml  # noqa: E402
from conveyor.agents.offline import extract_offline  # noqa: E402
from conveyor.documents import ocr  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402
from conveyor.testing.samples import scanned  # noqa: E402


def run_einvoice(corpus: Path) -> list[Doc]:
    langs = languages(corpus)
    docs = []
    for row in json.loads((corpus / "index.json").read_text()):
        carried = str(row.get("e_invoice_xml", ""))
        if not carried.startswith(("embedded", "carried by")):
            continue
        pdf, truth_file = corpus / row["file"], corpus / row["truth"]
        truth = json.loads(truth_file.read_text())[0]
        label, source = f"{pdf.parent.name}/{pdf.name}", pdf.parent.name
        started = time.perf_counter()
        try:
            if carried.startswith("embedded"):
                found = from_pdf(pdf, extract_text(pdf, name=pdf.name))
                if found is None:
                    raise LookupError("no e-invoice found in the PDF")
            else:  # the UBL invoice that carries this PDF, uploaded on its own
                found = from_xml(pdf.with_suffix(".xml").read_bytes())
        except Exception as exc:
            docs.append(failed(label, source, langs.get(pdf.stem, "?"), exc))
            continue
        seconds = time.perf_counter() - started
        docs.append(scored(label, source, langs.get(pdf.stem, "?"), truth, found, seconds))
    return docs


def run_ocr(corpus: Path, dpi: int, scans: Path, only: str | None) -> tuple[list[Doc], int, float]:
    """The documents, the pages OCR read, and the seconds OCR took."""
    if not ocr.available():
        raise SystemExit("the ocr extra is not installed: pip install -e '.[ocr]'")
    langs = languages(corpus)
    docs, pages, ocr_seconds = [], 0, 0.0
    for pdf in sorted((corpus / "text-only").glob("*/*.pdf")):
        truth_file = pdf.with_suffix(".json")
        if not truth_file.exists() or (only and pdf.parent.name != only):
            continue
        truth = json.loads(truth_file.read_text())[0]
        label, source = f"{pdf.parent.name}/{pdf.name}", pdf.parent.name
        scan = scans / source / pdf.name
        if not scan.exists():
            scan.parent.mkdir(parents=True, exist_ok=True)
            scan.write_bytes(scanned(pdf.read_bytes(), dpi=dpi))
        started = time.perf_counter()
        try:
            text = extract_text(scan, name=pdf.name)
            assert not any(p.has_text_layer for p in text.pages), "a scan has no text layer"
            began = time.perf_counter()
            text = ocr.read_scanned(text, scan)
            ocr_seconds += time.perf_counter() - began
            pages += min(text.page_count, ocr.MAX_PAGES)
            found = extract_offline(text, "invoice")
        except Exception as exc:
            docs.append(failed(label, source, langs.get(pdf.stem, "?"), exc))
            continue
        seconds = time.perf_counter() - started
        docs.append(scored(label, source, langs.get(pdf.stem, "?"), truth, found, seconds))
        print(f"  {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return docs, pages, ocr_seconds


def run_scans(corpus: Path) -> tuple[list[Doc], int, float]:
    """The corpus's own scans and pictures (index `form`: scanned PDF, image, photo), as
    they are, read as a worker reads them offline with the `ocr` extra."""
    if not ocr.available():
        raise SystemExit("the ocr extra is not installed: pip install -e '.[ocr]'")
    docs, pages, ocr_seconds = [], 0, 0.0
    for row in json.loads((corpus / "index.json").read_text()):
        form = str(row.get("form", ""))
        if not form.startswith(("scanned", "image", "photo")):
            continue
        path, truth = corpus / row["file"], json.loads((corpus / row["truth"]).read_text())[0]
        label, source = f"{path.parent.name}/{path.name}", path.parent.name
        language = str(row.get("language", "?"))
        started = time.perf_counter()
        try:
            if path.suffix.lower() == ".pdf":
                text = extract_text(path, name=path.name)
                text = ocr.read_scanned(text, path)
            else:
                text = ocr.read_picture(path, path.name)
            ocr_seconds += time.perf_counter() - started
            pages += min(text.page_count, ocr.MAX_PAGES)
            found = extract_offline(text, "invoice")
        except Exception as exc:
            docs.append(failed(label, source, language, exc))
            continue
        seconds = time.perf_counter() - started
        docs.append(scored(label, source, language, truth, found, seconds))
        print(f"  {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return docs, pages, ocr_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("einvoice", "ocr", "scans"))
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--dpi", type=int, default=200, help="the rasterised copies' dpi")
    parser.add_argument("--scans", type=Path, help="where the image-only PDFs are kept")
    parser.add_argument("--only", help="one source folder (ocr mode)")
    parser.add_argument("--failures", action="store_true", help="list wrong fields (tuned)")
    parser.add_argument("--json", type=Path, help="write every field's result here")
    args = parser.parse_args()
    if args.mode == "einvoice":
        docs = run_einvoice(args.corpus)
        lines = report(docs, "e-invoice XML, as-is")
    else:
        if args.mode == "scans":
            docs, pages, seconds = run_scans(args.corpus)
            lines = report(docs, "scans and pictures as they are, read by OCR")
        else:
            scans = args.scans or Path(tempfile.gettempdir()) / f"realdocs-scans-{args.dpi}dpi"
            docs, pages, seconds = run_ocr(args.corpus, args.dpi, scans, args.only)
            lines = report(docs, f"rasterised at {args.dpi} dpi, read by OCR")
        load = os.getloadavg()[0]
        lines += [
            "",
            f"OCR: {pages} pages in {seconds:.1f} s = {pages / seconds:.2f} pages/s "
            f"({os.cpu_count()} cores, load average {load:.1f} at the end).",
        ]
    if args.failures:
        lines += failures(docs, held_out=False)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps([d.__dict__ for d in docs], default=str, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
