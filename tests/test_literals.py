"""The finish's array literals, read back by PostgreSQL as the values they were written from,
and a finish whose texts hold every character the literal grammar treats specially."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from conveyor import App, NewTask, queue
from conveyor.queue.exchange import _TEXT_COLUMNS, _arrays
from conveyor.queue.literals import number_array, text_array
from conveyor.queue.records import Outcome
from conveyor.settings import Settings

TEXTS: list[str | None] = [
    "",
    "NULL",
    "null",
    None,
    'quotes " and \\ backslashes \\" together',
    "{braces}, [brackets], commas, ,",
    " leading and trailing whitespace ",
    "tab\t newline\n carriage return\r",
    "Rechnungsempfänger — €, ₹, 日本語, 🧾",
    '{"a": [1, "x\\"y"], "b": null}',
]
NUMBERS: list[Any] = [0, -1, 2**62, 1.5, 1e-05, 2.5e300, -0.0, None, 3]


async def test_text_and_number_literals_read_back_as_written(conn: Any) -> None:
    row = await (
        await conn.execute(
            "SELECT %(t)s::text[] AS t, %(i)s::bigint[] AS i, %(f)s::float8[] AS f,"
            " %(n)s::numeric[] AS n, %(j)s::text[]::jsonb[] AS j",
            {
                "t": text_array(TEXTS),
                "i": number_array([1, None, 2**62, -5]),
                "f": number_array(NUMBERS),
                "n": number_array([0.1, None, 12.3456789, 1e-05]),
                "j": text_array(['{"a": [1, "x\\"y"]}', None, "[]", '"\\\\"']),
            },
        )
    ).fetchone()
    assert row["t"] == TEXTS
    assert row["i"] == [1, None, 2**62, -5]
    assert row["f"] == [None if v is None else float(v) for v in NUMBERS]
    assert [None if v is None else float(v) for v in row["n"]] == [0.1, None, 12.3456789, 1e-05]
    assert row["j"] == [{"a": [1, 'x"y']}, None, [], "\\"]


async def test_infinities_and_nan_are_float8_values(conn: Any) -> None:
    row = await (
        await conn.execute(
            "SELECT %(f)s::float8[] AS f", {"f": number_array([math.inf, -math.inf, math.nan])}
        )
    ).fetchone()
    assert row["f"][:2] == [math.inf, -math.inf] and math.isnan(row["f"][2])


def test_empty_and_all_null_arrays() -> None:
    assert number_array([]) == "{}" and text_array([]) == "{}"
    assert number_array([None, None]) == "{NULL,NULL}"
    assert text_array([None]) == "{NULL}"


def test_every_column_of_a_finish_is_written_as_text_or_as_numbers() -> None:
    """A column added to _arrays later is a number column unless _TEXT_COLUMNS names it: a
    text column left out would be written unquoted and fail (or change) at the server."""
    every_field = Outcome(
        1, 1, "failed", result="{}", error="e", retry_delay=1.0, model="m", input_tokens=1,
        output_tokens=2, started_after=0.5, trace_id="t", llm_cost_usd=0.01,
        compute_usd_per_hour=1.0, run_id="r", since_last_call=0.1,
        claim_token="9f0c6a52-1d55-4d0e-9a3b-6f3f1b2c7d10",
    )  # fmt: skip
    columns = _arrays([every_field])
    assert set(columns) >= _TEXT_COLUMNS
    for name, (value,) in columns.items():
        assert value is not None, f"{name}: a field the test does not set"
        kind = str if name in _TEXT_COLUMNS else int | float
        assert isinstance(value, kind), name


@pytest.fixture
async def app(settings: Settings) -> Any:
    app = App(settings=settings)

    @app.agent("noop", max_attempts=1)
    async def noop(task: Any) -> None: ...

    await app.database()
    yield app
    await app.aclose()


async def test_a_finish_stores_texts_with_every_special_character(app: App, conn: Any) -> None:
    texts = [t for t in TEXTS if t]
    await app.enqueue_many_async([NewTask("noop", {}) for _ in texts])
    claimed = await queue.claim(conn, worker_id="w", agents=["noop"], limit=len(texts))
    assert len(claimed) == len(texts)
    outcomes = [
        Outcome(c.id, c.attempt, "failed", error=text, model=text, trace_id=text)
        for c, text in zip(claimed, texts, strict=True)
    ]
    finished = await queue.finish(conn, outcomes)
    assert all(f.applied for f in finished)
    rows = await (
        await conn.execute(
            "SELECT task_id, error, model, trace_id FROM task_attempts WHERE task_id = ANY(%s)",
            [[c.id for c in claimed]],
        )
    ).fetchall()
    wrote = {c.id: t for c, t in zip(claimed, texts, strict=True)}
    assert len(rows) == len(texts)
    for r in rows:
        assert r["error"] == r["model"] == r["trace_id"] == wrote[r["task_id"]]


@pytest.mark.parametrize("result", ['{"a": "x\\"y", "b": "\\\\", "c": "{1,2}"}', "null", '"NULL"'])
async def test_a_finish_stores_a_result_exactly(app: App, conn: Any, result: str) -> None:
    (task_id,) = await app.enqueue_many_async([NewTask("noop", {})])
    (task,) = await queue.claim(conn, worker_id="w", agents=["noop"], limit=1)
    assert task.id == task_id
    (done,) = await queue.finish(conn, [Outcome(task.id, task.attempt, "succeeded", result=result)])
    assert done.applied
    row = await (await conn.execute("SELECT result FROM tasks WHERE id = %s", [task.id])).fetchone()
    assert row["result"] == json.loads(result)
