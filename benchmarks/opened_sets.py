"""The opened document sets the learned choosers are trained on, and their folds.

Opened: ../shared/realdocs (its text-only copies) and the sets below (round9 to round11
opened on 2026-12-04); never the held-out benchmarks/corpus, round12 and round13. A source
is one repository: a folder of a set's text-only/.

    corpora(parser, realdocs)  the opened sets' folders, realdocs first (a missing one stops
                               the run: from a worktree ../shared/realdocs is not beside it,
                               and a model trained without it once went unnoticed)
    truthed(corpus)            each text-only PDF with its truth (realdocs.expected)
    folds(docs)                leave-one-source-out: each source, the documents of the
                               others, its own
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realdocs import expected  # noqa: E402

SETS = (
    "tuning",
    "round4",
    "round5",
    "round6",
    "round7",
    "round8",
    "fresh",
    "round9",
    "round10",
    "round11",
)


class Sourced(Protocol):
    @property
    def source(self) -> str: ...


D = TypeVar("D", bound=Sourced)


def corpora(parser: argparse.ArgumentParser, realdocs: Path) -> list[Path]:
    opened = [realdocs, *(HERE / s for s in SETS)]
    for corpus in opened:
        if not (corpus / "text-only").is_dir():
            parser.error(f"no text-only copies in {corpus} (give --realdocs from a worktree)")
    return opened


def truthed(corpus: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for pdf in sorted((corpus / "text-only").glob("*/*.pdf")):
        truth_file = pdf.with_suffix(".json")
        if truth_file.exists():
            yield pdf, expected(json.loads(truth_file.read_text())[0])


def folds(docs: Sequence[D]) -> Iterator[tuple[str, list[D], list[D]]]:
    for source in sorted({d.source for d in docs}):
        yield (
            source,
            [d for d in docs if d.source != source],
            [d for d in docs if d.source == source],
        )


Rows = list[dict[str, Any]]


def best_of(
    cs: Sequence[float],
    loso: Callable[[float], Rows],
    show: Callable[[Rows], list[str]],
    score: Callable[[Rows], int],
) -> tuple[float, Rows]:
    """Each C's leave-one-source-out rows, printed as `show` puts them; the C that `score`
    rates highest (the first of equals), with its rows."""
    best: tuple[int, float, Rows] | None = None
    for c in cs:
        rows = loso(c)
        print(f"C {c}:")
        print("\n".join(show(rows)), flush=True)
        if best is None or score(rows) > best[0]:
            best = (score(rows), c, rows)
    assert best is not None, "no C to try"
    return best[1], best[2]


class InSet(Protocol):
    @property
    def corpus(self) -> str: ...


def trained_on(docs: Sequence[InSet], opened: Sequence[Path]) -> dict[str, int]:
    """How many documents of each opened set a model was trained on (its JSON says so)."""
    return {p.name: sum(d.corpus == p.name for d in docs) for p in opened}
