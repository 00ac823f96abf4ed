"""The rollup folder: finishing statements append deltas, the folder moves them into the
rollups. Concurrent folders fold each delta exactly once; a finish that commits while a fold
runs is neither lost nor counted twice; readers are exact before, during and after a fold;
a worker folds by itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, NewTask, queue
from conveyor.queue import Outcome
from conveyor.settings import Settings
from conveyor.worker import Worker
from conveyor.worker.rollup_fold import RollupFolder
from tests.conftest import one, wait_for
from tests.test_metrics import (
    BY_AGENT_ROLLED,
    BY_AGENT_SCRATCH,
    FOLDED,
    FROM_SCRATCH,
    HISTOGRAM_ROLLED,
    HISTOGRAM_SCRATCH,
    _rows,
    _workload,
    fold_all,
)

# The histogram tables alone, without the deltas not folded yet.
HISTOGRAM_FOLDED = HISTOGRAM_ROLLED.replace("task_histograms_exact", "task_histograms")
BY_AGENT_FOLDED = BY_AGENT_ROLLED.replace(
    "task_histograms_by_agent_exact", "task_histograms_by_agent"
)
# Completed tasks as a reader counts them (rollups and deltas), and in the rollups alone.
EXACT_COMPLETED = (
    "SELECT coalesce(sum(tasks), 0) FROM task_rollups_exact"
    " WHERE grain = 'h' AND status = 'completed'"
)
FOLDED_COMPLETED = EXACT_COMPLETED.replace("task_rollups_exact", "task_rollups")


async def _noop(task: Any) -> None:
    return None


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    app.agent("invoice", max_attempts=2, compute_usd_per_hour=0)(_noop)
    app.agent("contract", compute_usd_per_hour=0)(_noop)
    await app.database()
    yield app
    await app.aclose()


async def _connect(url: str, *, autocommit: bool = True) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(url, autocommit=autocommit, row_factory=dict_row)


async def _fold(conn: Any) -> int:
    return int(await one(conn, "SELECT conveyor_rollup_fold()"))


async def _finish_one(conn: Any, agent: str = "invoice") -> None:
    (task,) = await queue.claim(conn, worker_id="w", agents=[agent], limit=1)
    await queue.finish(conn, [Outcome(task.id, task.attempt, "succeeded", input_tokens=7)])


async def test_concurrent_folders_fold_each_delta_exactly_once(
    app: App, conn: Any, database_url: str
) -> None:
    """Four folders on their own connections fold over and over while four clients run a
    mixed workload (retries, sweeps, cancels, late usage): the rollup tables alone then
    equal a from-scratch aggregate, so no delta was folded twice or lost."""
    stop = asyncio.Event()
    folded: list[int] = []

    async def folder() -> None:
        async with await _connect(database_url) as c:
            while not stop.is_set():
                folded.append(await _fold(c))
                await asyncio.sleep(0.005)  # pacing only: the loop yields to the workload

    folders = [asyncio.create_task(folder()) for _ in range(4)]
    try:
        await asyncio.gather(*(_workload(database_url, seed, 25) for seed in range(4)))
    finally:
        stop.set()
        await asyncio.gather(*folders)
    while claimed := await queue.claim(
        conn, worker_id="end", agents=["contract", "invoice"], limit=50
    ):
        await queue.finish(
            conn, [Outcome(t.id, t.attempt, "succeeded", input_tokens=1) for t in claimed]
        )
    assert sum(folded) > 0  # they folded while the workload ran
    await fold_all(conn)

    expected = await _rows(conn, FROM_SCRATCH)
    assert expected
    for grain in ("d", "h"):
        assert await _rows(conn, FOLDED, grain) == expected
        assert await _rows(conn, HISTOGRAM_FOLDED, grain) == await _rows(conn, HISTOGRAM_SCRATCH)
        assert await _rows(conn, BY_AGENT_FOLDED, grain) == await _rows(conn, BY_AGENT_SCRATCH)


async def test_a_finish_committing_while_a_fold_runs_is_counted_once(
    app: App, conn: Any, database_url: str
) -> None:
    await app.enqueue_many_async([NewTask("invoice", {"n": n}) for n in range(3)])
    await _finish_one(conn)  # committed before the fold: a delta it folds
    async with (
        await _connect(database_url, autocommit=False) as folding,
        await _connect(database_url) as writer,
        await _connect(database_url) as other_folder,
    ):
        async with folding.transaction():
            assert await _fold(folding) > 0  # deleted the first finish's deltas, uncommitted
            # Another folder does not wait for this one: it finds the lock taken.
            assert await asyncio.wait_for(_fold(other_folder), timeout=10) == 0
            # A finish meanwhile: not blocked by the fold (no shared row), and counted by
            # readers at once, with the first one not yet moved.
            await asyncio.wait_for(_finish_one(writer), timeout=10)
            assert await one(conn, EXACT_COMPLETED) == 2
            assert await one(conn, FOLDED_COMPLETED) == 0
        # The fold committed: the first finish moved, the second is still a delta.
        assert await one(conn, FOLDED_COMPLETED) == 1
        assert await one(conn, EXACT_COMPLETED) == 2

        # The other order: a finish whose transaction is open while a fold commits.
        async with await _connect(database_url, autocommit=False) as late:
            async with late.transaction():
                await _finish_one(late)
                assert await asyncio.wait_for(_fold(other_folder), timeout=10) > 0
                assert await one(conn, EXACT_COMPLETED) == 2  # not committed: not counted
            assert await one(conn, EXACT_COMPLETED) == 3
            assert await one(conn, FOLDED_COMPLETED) == 2
    await fold_all(conn)
    assert await one(conn, FOLDED_COMPLETED) == 3
    assert await _rows(conn, FOLDED, "d") == await _rows(conn, FROM_SCRATCH)


async def test_the_folder_folds_and_vacuums_the_delta_tables(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("contract", {"n": n}) for n in range(3)])
    for _ in range(3):
        await _finish_one(conn, "contract")
    pending = await one(conn, "SELECT count(*) FROM task_rollup_deltas") + await one(
        conn, "SELECT count(*) FROM task_histogram_deltas"
    )
    db = await app.database()
    folder = RollupFolder(db, dead_rows=1)
    assert await folder.run_once() == pending
    assert folder.folded == pending
    assert await one(conn, FOLDED_COMPLETED) == 3
    await conn.execute("SELECT pg_stat_force_next_flush()")
    assert (
        await one(
            conn,
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'task_rollup_deltas'",
        )
        == 1
    )
    assert await folder.run_once() == 0  # nothing left


async def test_a_worker_folds_by_itself(app: App, conn: Any) -> None:
    await app.enqueue_many_async([NewTask("invoice", {"n": n}) for n in range(5)])
    worker = Worker(app, concurrency=2)
    running = asyncio.create_task(worker.run())
    try:
        await wait_for(
            lambda: one(conn, FOLDED_COMPLETED.replace("sum(tasks), 0)", "sum(tasks), 0) = 5")),
            what="the worker's folder moving the five finishes into the rollups",
        )
    finally:
        worker.stop()
        await running
    assert worker.folder is not None and worker.folder.folded > 0
