"""Cost per attempt: LLM cost from the model's price, compute cost from wall time."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from decimal import Decimal
from typing import Any

import pytest

from conveyor import App, Task, TaskStatus
from conveyor.llm.pricing import Price, Pricer, parse_prices
from conveyor.settings import Settings, SettingsError
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running


def test_a_known_model_has_a_price() -> None:
    cost = Pricer().cost("gpt-4o-mini", 1_000_000, 1_000_000)
    assert cost is not None and cost > 0
    # Output tokens cost more than input tokens for this model, as published.
    assert Pricer().cost("gpt-4o-mini", 0, 1000) > Pricer().cost("gpt-4o-mini", 1000, 0)  # type: ignore[operator]


def test_an_unknown_model_costs_none_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    pricer = Pricer()
    with caplog.at_level(logging.WARNING, logger="conveyor.llm.pricing"):
        assert pricer.cost("no-such-model-xyz", 100, 10) is None
        assert pricer.cost("no-such-model-xyz", 200, 20) is None
        assert pricer.total({"gpt-4o-mini": (1, 1), "no-such-model-xyz": (1, 1)}) is None
    warnings = [r for r in caplog.records if "no price known" in r.getMessage()]
    assert len(warnings) == 1


def test_an_override_wins_and_is_exact() -> None:
    prices = parse_prices('{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}')
    assert prices == {"my-model": Price(Decimal("0.5"), Decimal("1.5"))}
    pricer = Pricer(prices)
    assert pricer.cost("my-model", 2_000_000, 1_000_000) == Decimal("2.5")
    # It also wins over a model genai-prices knows.
    pricer = Pricer(parse_prices('{"gpt-4o-mini": {"input_per_mtok": 0, "output_per_mtok": 0}}'))
    assert pricer.cost("gpt-4o-mini", 1000, 1000) == 0


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1]",
        '{"m": {"input_per_mtok": 1}}',
        '{"m": {"input_per_mtok": -1, "output_per_mtok": 1}}',
        '{"m": {"input_per_mtok": "1", "output_per_mtok": 1}}',
    ],
)
def test_bad_price_overrides_are_refused_clearly(text: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("CONVEYOR_LLM_PRICES", text)
    with pytest.raises(SettingsError, match="CONVEYOR_LLM_PRICES"):
        Settings.from_env()


async def test_an_attempt_gets_its_llm_and_compute_cost(settings: Settings, conn: Any) -> None:
    settings = dataclasses.replace(
        settings,
        llm_prices='{"priced": {"input_per_mtok": 1000000, "output_per_mtok": 2000000}}',
        compute_usd_per_hour=3600.0,  # a dollar a second: the cost is the wall time
    )
    app = App(settings=settings)

    @app.agent("spend")
    async def spend(task: Task) -> str:
        task.report_usage(model="priced", input_tokens=3, output_tokens=1)
        task.report_usage(model="priced", input_tokens=2, output_tokens=0)
        await asyncio.sleep(0.3)
        return "ok"

    @app.agent("unpriced", compute_usd_per_hour=0)
    async def unpriced(task: Task) -> str:
        task.report_usage(model="no-such-model-xyz", input_tokens=3, output_tokens=1)
        return "ok"

    try:
        spent = await app.enqueue_async("spend")
        free = await app.enqueue_async("unpriced")
        async with Running(Worker(app, concurrency=2)):
            await wait_for(
                lambda: _done(app, [spent, free]), what="both tasks completed", timeout=15
            )
        (attempt,) = (await app.get_task_async(spent)).attempt_history
        assert attempt.llm_cost_usd == pytest.approx(5 * 1 + 1 * 2)
        cur = await conn.execute(
            "SELECT extract(epoch FROM finished_at - started_at) AS secs, compute_cost_usd "
            "FROM task_attempts WHERE task_id = %s",
            (spent,),
        )
        row = await cur.fetchone()
        # The agent slept 0.3 s: the cost is the attempt's own wall time at $1/s.
        assert float(row["compute_cost_usd"]) == pytest.approx(float(row["secs"]), abs=2e-6)
        assert float(row["compute_cost_usd"]) >= 0.3
        (other,) = (await app.get_task_async(free)).attempt_history
        assert other.llm_cost_usd is None  # unknown model: unknown cost, not zero
        assert other.compute_cost_usd == 0  # the agent's own rate wins over the default
    finally:
        await app.aclose()


async def _done(app: App, ids: list[int]) -> bool:
    return all([(await app.get_task_async(i)).status == TaskStatus.COMPLETED for i in ids])


async def test_swept_cancelled_and_called_back_attempts_are_charged_too(
    app: App, conn: Any
) -> None:
    """Attempts that no worker finishes (swept, cancelled, ended by an external job's
    callback, which knows no rate) get their compute cost from the agent's row."""
    from conveyor import queue
    from conveyor.queue import Outcome

    app.agent("slow", compute_usd_per_hour=3600.0)(_noop)
    lost = await app.enqueue_async("slow")
    cancelled = await app.enqueue_async("slow")
    called_back = await app.enqueue_async("slow")
    db = await app.database()
    async with db.connection() as c:
        claimed = await queue.claim(c, worker_id="w", agents=["slow"], limit=3)
    assert {t.id for t in claimed} == {lost, cancelled, called_back}
    # Backdate: each attempt began 10 s ago, and the first one's lease ran out.
    await conn.execute(
        "UPDATE task_attempts SET started_at = now() - interval '10 seconds' "
        "WHERE task_id = ANY(%s)",
        ([lost, cancelled, called_back],),
    )
    await conn.execute(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE id = %s", (lost,)
    )
    async with db.connection() as c:
        await queue.sweep(c)
        await queue.finish(c, [Outcome(called_back, 1, "succeeded", result="1")])
    await app.cancel_async(cancelled)
    for task_id in (lost, cancelled, called_back):
        (attempt,) = (await app.get_task_async(task_id)).attempt_history
        assert attempt.status in {"lost", "cancelled", "succeeded"}
        assert 10 <= float(attempt.compute_cost_usd or 0) < 20


async def _noop(task: Task) -> None:
    return None
