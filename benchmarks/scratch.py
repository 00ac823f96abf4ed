"""A fresh database for a benchmark's run, dropped after it (WITH (FORCE): whatever a
stopped run left connected)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo


@contextlib.contextmanager
def fresh_database(server: str, name: str) -> Iterator[str]:
    """The URL of a new database `name` on `server` (one left by an earlier run is
    replaced), dropped on the way out."""
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(server, dbname=name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(drop)
