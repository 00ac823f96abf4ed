"""How commands print: tables (rich on a terminal, aligned text when piped) and values."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from conveyor import queue


def when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else ""


def record(task: queue.TaskRecord) -> dict[str, Any]:
    return asdict(task)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def show_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    numeric: set[str] | frozenset[str] = frozenset(),
) -> None:
    """A table: drawn with rich on a terminal, plain aligned text when piped (stable for
    grep and scripts; `--json` is the format for programs)."""
    if not sys.stdout.isatty():
        if title:
            print(f"{title}:")
        print_table(headers, rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title or None, title_justify="left", header_style="bold")
    for header in headers:
        table.add_column(header, justify="right" if header in numeric else "left")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    Console().print(table)


def took(created: datetime | None, finished: datetime | None) -> str:
    """How long a finished task took from creation, in the largest sensible unit."""
    if created is None or finished is None:
        return ""
    seconds = (finished - created).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"
