"""The review queue against a real database, a real worker and a real HTTP server.

A result below its agent's threshold leaves its task `completed` with a `pending` review;
the API lists the backlog oldest first a page at a time, accepts or corrects (a new
version, the machine's kept), refuses what the document type refuses, and tells a second
reviewer of the same version that they lost. Competing reviewers are separate database
connections deciding at once: exactly one wins, nothing is applied twice or lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from conveyor import App, Task
from conveyor.documents.submit import submit_files
from conveyor.documents.types import make_extraction
from conveyor.errors import InvalidTask
from conveyor.reviews import queue as reviews
from conveyor.reviews.corrections import InvalidCorrection, apply
from conveyor.settings import Settings, SettingsError, parse_api_tokens
from conveyor.testing.samples import make_invoice
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.web import serving

ALICE, BOB = "alice-token-1", "bob-token-2"
TOKENS = (("alice", ALICE), ("bob", BOB))


def invoice_result(confidence: float = 0.5, **data: Any) -> dict[str, Any]:
    """A document agent's result (an Extraction) of an invoice."""
    from conveyor.documents.types import Invoice

    invoice = Invoice.model_validate(
        {
            "number": "A-17",
            "issue_date": "2026-03-01",
            "currency": "EUR",
            "vendor": {"name": "Acme GmbH"},
            "subtotal": "100.00",
            "tax": "19.00",
            "total": "119.00",
            **data,
        }
    )
    extraction = make_extraction(
        "invoice",
        invoice,
        fields={"number": 0.95, "issue_date": 0.9, "total": 0.4, "vendor.name": 0.8},
        notes=[],
        pages=1,
        extractor="offline",
    )
    result = extraction.model_dump(mode="json")
    result["confidence"] = confidence
    return result


class Desk:
    """An App whose agents return the result the payload gives, a worker, a server."""

    def __init__(self, settings: Settings) -> None:
        self.app = App(settings=settings)
        self.documents: dict[str, dict[str, Any]] = {}

        @self.app.agent("invoice")
        async def invoice(task: Task) -> Any:
            if "sha256" in task.payload:
                return self.documents[task.payload["sha256"]]
            return task.payload["result"]

        @self.app.agent("lenient", review_below=0.5)
        async def lenient(task: Task) -> Any:
            return task.payload["result"]

    async def complete(self, agent: str, result: Any, **options: Any) -> int:
        task_id = await self.app.enqueue_async(agent, {"result": result}, **options)

        async def done() -> bool:
            return (await self.app.get_task_async(task_id)).status == "completed"

        await wait_for(done, timeout=30, what=f"task {task_id}")
        return task_id


@asynccontextmanager
async def desk(settings: Settings) -> AsyncIterator[tuple[Desk, httpx.AsyncClient]]:
    d = Desk(settings)
    await d.app.database()  # registers the agents before the server's App looks
    async with serving(App(settings=settings)) as url:
        worker = Worker(d.app, concurrency=4)
        running = asyncio.create_task(worker.run())
        try:
            await asyncio.wait_for(worker.wait_started(), 10)
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                yield d, client
        finally:
            worker.stop()
            await asyncio.wait_for(running, 60)
            await d.app.aclose()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def rows(database_url: str, query: str, *params: Any) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, row_factory=dict_row
    ) as conn:
        cur = await conn.execute(query, params)
        return await cur.fetchall()


# ----------------------------------------------------------------------------- marking


async def test_a_result_below_the_threshold_waits_for_review_and_the_task_is_completed(
    settings: Settings, database_url: str
) -> None:
    async with desk(settings) as (d, client):
        low = await d.complete("invoice", invoice_result(0.5))
        high = await d.complete("invoice", invoice_result(0.95))
        plain = await d.complete("invoice", {"answer": 42})
        lenient_low = await d.complete("lenient", {"confidence": 0.4, "x": 1})
        lenient_mid = await d.complete("lenient", {"confidence": 0.7, "x": 1})

        page = (await client.get("/api/reviews")).json()
        assert [r["task_id"] for r in page["items"]] == [low, lenient_low]
        assert page["items"][0]["review_below"] == 0.9
        assert page["items"][1]["review_below"] == 0.5, "the code's threshold"
        assert (await client.get(f"/api/tasks/{low}")).json()["status"] == "completed"
        for task_id in (high, plain, lenient_mid):
            answer = await client.get(f"/api/tasks/{task_id}/review")
            assert answer.status_code == 409, answer.text
            assert answer.json()["error"]["code"] == "no_review_pending"


