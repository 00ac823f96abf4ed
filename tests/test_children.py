"""Child tasks (docs/children.md): fan-out, fan-in exactly once, failure policies, retry,
cancel, cost of a tree, bad input. In-process workers here; real worker processes and
SIGKILLs in tests/test_children_processes.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from conveyor import App, Child, PermanentFailure, Spawn, Task, TaskStatus, queue
from conveyor.db.migrate import migrate
from conveyor.queue import AttemptOutcome, InvalidSpawn, Outcome
from conveyor.settings import Settings
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.test_worker import Running

FAILED_ONCE: set[str] = set()


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[App]:
    app = App(settings=settings)
    app.runs = []  # type: ignore[attr-defined]
    app.gate = asyncio.Event()  # type: ignore[attr-defined]

    @app.agent("square")
    async def square(task: Task) -> int:
        task.report_usage(model="tiny", input_tokens=10, output_tokens=5)
        n = task.payload["n"]
        if n < 0:
            raise PermanentFailure(f"no square of {n}")
        if task.payload.get("fail_once") and task.payload["fail_once"] not in FAILED_ONCE:
            FAILED_ONCE.add(task.payload["fail_once"])
            raise PermanentFailure("the first run of this child fails")
        return int(n * n)

    @app.agent("blocked")
    async def blocked(task: Task) -> int:
        await app.gate.wait()  # type: ignore[attr-defined]
        return 0

    @app.agent("sum", max_concurrent=1)
    async def total(task: Task) -> Any:
        """Spawns one square per n, then adds them up."""
        app.runs.append(task.id)  # type: ignore[attr-defined]
        task.report_usage(model="tiny", input_tokens=1, output_tokens=1)
        children = await task.children()
        if not children or not all(c.succeeded for c in children):
            agent = task.payload.get("agent", "square")
            return Spawn(
                [
                    Child(agent, {"n": n, **task.payload.get("extra", {})}, key=f"n{n}")
                    for n in task.payload["ns"]
                ],
                on_failure=task.payload.get("on_failure", "fail"),
            )
        return {"sum": sum(c.result for c in children), "keys": [c.key for c in children]}

    @app.agent("collector")
    def collector(task: Task) -> Any:
        """A plain def parent that collects its children's failures."""
        children = task.children_sync()
        if not children:
            return Spawn(
                [Child("square", {"n": n}, key=str(n)) for n in (2, -1)], on_failure="collect"
            )
        return {c.key: [c.status, c.result] for c in children}

    @app.agent("spawner")
    async def spawner(task: Task) -> Any:
        """Returns whatever Spawn its payload describes (the bad-input cases)."""
        if await task.children():
            return "done"
        children = [
            {**c, "payload": object()} if c.get("payload") == "an object" else c
            for c in task.payload["children"]
        ]
        return Spawn([Child(**c) for c in children])

    yield app
    await app.aclose()


async def _status(app: App, task_id: int) -> TaskStatus:
    return (await app.get_task_async(task_id)).status


async def _children(conn: Any, parent: int) -> list[dict[str, Any]]:
    cur = await conn.execute("SELECT * FROM tasks WHERE parent_id = %s ORDER BY id", (parent,))
    return list(await cur.fetchall())


