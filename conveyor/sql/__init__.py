"""Named SQL statements, loaded from the `.sql` files beside this module.

A file holds blocks that start with `-- name: NAME`; the comment lines that follow the name
document the statement and are kept in the text (PostgreSQL ignores them).

`functions/*.sql` are scripts, not named blocks: the live text of every SQL function and
trigger, one file per concern, applied whole by `conveyor.db.migrate` (see there).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import LiteralString

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def _load(file: str) -> dict[str, str]:
    text = resources.files(__package__).joinpath(f"{file}.sql").read_text()
    parts = _NAME.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return {name: body.strip().rstrip(";") for name, body in pairs}


def query(file: str, name: str) -> LiteralString:
    """The statement `name` of `conveyor/sql/<file>.sql`."""
    try:
        # The text comes from a file in the package, never from input: a literal for psycopg.
        return _load(file)[name]
    except KeyError:
        raise KeyError(f"no statement {name!r} in {file}.sql") from None


def function_files() -> dict[str, str]:
    """The scripts of `conveyor/sql/functions/`, by file name without `.sql`, in name order."""
    folder = resources.files(__package__).joinpath("functions")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return {f.name.removesuffix(".sql"): f.read_text() for f in files}


class Queries:
    """Attribute access to the statements of one file: `Q.tasks_claim`."""

    def __init__(self, file: str) -> None:
        self._file = file

    def __getattr__(self, name: str) -> LiteralString:
        return query(self._file, name)


queue = Queries("queue")
documents = Queries("documents")