async def test_the_threshold_is_set_at_run_time_and_reset_to_the_codes(
    settings: Settings,
) -> None:
    async with desk(settings) as (d, client):
        answer = await client.put(
            "/api/agents/lenient/review-threshold", json={"review_below": 0.8}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["review_source"] == "operator"
        marked = await d.complete("lenient", {"confidence": 0.7})
        assert (await client.get(f"/api/tasks/{marked}/review")).status_code == 200

        # Declaring the agent again (a new process) does not undo the operator's value.
        again = Desk(d.app.settings)
        await again.app.database()
        await again.app.aclose()
        threshold = (await client.get("/api/agents/lenient/review-threshold")).json()
        assert threshold["review_below"] == 0.8

        reset = await client.put(
            "/api/agents/lenient/review-threshold", json={"review_below": None}
        )
        assert reset.json()["review_below"] == 0.5 and reset.json()["review_source"] == "code"
        unmarked = await d.complete("lenient", {"confidence": 0.7})
        assert (await client.get(f"/api/tasks/{unmarked}/review")).status_code == 409

        for bad in ({"review_below": 1.5}, {"review_below": "high"}, {}):
            answer = await client.put("/api/agents/lenient/review-threshold", json=bad)
            assert answer.status_code == 422, bad
        unknown = await client.put(
            "/api/agents/nobody/review-threshold", json={"review_below": 0.5}
        )
        assert unknown.status_code == 422 and unknown.json()["error"]["code"] == "unknown_agent"


def test_a_threshold_in_code_is_checked() -> None:
    app = App(settings=Settings(database_url="postgresql://unused"))
    with pytest.raises(InvalidTask, match="review_below"):
        app.agent("x", review_below=2)


# ----------------------------------------------------------------------------- the backlog


async def test_the_backlog_is_oldest_first_filtered_and_paged_by_keyset(
    settings: Settings, database_url: str
) -> None:
    async with desk(settings) as (d, client):
        ids = []
        for i in range(7):
            tenant = "acme" if i % 2 == 0 else None
            ids.append(await d.complete("invoice", {"confidence": 0.1}, tenant=tenant))
        # created_at is the moment the review was marked: make the order unambiguous.
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            for n, task_id in enumerate(ids):
                await conn.execute(
                    "UPDATE reviews SET created_at = now() - make_interval(mins => %s)"
                    " WHERE task_id = %s",
                    (100 - n, task_id),
                )

        seen: list[int] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 3}
            if cursor:
                params["cursor"] = cursor
            page = (await client.get("/api/reviews", params=params)).json()
            seen += [r["task_id"] for r in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == ids, "oldest first, every one once"

        acme = (await client.get("/api/reviews", params={"tenant": "acme"})).json()["items"]
        assert [r["task_id"] for r in acme] == ids[0::2]
        untenanted = (await client.get("/api/reviews", params={"tenant": ""})).json()["items"]
        assert [r["task_id"] for r in untenanted] == ids[1::2]
        both = await client.get("/api/reviews", params={"tenant": "acme", "agent": "invoice"})
        assert [r["task_id"] for r in both.json()["items"]] == ids[0::2]
        assert (await client.get("/api/reviews", params={"agent": "lenient"})).json()["items"] == []

        backlog = (await client.get("/api/reviews/backlog")).json()
        assert backlog["pending"] == 7
        assert {(g["agent"], g["tenant"], g["pending"]) for g in backlog["groups"]} == {
            ("invoice", "acme", 4),
            ("invoice", "", 3),
        }
        # A task deleted (pruned) takes its review, and its count, along.
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute("DELETE FROM tasks WHERE id = %s", (ids[0],))
        backlog = (await client.get("/api/reviews/backlog")).json()
        assert backlog["pending"] == 6
        assert {(g["agent"], g["tenant"], g["pending"]) for g in backlog["groups"]} == {
            ("invoice", "acme", 3),
            ("invoice", "", 3),
        }
        bad = await client.get("/api/reviews", params={"cursor": "yesterday"})
        assert bad.status_code == 422 and "cursor" in bad.json()["error"]["message"]


# ----------------------------------------------------------------------------- deciding


async def test_a_correction_is_a_new_version_and_the_machines_is_kept(
    settings: Settings, database_url: str
) -> None:
    async with desk(dataclasses.replace(settings, api_tokens=TOKENS)) as (d, client):
        task_id = await d.complete("invoice", invoice_result(total="118.00"))
        review = (await client.get(f"/api/tasks/{task_id}/review", headers=bearer(BOB))).json()
        assert review["review"]["version"] == 1
        fields = {f["field"]: f for f in review["fields"]}
        assert fields["total"]["value"] == "118.00" and fields["total"]["confidence"] == 0.4
        assert any("not the total" in c for c in review["checks"]), review["checks"]

        answer = await client.post(
            f"/api/tasks/{task_id}/review",
            json={"action": "correct", "version": 1, "corrections": {"total": "119.00"}},
            headers=bearer(ALICE),
        )
        assert answer.status_code == 200, answer.text
        decided = answer.json()
        assert decided["status"] == "corrected" and decided["version"] == 2
        assert decided["reviewed_by"] == "alice", "the token's name"
        assert decided["changes"] == {"total": {"from": "118.00", "to": "119.00"}}

        task = (await client.get(f"/api/tasks/{task_id}", headers=bearer(BOB))).json()
        assert task["status"] == "completed"
        assert task["result"]["data"]["total"] == "119.00"
        assert task["result"]["checks"] == [], "the cross-checks of the corrected version"
        assert task["result"]["fields"]["total"] == 1.0

        versions = await rows(
            database_url,
            "SELECT version, made_by, action, result->'data'->>'total' AS total"
            " FROM result_versions WHERE task_id = %s ORDER BY version",
            task_id,
        )
        assert versions == [
            {"version": 1, "made_by": "machine", "action": "machine", "total": "118.00"},
            {"version": 2, "made_by": "alice", "action": "corrected", "total": "119.00"},
        ]
        assert (await client.get("/api/reviews", headers=bearer(BOB))).json()["items"] == []
        backlog = (await client.get("/api/reviews/backlog", headers=bearer(BOB))).json()
        assert backlog == {"pending": 0, "groups": []}, "decided: counted out"

        again = await client.post(
            f"/api/tasks/{task_id}/review",
            json={"action": "accept", "version": 1},
            headers=bearer(BOB),
        )
        assert again.status_code == 409
        error = again.json()["error"]
        assert error["code"] == "review_conflict" and "corrected by alice" in error["message"]


async def test_bad_reviews_are_refused_and_write_nothing(
    settings: Settings, database_url: str
) -> None:
    async with desk(settings) as (d, client):
        task_id = await d.complete("invoice", invoice_result())
        plain = await d.complete("invoice", {"answer": 1})
        url = f"/api/tasks/{task_id}/review"
        cases = [
            ({"action": "correct", "version": 1, "corrections": {"issue_date": "soon"}}, 422),
            ({"action": "correct", "version": 1, "corrections": {"vendor.nmae": "X"}}, 422),
            ({"action": "correct", "version": 1, "corrections": {"line_items.3.amount": "1"}}, 422),
            ({"action": "correct", "version": 1, "corrections": {"currency": "euro"}}, 422),
            ({"action": "correct", "version": 1, "corrections": {}}, 422),
            ({"action": "correct", "version": 1, "corrections": {"number": "A-17"}}, 422),
            ({"action": "accept", "version": 1, "corrections": {"number": "B"}}, 422),
            # What PostgreSQL cannot store: a NUL in a key or a value (found by the fuzzer).
            ({"action": "correct", "version": 1, "corrections": {"a\x00b": "X"}}, 422),
            ({"action": "correct", "version": 1, "corrections": {"number": "A\x00"}}, 422),
            ({"action": "approve", "version": 1}, 422),
            ({"action": "accept", "version": 0}, 422),
            ({"action": "accept", "version": 2}, 409),
        ]
        for body, status in cases:
            answer = await client.post(url, json=body)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["error"]["message"], body
        malformed = await client.post(
            url, content=b"{not json", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 400
        none = await client.post(
            f"/api/tasks/{plain}/review", json={"action": "accept", "version": 1}
        )
        assert none.status_code == 409 and none.json()["error"]["code"] == "no_review_pending"
        gone = await client.post(
            "/api/tasks/999999/review", json={"action": "accept", "version": 1}
        )
        assert gone.status_code == 404

        (state,) = await rows(
            database_url, "SELECT status, version FROM reviews WHERE task_id = %s", task_id
        )
        assert state == {"status": "pending", "version": 1}
        assert await rows(database_url, "SELECT 1 FROM result_versions") == []
        assert await rows(database_url, "SELECT 1 FROM review_fields") == []
        task = (await client.get(f"/api/tasks/{task_id}")).json()
        assert task["result"] == invoice_result()


async def test_accepting_records_who_and_the_fields_as_right_in_the_metrics(
    settings: Settings,
) -> None:
    async with desk(settings) as (d, client):
        accepted = await d.complete("invoice", invoice_result())
        corrected = await d.complete("invoice", invoice_result())
        answer = await client.post(
            f"/api/tasks/{accepted}/review",
            json={"action": "accept", "version": 1, "reviewer": "carol"},
        )
        assert answer.status_code == 200 and answer.json()["reviewed_by"] == "carol"
        await client.post(
            f"/api/tasks/{corrected}/review",
            json={"action": "correct", "version": 1, "corrections": {"total": "120.00"}},
        )
        metrics = (await client.get("/api/reviews/metrics")).json()
        invoice = metrics["agents"]["invoice"]
        assert invoice["reviewed"] == 2 and invoice["corrected"] == 1
        assert invoice["fields_corrected"] == 1 and invoice["pending"] == 0
        assert invoice["time_to_review_p50_s"] is not None
        assert invoice["fields"]["total"]["accuracy"] == 0.5
        assert invoice["fields"]["number"]["accuracy"] == 1.0
        assert invoice["fields"]["total"]["mean_confidence"] == pytest.approx(0.4)


# ----------------------------------------------------------------------------- tokens


async def test_named_tokens_say_who_and_a_session_may_review_but_not_cancel(
    settings: Settings,
) -> None:
    async with desk(dataclasses.replace(settings, api_tokens=TOKENS)) as (d, client):
        task_id = await d.complete("invoice", invoice_result())
        assert (await client.get("/api/reviews")).status_code == 401
        assert (await client.get("/api/reviews", headers=bearer("nope"))).status_code == 401
        signed = await client.post("/login", data={"token": BOB})
        assert signed.status_code == 303
        assert (await client.get("/api/reviews")).status_code == 200, "bob's session reads"
        # A page's fetch, as the browser sends it: same origin, with the cookie.
        same_origin = {"sec-fetch-site": "same-origin"}
        cancel = await client.post(f"/api/tasks/{task_id}/cancel", headers=same_origin)
        assert cancel.status_code == 401, "a session changes nothing but reviews"
        answer = await client.post(
            f"/api/tasks/{task_id}/review",
            json={"action": "accept", "version": 1, "reviewer": "mallory"},
            headers=same_origin,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["reviewed_by"] == "bob", "the session's name, not the body's"
        other_site = await client.post(
            f"/api/tasks/{task_id}/review",
            json={"action": "accept", "version": 1},
            headers={"sec-fetch-site": "cross-site"},
        )
        assert other_site.status_code == 403


def test_named_tokens_are_parsed_and_bad_ones_refused() -> None:
    assert parse_api_tokens(" alice=a1 , bob=b2,") == (("alice", "a1"), ("bob", "b2"))
    for bad in ("alice", "alice=", "=t", "a b=t", "alice=a,alice=b", "alice=t,bob=t"):
        with pytest.raises(SettingsError):
            parse_api_tokens(bad)
    both = Settings(api_token="single", api_tokens=(("alice", "a1"),))
    assert both.named_tokens() == {"alice": "a1", "operator": "single"}
    clash = Settings(api_token="single", api_tokens=(("operator", "other"),))
    with pytest.raises(SettingsError):
        clash.named_tokens()


# ----------------------------------------------------------------------------- races


async def test_competing_reviewers_one_wins_nothing_is_lost_or_applied_twice(
    settings: Settings, database_url: str
) -> None:
    """Eight connections decide each of ten reviews at once, each with its own value for
    the total: exactly one decision per review is stored, and it is that reviewer's."""
    reviewers = 8
    async with desk(settings) as (d, _client):
        tasks = [await d.complete("invoice", invoice_result()) for _ in range(10)]
    conns = [
        await psycopg.AsyncConnection.connect(database_url, autocommit=True, row_factory=dict_row)
        for _ in range(reviewers)
    ]
    try:
        outcomes: dict[int, list[str]] = {}
        for task_id in tasks:
            start = asyncio.Event()

            async def review(
                n: int, conn: Any, task_id: int = task_id, start: asyncio.Event = start
            ) -> str:
                await start.wait()
                try:
                    if n % 3 == 0:
                        await reviews.decide(conn, task_id, action="accept", version=1, who=f"r{n}")
                    else:
                        await reviews.decide(
                            conn,
                            task_id,
                            action="correct",
                            version=1,
                            who=f"r{n}",
                            corrections={"total": f"{200 + n}.00"},
                        )
                except reviews.ReviewConflict:
                    return "conflict"
                return f"r{n}"

            running = [asyncio.create_task(review(n, c)) for n, c in enumerate(conns)]
            await asyncio.sleep(0)
            start.set()
            outcomes[task_id] = await asyncio.gather(*running)
        for task_id, results in outcomes.items():
            winners = [r for r in results if r != "conflict"]
            assert len(winners) == 1, results
            (winner,) = winners
            (review_row,) = await rows(
                database_url,
                "SELECT status, reviewed_by, version FROM reviews WHERE task_id = %s",
                task_id,
            )
            assert review_row["reviewed_by"] == winner
            versions = await rows(
                database_url,
                "SELECT version, made_by FROM result_versions WHERE task_id = %s ORDER BY 1",
                task_id,
            )
            fields = await rows(
                database_url, "SELECT count(*) AS n FROM review_fields WHERE task_id = %s", task_id
            )
            (result,) = await rows(
                database_url,
                "SELECT result->'data'->>'total' AS total FROM tasks WHERE id = %s",
                task_id,
            )
            n = int(winner[1:])
            if n % 3 == 0:
                assert review_row["status"] == "accepted" and versions == []
                assert result["total"] == "119.00"
            else:
                assert review_row["status"] == "corrected" and review_row["version"] == 2
                assert versions == [
                    {"version": 1, "made_by": "machine"},
                    {"version": 2, "made_by": winner},
                ]
                assert result["total"] == f"{200 + n}.00", "the winner's correction, once"
            assert fields[0]["n"] == 4, "each field recorded once"
    finally:
        for conn in conns:
            await conn.close()


# ----------------------------------------------------------------------------- the page


async def test_the_review_shows_the_words_behind_each_field_and_the_page_as_png(
    settings: Settings, tmp_path: Path
) -> None:
    sample = make_invoice(3)
    truth = sample.truth.model_dump(mode="json")
    path = tmp_path / sample.name
    path.write_bytes(sample.pdf)
    async with desk(settings) as (d, client):
        from conveyor.documents.types import Invoice

        result = make_extraction(
            "invoice",
            Invoice.model_validate(truth),
            fields={"number": 0.5, "total": 0.5},
            notes=[],
            pages=1,
            extractor="offline",
        ).model_dump(mode="json")
        result["confidence"] = 0.3
        (submitted,) = await submit_files(d.app, [path], agent="invoice", rerun=True)
        d.documents[submitted.document.sha256] = result
        task_id = submitted.task_id

        async def marked() -> bool:
            return (await client.get(f"/api/tasks/{task_id}/review")).status_code == 200

        await wait_for(marked, timeout=30, what="the review")
        review = (await client.get(f"/api/tasks/{task_id}/review")).json()
        (page,) = review["document"]["pages"][:1]
        fields = {f["field"]: f for f in review["fields"]}
        for name in ("number", "total", "issue_date"):
            boxes = fields[name]["boxes"]
            assert boxes, f"{name} ({fields[name]['value']}) found on the page"
            for box in boxes:
                assert 0 <= box["x0"] < box["x1"] <= page["width"]
                assert 0 <= box["y0"] < box["y1"] <= page["height"]
        png = await client.get(f"/api/tasks/{task_id}/pages/1.png")
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        assert png.content.startswith(b"\x89PNG\r\n\x1a\n")
        assert (await client.get(f"/api/tasks/{task_id}/pages/9.png")).status_code == 404


def test_corrections_of_a_plain_result_and_their_refusals() -> None:
    corrected = apply({"confidence": 0.2, "city": "Pari"}, {"city": "Paris"})
    assert corrected.result == {"confidence": 0.2, "city": "Paris"}
    assert corrected.changes == {"city": {"from": "Pari", "to": "Paris"}}
    with pytest.raises(InvalidCorrection):
        apply({"confidence": 0.2}, {"confidence": 1.0})
    with pytest.raises(InvalidCorrection):
        apply([1, 2], {"0": 3})
    amounts = apply(invoice_result(), {"line_items": [{"description": "x", "amount": "1"}]})
    assert amounts.result["data"]["line_items"][0]["amount"] == "1"
    assert json.dumps(amounts.result)


# ----------------------------------------------------------------------------- the CLI


def test_the_cli_shows_the_backlog_and_sets_and_resets_a_threshold(
    settings: Settings, database_url: str
) -> None:
    import os
    import subprocess
    import sys

    async def register() -> None:
        async with Desk(settings).app:
            pass

    asyncio.run(register())

    def conveyor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "conveyor.cli", "--database-url", database_url, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )

    done = conveyor("reviews", "threshold", "lenient", "0.3")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "lenient" in x)
    assert "0.3" in line and "0.5" in line and "operator" in line
    bad = conveyor("reviews", "threshold", "lenient", "2")
    assert bad.returncode == 2 and "between 0 and 1" in bad.stderr
    nameless = conveyor("reviews", "threshold", "--reset")
    assert nameless.returncode == 1 and "name the agent" in nameless.stderr
    unknown = conveyor("reviews", "threshold", "nobody", "0.5")
    assert unknown.returncode == 1 and "unknown agent" in unknown.stderr
    reset = conveyor("reviews", "threshold", "lenient", "--reset")
    line = next(x for x in reset.stdout.splitlines() if "lenient" in x)
    assert reset.returncode == 0 and "code" in line and "0.3" not in line
    backlog = conveyor("reviews")
    assert backlog.returncode == 0 and "Pending reviews: 0" in backlog.stdout


def test_a_session_carries_its_name_and_hangs_on_its_own_token() -> None:
    from conveyor.web.sessions import Sessions

    sessions = Sessions({"alice": ALICE, "bob": BOB})
    alice, bob = sessions.issue("alice"), sessions.issue("bob")
    assert sessions.name_of(alice) == "alice" and sessions.name_of(bob) == "bob"
    rotated = Sessions({"alice": "a new token", "bob": BOB})
    assert rotated.name_of(alice) is None, "alice's new token ends her sessions"
    assert rotated.name_of(bob) == "bob", "and only hers"
    # Bob's name put on Alice's cookie: the MAC is of Alice's body, under Alice's key.
    random_part = alice.split("~")[0]
    bob_label = bob.split("~")[1].split(".")[0]
    forged = f"{random_part}~{bob_label}.{alice.split('.', 1)[1]}"
    assert sessions.name_of(forged) is None
    with pytest.raises(KeyError):
        sessions.issue("mallory")