async def test_a_parent_fans_out_and_runs_again_with_its_childrens_results(
    app: App, conn: Any
) -> None:
    parent = await app.enqueue_async(
        "sum", {"ns": [1, 2, 3, 4]}, priority=7, tenant="acme", labels={"case": "c1"}
    )
    async with Running(Worker(app, concurrency=4)):
        await wait_for(
            lambda: _is(app, parent, TaskStatus.COMPLETED), timeout=20, what="the parent done"
        )
    task = await app.get_task_async(parent)
    assert task.result == {"sum": 30, "keys": ["n1", "n2", "n3", "n4"]}
    assert [a.status for a in task.attempt_history] == ["spawned", "succeeded"]
    assert app.runs == [parent, parent]  # type: ignore[attr-defined]
    kids = await _children(conn, parent)
    assert [(k["child_key"], k["status"], k["depth"]) for k in kids] == [
        (f"n{n}", "completed", 1) for n in (1, 2, 3, 4)
    ]
    # Inherited: tenant, labels, priority.
    assert {(k["tenant"], k["priority"], k["labels"]["case"]) for k in kids} == {("acme", 7, "c1")}
    family = task.children
    assert family is not None
    assert (family.total, family.done, family.failed, family.waiting) == (4, 4, 0, False)
    # The tree's usage: the parent's two attempts (1 + 1 each) and four children (10 + 5).
    assert (family.input_tokens, family.output_tokens) == (2 + 40, 2 + 20)
    child = await app.get_task_async(kids[0]["id"])
    assert child.children is not None and child.children.parent_id == parent


async def _count(cur: Any) -> int:
    row = await cur.fetchone()
    return int(row["n"])


async def _is(app: App, task_id: int, status: TaskStatus) -> bool:
    return await _status(app, task_id) == status


async def test_a_waiting_parent_holds_no_lease_no_worker_and_no_slot(app: App, conn: Any) -> None:
    # "sum" allows one attempt at a time: the second parent runs while the first waits.
    first = await app.enqueue_async("sum", {"ns": [1], "agent": "blocked"})
    second = await app.enqueue_async("sum", {"ns": [2], "agent": "blocked"})
    async with Running(Worker(app, concurrency=4)):

        async def both_waiting() -> bool:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM tasks WHERE waiting_since IS NOT NULL "
                "AND status = 'processing' AND lease_expires_at IS NULL AND locked_by IS NULL"
            )
            return await _count(cur) == 2

        await wait_for(both_waiting, timeout=20, what="both parents waiting")
        waiting = await app.get_task_async(first)
        assert waiting.status == TaskStatus.PROCESSING
        assert waiting.children is not None and waiting.children.waiting
        assert (waiting.children.total, waiting.children.done) == (1, 0)
        app.gate.set()  # type: ignore[attr-defined]
        await wait_for(
            lambda: _is(app, second, TaskStatus.COMPLETED), timeout=20, what="second done"
        )
        await wait_for(lambda: _is(app, first, TaskStatus.COMPLETED), what="first done")


async def test_a_failed_child_fails_the_parent_and_a_retry_reruns_only_that_child(
    app: App, conn: Any
) -> None:
    # The first of the children to run fails (on its first run only).
    FAILED_ONCE.discard("t3-n2")
    parent = await app.enqueue_async(
        "sum", {"ns": [1, 2, 3], "extra": {"fail_once": "t3-n2"}, "on_failure": "fail"}
    )
    async with Running(Worker(app, concurrency=4)):
        await wait_for(lambda: _is(app, parent, TaskStatus.FAILED), timeout=20, what="failed")
        failed = await app.get_task_async(parent)
        assert failed.error is not None and failed.error.startswith("child task ")
        assert "failed" in failed.error and "first run of this child fails" in failed.error
        assert [a.status for a in failed.attempt_history] == ["spawned"], "not run again"
        before = {k["child_key"]: k["attempts"] for k in await _children(conn, parent)}
        await app.retry_async(parent)
        await wait_for(lambda: _is(app, parent, TaskStatus.COMPLETED), timeout=20, what="completed")
    kids = {k["child_key"]: k for k in await _children(conn, parent)}
    assert len(kids) == 3
    # Only the failed child ran again; the others kept their one attempt.
    assert {k: v["attempts"] for k, v in kids.items()} == {
        key: attempts + (key == _failed_key(before, kids)) for key, attempts in before.items()
    }
    assert (await app.get_task_async(parent)).result["sum"] == 14


def _failed_key(before: dict[str, int], kids: dict[str, Any]) -> str:
    (key,) = [k for k in kids if kids[k]["attempts"] != before[k]]
    return key


