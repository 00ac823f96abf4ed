"""A PostgreSQL of a test's own, for tests that stop, restart or crash it without
disturbing the session's shared server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from conveyor.db.embedded import EmbeddedPostgres

# Thrown away afterwards: fsync buys nothing (a test that crashes the server on purpose
# passes settings of its own).
THROWAWAY = {"fsync": "off", "full_page_writes": "off"}


@contextmanager
def own_server(prefix: str, settings: Mapping[str, str] = THROWAWAY) -> Iterator[EmbeddedPostgres]:
    """An embedded PostgreSQL started in a new folder under the temporary directory (a
    short path: its socket lives there), stopped and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    server = EmbeddedPostgres(folder, settings=settings)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
