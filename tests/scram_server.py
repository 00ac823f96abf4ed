"""A private embedded PostgreSQL that checks passwords, and a role whose password rotates:
the fixtures of the tests of rotating credentials (tests/test_credentials.py,
tests/test_listen_handover.py).

The machine's shared server may trust every login, so this starts its own PostgreSQL, whose
TCP logins are checked with SCRAM-SHA-256, and gives each test a role of its own whose
password the test changes with ALTER ROLE. The provider reads the current password from a
file the test rewrites (tests/rotating_password.py), in the test's process and in real
worker processes alike.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from conveyor.db.embedded import EmbeddedPostgres
from tests import rotating_password
from tests.servers import own_server

PROVIDER = "tests.rotating_password:current"


@pytest.fixture(scope="module")
def scram_server() -> Iterator[EmbeddedPostgres]:
    with own_server("conveyor-test-creds-") as server:
        yield server


@dataclass
class Rotating:
    """A role and its database; `rotate()` changes the role's password, then the file."""

    admin_url: str
    role: str
    url: str  # no password in it: the provider gives it
    file: Path
    password: str
    rotations: int = 0

    def rotate(self) -> str:
        new = secrets.token_urlsafe(16)
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(self.role), sql.Literal(new)
                )
            )
        rotating_password.write(self.file, new)
        self.password = new
        self.rotations += 1
        return new

    def provider(self) -> dict[str, Any]:
        return {"password": self.file.read_text().strip()}

    def env(self, seconds: float = 3600) -> dict[str, str]:
        return {
            "CONVEYOR_DATABASE_URL": self.url,
            "CONVEYOR_DATABASE_CREDENTIALS": PROVIDER,
            "CONVEYOR_TEST_PASSWORD_FILE": str(self.file),
            "CONVEYOR_TEST_PASSWORD_SECONDS": str(seconds),
        }


@pytest.fixture
def rotating(scram_server: EmbeddedPostgres, tmp_path: Path) -> Iterator[Rotating]:
    role = f"rot_{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(16)
    with psycopg.connect(scram_server.url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(role), sql.Identifier(role)
            )
        )
    params = conninfo_to_dict(scram_server.url)
    params.pop("password", None)
    params.update(user=role, dbname=role)
    file = tmp_path / "password"
    rotating_password.write(file, password)
    yield Rotating(scram_server.url, role, make_conninfo("", **params), file, password)
    with psycopg.connect(scram_server.url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(role))
        )
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