async def test_collect_hands_the_failures_to_a_plain_def_parent(app: App) -> None:
    parent = await app.enqueue_async("collector", {})
    async with Running(Worker(app, concurrency=4)):
        await wait_for(lambda: _is(app, parent, TaskStatus.COMPLETED), timeout=20, what="done")
    assert (await app.get_task_async(parent)).result == {
        "2": ["completed", 4],
        "-1": ["failed", None],
    }


async def test_cancel_of_a_waiting_parent_cancels_its_running_children(app: App, conn: Any) -> None:
    parent = await app.enqueue_async("sum", {"ns": [1, 2, 3], "agent": "blocked"})
    async with Running(Worker(app, concurrency=4)) as worker:

        async def children_running() -> bool:
            kids = await _children(conn, parent)
            return len(kids) == 3 and all(k["status"] == "processing" for k in kids)

        await wait_for(children_running, timeout=20, what="children running")
        await wait_for(lambda: len(worker.slots.running) == 3, what="their agents started")
        cancelled = await app.cancel_async(parent)
        assert cancelled.status == TaskStatus.CANCELLED
        await wait_for(lambda: not worker.slots.running, what="the agents stopped")
    kids = await _children(conn, parent)
    assert {k["status"] for k in kids} == {"cancelled"}
    cur = await conn.execute(
        "SELECT status FROM task_attempts WHERE task_id = ANY(%s)", ([k["id"] for k in kids],)
    )
    assert {r["status"] for r in await cur.fetchall()} == {"cancelled"}
    assert app.runs == [parent], "a cancelled parent is not run again"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("children", "message"),
    [
        ([{"agent": "nobody", "key": "a"}], "unknown agent 'nobody'"),
        ([{"agent": "square", "key": "a"}, {"agent": "square", "key": "a"}], "two children"),
        ([{"agent": "square", "key": ""}], "key must be a string of 1 to 255"),
        ([{"agent": "square", "key": "a", "payload": "an object"}], "not JSON"),
        ([{"agent": "square", "key": "a", "priority": 99999}], "priority must be between"),
        ([], "at least one child"),
    ],
)
async def test_a_bad_spawn_fails_the_parent_for_good_and_writes_no_child(
    app: App, conn: Any, children: list[dict[str, Any]], message: str
) -> None:
    parent = await app.enqueue_async("spawner", {"children": children})
    async with Running(Worker(app, concurrency=2)):
        await wait_for(lambda: _is(app, parent, TaskStatus.FAILED), timeout=20, what="failed")
    task = await app.get_task_async(parent)
    assert message in (task.error or "")
    assert "InvalidSpawn" in (task.error or "")
    assert [a.status for a in task.attempt_history] == ["failed"], "no retry"
    assert await _children(conn, parent) == []


async def test_a_child_repeating_its_ancestor_is_a_cycle(app: App, conn: Any) -> None:
    # The child "spawner"/"loop" would spawn "spawner"/"loop" again, for ever.
    parent = await app.enqueue_async(
        "spawner",
        {
            "children": [
                {
                    "agent": "spawner",
                    "key": "loop",
                    "payload": {
                        "children": [
                            {"agent": "spawner", "key": "loop", "payload": {"children": []}}
                        ]
                    },
                }
            ]
        },
    )
    async with Running(Worker(app, concurrency=2)):
        await wait_for(lambda: _is(app, parent, TaskStatus.FAILED), timeout=20, what="failed")
    (child,) = await _children(conn, parent)
    assert child["status"] == "failed" and "a cycle" in child["error"]
    assert await _children(conn, child["id"]) == []
    assert "child task" in ((await app.get_task_async(parent)).error or "")


