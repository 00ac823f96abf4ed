"""The json/jsonb loader of Conveyor's connections reads what PostgreSQL sends exactly as
the standard library would, and its errors are the standard library's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from psycopg import pq

from conveyor.db import jsonb
from conveyor.db.pool import Database

VALUES: list[Any] = [
    {},
    [],
    {"a": 1, "nested": {"list": [1, 2.5, None, True, False, "x"]}},
    {"big": 123456789012345678901234567890, "small": -(2**70), "exp": 1e-05, "huge": 2.5e300},
    {"text": 'quotes " and \\ backslashes, tabs\t, newlines\n, braces {} [], commas ,'},
    {"unicode": "Rechnungsempfänger — €, ₹, 日本語, emoji 🧾", "\u00e9": "key"},
    "a bare string",
    12,
    None,
]


@pytest.mark.parametrize("value", VALUES)
async def test_a_value_read_back_from_jsonb_and_json_is_the_value(
    database_url: str, value: Any
) -> None:
    db = Database(database_url, min_size=1, max_size=1)
    await db.open()
    try:
        async with db.connection() as conn:
            text = json.dumps(value)
            row = await (
                await conn.execute(
                    "SELECT %(t)s::text::jsonb AS b, %(t)s::text::jsonb::text AS b_text,"
                    " %(t)s::text::json AS j, ('  ' || %(t)s::text || ' ')::json AS w",
                    {"t": text},
                )
            ).fetchone()
    finally:
        await db.close()
    assert row is not None
    # jsonb normalises (2.5e300 comes back as 25 followed by 299 zeros, an int to json
    # too); json keeps the text as sent, surrounding whitespace included.
    assert row["b"] == json.loads(row["b_text"])
    assert row["j"] == value
    assert row["w"] == value


@pytest.mark.parametrize("bad", [b"", b"  ", b"{", b'{"a": 1} x', b"[1,]", b"NaNx"])
def test_what_is_not_json_raises_the_standard_librarys_error(bad: bytes) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        jsonb.loads(bad)
    with pytest.raises(json.JSONDecodeError) as stdlib:
        json.loads(bad)
    assert str(ours.value) == str(stdlib.value)


def test_memoryview_bytes_and_text_read_the_same() -> None:
    text = json.dumps(VALUES)
    data = text.encode()
    view: Any = memoryview(data)  # what jsonb's binary loader passes on
    assert jsonb.loads(view) == jsonb.loads(data) == jsonb.loads(text) == json.loads(data)


async def test_conveyors_connections_read_json_with_this_loader(database_url: str) -> None:
    db = Database(database_url, min_size=1, max_size=1)
    await db.open()
    try:
        async with db.connection() as conn:
            for name in ("json", "jsonb"):
                oid = conn.adapters.types[name].oid
                for fmt in (pq.Format.TEXT, pq.Format.BINARY):
                    loader = conn.adapters.get_loader(oid, fmt)
                    assert loader is not None
                    assert getattr(loader, "_loads", None) is jsonb.loads, (name, fmt)
    finally:
        await db.close()
