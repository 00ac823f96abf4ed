"""What an upload counts for its token estimate, on real invoices: `item_rows` against the
line items the truth lists, and what counting costs (conveyor/documents/submit.py
`text_counts`), per source.

    python benchmarks/item_rows.py [CORPUS ...]   (default: ../shared/realdocs)

A corpus is laid out as ../shared/realdocs: PDFs under text-only/<source>/, each with its
truth beside it (`lines`: the line items; a truth without them is left out of the
comparison). The estimate needs the count to follow the items, not to equal them (a sums
line with two amounts counts too): the table says how far it is off, per source.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conveyor.documents.amounts import item_rows  # noqa: E402
from conveyor.documents.pdf import page_count  # noqa: E402
from conveyor.documents.sniff import PDF  # noqa: E402
from conveyor.documents.storage import StoredFile  # noqa: E402
from conveyor.documents.submit import text_counts  # noqa: E402
from conveyor.documents.text import extract_text  # noqa: E402

DEFAULT = HERE.parent.parent / "shared" / "realdocs"


def measure(corpus: Path) -> list[str]:
    by_source: dict[str, list[tuple[int, int]]] = defaultdict(list)
    cpu: list[float] = []
    for pdf in sorted((corpus / "text-only").glob("*/*.pdf")):
        truth_file = pdf.with_suffix(".json")
        if not truth_file.exists():
            continue
        stored = StoredFile("", pdf.stat().st_size, PDF, page_count(pdf), pdf)
        started = time.process_time()
        counts = text_counts(stored)
        cpu.append(time.process_time() - started)
        lines = json.loads(truth_file.read_text())[0].get("lines")
        if not lines:
            continue
        rows = counts.get("item_rows", item_rows(extract_text(pdf).text))
        by_source[pdf.parent.name].append((rows, len(lines)))
    out = [
        f"### {corpus.name}: item_rows against the truth's line items",
        "",
        "| source | documents | rows = items | within 2 | rows / items (median) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    every: list[tuple[int, int]] = []
    for source, pairs in sorted(by_source.items()):
        every += pairs
        out.append(_row(source, pairs))
    out.append(_row("**all**", every))
    cpu.sort()
    out += [
        "",
        f"text_counts, CPU per document ({len(cpu)}): median {cpu[len(cpu) // 2] * 1e3:.1f} ms, "
        f"max {cpu[-1] * 1e3:.1f} ms",
    ]
    return out


def _row(source: str, pairs: list[tuple[int, int]]) -> str:
    exact = sum(rows == items for rows, items in pairs)
    near = sum(abs(rows - items) <= 2 for rows, items in pairs)
    ratio = statistics.median(rows / items for rows, items in pairs)
    return f"| {source} | {len(pairs)} | {exact} | {near} | {ratio:.2f} |"


def main() -> None:
    corpora = [Path(a) for a in sys.argv[1:]] or [DEFAULT]
    for corpus in corpora:
        print("\n".join(measure(corpus)), end="\n\n")


if __name__ == "__main__":
    main()