async def test_depth_is_bounded(app: App, conn: Any) -> None:
    parent = await app.enqueue_async("spawner", {"children": [{"agent": "square", "key": "a"}]})
    await conn.execute("UPDATE tasks SET depth = %s WHERE id = %s", (queue.MAX_DEPTH, parent))
    async with Running(Worker(app, concurrency=2)):
        await wait_for(lambda: _is(app, parent, TaskStatus.FAILED), timeout=20, what="failed")
    assert "deeper than 8 levels" in ((await app.get_task_async(parent)).error or "")


def test_spawn_checks_its_children_where_the_agent_builds_it() -> None:
    with pytest.raises(InvalidSpawn, match="not a Child"):
        Spawn(["square"])  # type: ignore[list-item]
    with pytest.raises(InvalidSpawn, match="on_failure"):
        Spawn([Child("square", key="a")], on_failure="ignore")  # type: ignore[arg-type]


async def test_a_spawn_is_fenced_and_a_repeat_spawns_nothing_twice(app: App, conn: Any) -> None:
    """The outcome that spawns is written like any other: a repeat of it (the worker did
    not hear the commit) changes nothing, and one from an attempt that lost its task
    inserts no child."""
    await app.enqueue_async("sum", {"ns": [1]})
    async with app.connection() as c:
        (claimed,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        spawn = Spawn([Child("square", {"n": 3}, key="k3"), Child("square", {"n": 4}, key="k4")])
        outcome = Outcome(
            claimed.id, claimed.attempt, AttemptOutcome.SPAWNED, result=queue.spawn_json(spawn)
        )
        (first,) = await queue.finish(c, [outcome])
        assert first.applied
        assert await queue.finish(c, [outcome]) == [], "a repeat is not applied again"
        assert len(await _children(conn, claimed.id)) == 2
        row = await (
            await conn.execute(
                "SELECT children_open, waiting_since IS NOT NULL AS w FROM tasks WHERE id = %s",
                (claimed.id,),
            )
        ).fetchone()
        assert (row["children_open"], row["w"]) == (2, True)

        # Another parent, cancelled while its attempt runs: its spawn arrives late.
        late = await app.enqueue_async("sum", {"ns": [1]})
        (running,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        assert running.id == late
        await app.cancel_async(late)
        (result,) = await queue.finish(
            c,
            [
                Outcome(
                    late, running.attempt, AttemptOutcome.SPAWNED, result=queue.spawn_json(spawn)
                )
            ],
        )
        assert not result.applied
        assert await _children(conn, late) == []


async def test_the_last_two_children_ending_together_wake_the_parent_once(
    app: App, conn: Any
) -> None:
    """Two transactions end a parent's last two children at the same moment: the first
    to take the parent's row counts the other's child as open, the second wakes it."""
    parent = await app.enqueue_async("sum", {"ns": [1, 2]})
    async with app.connection() as c:
        (claimed,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        spawn = Spawn([Child("square", {"n": 1}, key="a"), Child("square", {"n": 2}, key="b")])
        await queue.finish(
            c,
            [
                Outcome(
                    parent, claimed.attempt, AttemptOutcome.SPAWNED, result=queue.spawn_json(spawn)
                )
            ],
        )
        kids = await queue.claim(c, worker_id="w", agents=["square"], limit=2)
    assert len(kids) == 2
    db = await app.database()
    # Each child's outcome in its own transaction, both waiting on the parent's row, held
    # here until both have ended their child.
    await conn.execute("BEGIN")
    await conn.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (parent,))

    async def finish(kid: queue.ClaimedTask) -> None:
        async with db.connection() as c:
            await queue.finish(
                c, [Outcome(kid.id, kid.attempt, AttemptOutcome.SUCCEEDED, result="1")]
            )

    ends = [asyncio.create_task(finish(k)) for k in kids]

    async def both_wait() -> bool:
        # From a connection of its own: inside a transaction, pg_stat_activity is a
        # snapshot taken at its first read.
        async with db.connection() as look:
            cur = await look.execute(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            return await _count(cur) == 2

    await wait_for(both_wait, what="both ends waiting for the parent's row")
    async with await psycopg.AsyncConnection.connect(app.database_url, autocommit=True) as listen:
        await listen.execute("LISTEN conveyor")
        await conn.execute("COMMIT")
        await asyncio.gather(*ends)
        await conn.execute("NOTIFY conveyor, 'the end'")  # delivered after the others
        woken = 0
        async for note in listen.notifies(timeout=10):
            if note.payload == "the end":
                break
            message = json.loads(note.payload)
            woken += message["status"] == "enqueued" and parent in message.get("ids", [])
    assert woken == 1, "the parent was enqueued exactly once"
    task = await app.get_task_async(parent)
    assert task.status == TaskStatus.ENQUEUED
    row = await (
        await conn.execute(
            "SELECT waiting_since, children_open FROM tasks WHERE id = %s", (parent,)
        )
    ).fetchone()
    assert (row["waiting_since"], row["children_open"]) == (None, 0)


async def test_a_parents_children_are_read_by_their_index(conn: Any) -> None:
    """The fan-in counts a parent's children at every child's end, and the task page reads
    them: by tasks_children_idx, among many tasks that are nobody's children."""
    await conn.execute("INSERT INTO agents (name) VALUES ('a')")
    await conn.execute(
        """INSERT INTO tasks (agent, status, parent_id, child_key, root_id)
           SELECT 'a', 'completed', CASE WHEN g % 100 = 0 THEN g / 1000 + 1 END,
                  CASE WHEN g % 100 = 0 THEN 'k' || g END,
                  CASE WHEN g % 100 = 0 THEN g / 1000 + 1 END
           FROM generate_series(1, 20000) g"""
    )
    await conn.execute("ANALYZE tasks")
    for query in (
        "SELECT count(*) FROM tasks WHERE parent_id = 3 AND status IN ('enqueued', 'processing')",
        "SELECT id, child_key FROM tasks WHERE parent_id = 3 ORDER BY id",
        # The walk down a tree (the cancel, the summary): inlined, by parent at every level.
        "SELECT id FROM conveyor_tree(3)",
    ):
        cur = await conn.execute(psycopg.sql.SQL("EXPLAIN (FORMAT JSON) " + query))
        plan = json.dumps((await cur.fetchone())["QUERY PLAN"])
        assert "tasks_children_idx" in plan and "Seq Scan" not in plan, plan


async def _spawn(c: Any, claimed: queue.ClaimedTask, *children: Child) -> None:
    """End a claimed attempt by spawning `children`, as the worker reports it."""
    spawn = queue.spawn_json(Spawn(list(children)))
    outcome = Outcome(claimed.id, claimed.attempt, AttemptOutcome.SPAWNED, result=spawn)
    (ended,) = await queue.finish(c, [outcome])
    assert ended.applied


async def test_every_child_knows_the_root_of_its_tree(app: App, conn: Any) -> None:
    """tasks.root_id, written by the spawn: a tree's tasks are `id = R OR root_id = R`,
    found by tasks_root_idx, whatever their depth."""
    root = await app.enqueue_async("sum", {"ns": [1]})
    async with app.connection() as c:
        (claimed,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        await _spawn(c, claimed, Child("sum", key="mid"), Child("square", {"n": 1}, key="leaf"))
        (mid,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        await _spawn(c, mid, Child("square", {"n": 2}, key="deep"))
    cur = await conn.execute(
        "SELECT child_key, depth, root_id FROM tasks ORDER BY id", prepare=False
    )
    assert [tuple(r.values()) for r in await cur.fetchall()] == [
        (None, 0, None),
        ("mid", 1, root),
        ("leaf", 1, root),
        ("deep", 2, root),
    ]
    # With four rows a sequential scan is cheapest; the index is what a planner without
    # sequential scans must take.
    await conn.execute("SET enable_seqscan = off")
    cur = await conn.execute(
        "EXPLAIN (FORMAT JSON) SELECT id FROM tasks WHERE id = %s OR root_id = %s",
        (root, root),
    )
    plan = json.dumps((await cur.fetchone())["QUERY PLAN"])
    assert "tasks_root_idx" in plan, plan


async def test_the_migration_gives_existing_children_their_root(server_url: str) -> None:
    """A database whose trees were spawned before tasks.root_id: migration 0012 finds each
    child's root by walking up, also past a pruned ancestor (the last id named)."""
    from tests.test_migrations import apply_like_an_older_conveyor, scratch_database

    async with scratch_database(server_url) as old:
        await apply_like_an_older_conveyor(old, "0011_reviews")
        await old.execute("INSERT INTO agents (name) VALUES ('a')")
        # 1 <- 2 <- 3 <- 4, and 5 alone; 7 <- 8 whose 7's parent, 6, was pruned.
        await old.execute(
            """INSERT INTO tasks (id, agent, status, parent_id, child_key, depth)
               OVERRIDING SYSTEM VALUE VALUES
               (1, 'a', 'processing', NULL, NULL, 0), (2, 'a', 'processing', 1, 'b', 1),
               (3, 'a', 'processing', 2, 'c', 2), (4, 'a', 'enqueued', 3, 'd', 3),
               (5, 'a', 'completed', NULL, NULL, 0),
               (7, 'a', 'processing', 6, 'g', 1), (8, 'a', 'completed', 7, 'h', 2)"""
        )
        await migrate(old)
        cur = await old.execute("SELECT id, root_id FROM tasks ORDER BY id")
        assert [tuple(r.values()) for r in await cur.fetchall()] == [
            (1, None),
            (2, 1),
            (3, 1),
            (4, 1),
            (5, None),
            (7, 6),
            (8, 6),
        ]
        with pytest.raises(psycopg.errors.CheckViolation):
            await old.execute(
                "INSERT INTO tasks (agent, parent_id, child_key, depth) VALUES ('a', 1, 'z', 1)"
            )


async def _tree_rows(conn: Any, root: int) -> dict[str, str]:
    cur = await conn.execute(
        "SELECT coalesce(child_key, 'root') AS key, status FROM tasks"
        " WHERE id = %s OR root_id = %s ORDER BY id",
        (root, root),
    )
    return {r["key"]: r["status"] for r in await cur.fetchall()}


async def _mid_attempt_child(app: App) -> tuple[int, queue.ClaimedTask]:
    """A tree: a waiting root whose child "mid" is in the middle of an attempt."""
    root = await app.enqueue_async("sum", {"ns": [1]})
    async with app.connection() as c:
        (claimed,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
        await _spawn(c, claimed, Child("sum", key="mid"))
        (mid,) = await queue.claim(c, worker_id="w", agents=["sum"], limit=1)
    return root, mid


def _grandchildren(mid: queue.ClaimedTask) -> list[Outcome]:
    spawn = Spawn([Child("square", {"n": n}, key=f"g{n}") for n in (1, 2)])
    return [Outcome(mid.id, mid.attempt, AttemptOutcome.SPAWNED, result=queue.spawn_json(spawn))]


async def test_a_spawn_that_arrives_after_its_trees_cancel_inserts_nothing(
    app: App, conn: Any
) -> None:
    root, mid = await _mid_attempt_child(app)
    await app.cancel_async(root)
    async with app.connection() as c:
        (late,) = await queue.finish(c, _grandchildren(mid))
    assert not late.applied
    assert await _tree_rows(conn, root) == {"root": "cancelled", "mid": "cancelled"}


async def test_a_spawn_committed_while_its_tree_is_being_cancelled_is_cancelled_too(
    app: App, conn: Any
) -> None:
    """The race: the child's spawn is in flight when the cancel starts. The cancel's first
    walk of the tree waits for the child's row, which the spawn holds; the spawn commits,
    the child waits for its new children, and the cancel cancels it, but that walk's
    snapshot was taken before the grandchildren existed. They must not stay runnable."""
    root, mid = await _mid_attempt_child(app)
    db = await app.database()
    async with db.connection() as worker, worker.transaction():
        (spawned,) = await queue.finish(worker, _grandchildren(mid))
        assert spawned.applied
        cancel = asyncio.create_task(app.cancel_async(root))

        async def cancel_waits() -> bool:
            async with db.connection() as look:
                cur = await look.execute(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = "
                    "'Lock' AND datname = current_database()"
                )
                return await _count(cur) == 1

        await wait_for(cancel_waits, what="the cancel waiting for the child's row")
    cancelled = await cancel
    assert cancelled.status == TaskStatus.CANCELLED
    assert await _tree_rows(conn, root) == {
        "root": "cancelled",
        "mid": "cancelled",
        "g1": "cancelled",
        "g2": "cancelled",
    }


async def test_the_walk_down_a_tree_ends_within_the_depth_bound(conn: Any) -> None:
    """conveyor_tree() goes down only to deeper rows: its bound is tasks.depth's check, the
    same number as MAX_DEPTH; even rows whose parents loop (no spawn writes those) end it."""
    cur = await conn.execute(
        "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint"
        " WHERE conrelid = 'tasks'::regclass AND conname = 'tasks_depth_check'"
    )
    assert f"(depth <= {queue.MAX_DEPTH})" in (await cur.fetchone())["def"]
    await conn.execute("INSERT INTO agents (name) VALUES ('a')")
    cur = await conn.execute(
        """INSERT INTO tasks (agent, parent_id, child_key, root_id, depth)
           SELECT 'a', 1, 'k' || g, 1, g FROM generate_series(0, 3) g RETURNING id"""
    )
    ids = [r["id"] for r in await cur.fetchall()]
    # 1 -> 2 -> 3 -> 4 -> 1 by parent_id, at depths 0, 1, 2, 3.
    await conn.execute(
        "UPDATE tasks SET parent_id = CASE WHEN id = %s THEN %s ELSE id - 1 END",
        (ids[0], ids[-1]),
    )
    cur = await conn.execute("SELECT id FROM conveyor_tree(%s) ORDER BY id", (ids[0],))
    assert [r["id"] for r in await cur.fetchall()] == ids
    cur = await conn.execute("SELECT id FROM conveyor_tree(%s) ORDER BY id", (ids[2],))
    assert [r["id"] for r in await cur.fetchall()] == ids[2:]


async def test_a_cancel_aborted_as_a_deadlocks_victim_starts_over(app: App, conn: Any) -> None:
    """PostgreSQL breaks a deadlock by aborting one side; when that is the cancel, it starts
    over instead of failing. The other side here takes the tree's rows in the opposite order
    (the parent, then the child), and waits longer than the cancel before it looks for a
    deadlock, so the cancel is the one aborted, deterministically."""
    root, mid = await _mid_attempt_child(app)
    db = await app.database()
    async with db.connection() as other:
        await other.execute("SET deadlock_timeout = '60s'")
        async with other.transaction():
            await other.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (root,))
            cancel = asyncio.create_task(app.cancel_async(root))

            async def cancel_waits() -> bool:  # holding the child, waiting for the parent
                cur = await conn.execute(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = "
                    "'Lock' AND datname = current_database()"
                )
                return await _count(cur) == 1

            await wait_for(cancel_waits, what="the cancel waiting for the parent's row")
            # The cycle: the cancel's deadlock check (after its 1 s) finds it and aborts it.
            await other.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (mid.id,))
    cancelled = await asyncio.wait_for(cancel, timeout=30)
    assert cancelled.status == TaskStatus.CANCELLED
    assert await _tree_rows(conn, root) == {"root": "cancelled", "mid": "cancelled"}
