"""PostgreSQL array literals written in Python, for the finish's batch of outcomes.

A finish sends fifteen arrays, one element per outcome. psycopg adapts a Python list
element by element in Python (a dumper looked up and called per element): about 5 µs per
outcome for the fifteen, the largest single cost of a worker's CPU per task in a drain's
profile (docs/benchmarks.md, "The worker's CPU per task"). Written here as one text per
array by `str` methods that run in C (join, replace), it is about 1.5 µs; the statement casts
each text to its array type (`%(task_ids)s::bigint[]`), so PostgreSQL parses them in C too.

The array literal's grammar, for the two kinds used: elements separated by commas inside
braces; NULL unquoted; a text element in double quotes with its backslashes and double
quotes escaped by a backslash (so no other character needs escaping, commas, braces,
whitespace and non-ASCII included).
"""

from __future__ import annotations

from collections.abc import Sequence

#: The element of an all-NULL array, joined once per call instead of once per element.
_NULL = "NULL"


def number_array(values: Sequence[int | float | None]) -> str:
    """`{1,NULL,2.5}` for ints and floats (str() of a float is its shortest exact form, and
    `inf`, `-inf`, `nan` are accepted by float8 and numeric alike)."""
    if None not in values:
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join([_NULL if v is None else str(v) for v in values]) + "}"


def text_array(values: Sequence[str | None]) -> str:
    """`{"a","b \\"quoted\\"",NULL}` for strings; None is NULL."""
    return "{" + ",".join([_NULL if v is None else _quoted(v) for v in values]) + "}"


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
