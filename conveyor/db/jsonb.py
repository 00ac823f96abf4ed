"""How `json` and `jsonb` columns become Python values on Conveyor's connections.

psycopg's default loader calls `json.loads(bytes)`, which first guesses the bytes'
encoding and then matches leading and trailing whitespace with regular expressions around
the one call that does the work, the C scanner. On the claim's rows (a payload and labels
per task, hundreds per exchange) that wrapping cost more than the parsing: a drain's
profile had it at ~2.5 µs of a worker's CPU per claimed task (docs/benchmarks.md, "The
worker's CPU per task"). PostgreSQL sends JSON as UTF-8 text without surrounding
whitespace, so `loads` calls the scanner directly and leaves anything else — leading or
trailing whitespace from a `json` column, an empty or invalid text — to `json.loads`, whose
values and errors are therefore exactly the standard library's.
"""

from __future__ import annotations

import json
from json.scanner import make_scanner
from typing import Any

# typeshed types make_scanner as the class it is in C, whose constructor takes a decoder.
_scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def loads(data: str | bytes) -> Any:
    """One JSON text as psycopg hands it over (bytes, or a memoryview of them for jsonb's
    binary format) to its Python value."""
    text = data if isinstance(data, str) else str(data, "utf-8")
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # not a value at position 0: let json.loads say what is wrong
        return json.loads(text)
    return value if end == len(text) else json.loads(text)
