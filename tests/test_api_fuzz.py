"""Property-based: schemathesis fuzzes every operation of the API's own OpenAPI document
over real HTTP, and every answer must be as documented: no 5xx, a documented status code,
a JSON content type, a body that matches the documented schema.

Schemathesis' pytest integration (`schema.parametrize()`) makes one test per operation and
server variant (open, and behind a bearer token), each run through its coverage phase
(boundary and invalid values derived from the schema: missing fields, wrong types, out of
range numbers ...) and its fuzzing phase (Hypothesis, valid and invalid data). Hostile
strings (NUL ...) are mixed into the fields that reach PostgreSQL, and a hook names known
agents, tasks and attempts often enough to get past the first 422 or 404. The run is
deterministic (derandomized, no example database) and bounded by MAX_EXAMPLES: about 40 s
on 2 cores.

The server is `serving()` from tests/web.py, on a thread with its own event loop: the
tests schemathesis builds are synchronous and send with `requests`, which would block a
server running in the test's loop. (`schemathesis.pytest.from_fixture`, which would load
the document from the served URL, fails on pytest 9.2: it sets `Function._nodeid`. The
document is taken from the app instead, and one test checks the server serves it.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import queue as stdqueue
import re
import secrets
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import hypothesis
import psycopg
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck
from psycopg import sql
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from conveyor import App, queue
from conveyor.external import attempt_secret, sign
from conveyor.settings import Settings
from conveyor.web import create_app
from tests.conftest import with_dbname
from tests.web import serving

MAX_EXAMPLES = 40  # Hypothesis examples per operation, on top of the coverage phase's
AGENTS = ("invoice", "summarize")
TASK_IDS = (1, 2, 3, 4)  # seeded in each server's fresh database, so numbered from 1
ATTEMPT_IDS = (1, 2)  # attempts of tasks 1 and 2: one running, one of a cancelled task
HOSTILE_STRINGS = [
    "\x00",
    "a\x00b",
    "\ufeff\u202e\U0001f600",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "%00",
    "../../etc/passwd",
]
HOSTILE_FIELDS = [
    *(f"body.{name}" for name in ("agent", "payload", "idempotency_key", "tenant", "run_after")),
    *("body.error", "body.result", "body.trace_id", "body.usage.model"),
    *(f"query.{name}" for name in ("agent", "since", "until", "cursor")),
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]

# The document the server serves (test_the_served_document_is_the_one_fuzzed checks);
# making it connects to nothing.
SPEC = create_app(App(settings=Settings(database_url="postgresql://unused"))).openapi()
schema = schemathesis.openapi.from_dict(
    SPEC,
    config=schemathesis.Config.from_dict(
        {
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,  # Hypothesis' derandomize: the same cases every run
                "database": "none",  # and no .hypothesis folder
            },
            # Now and then, a string that databases and encoders choke on in place of a
            # generated one, in the fields that reach PostgreSQL (not in headers: a NUL
            # there is refused by uvicorn's HTTP parser before the app is called).
            "dictionaries": {"hostile": {"values": HOSTILE_STRINGS}},
            "parameters": {
                field: {"dictionary": "hostile", "probability": 0.15} for field in HOSTILE_FIELDS
            },
            "phases": {"examples": {"enabled": False}, "stateful": {"enabled": False}},
        }
    ),
)


@schema.hook
def map_case(context: Any, case: Case[Any]) -> Case[Any]:
    """Steer part of the cases past the first lookup, deterministically (by a hash of the
    case): most generated agent names are unknown, a 422 before the rest of the body is
    looked at, and most generated ids name no task or attempt, a 404."""
    mix = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode("utf-8", "replace"))
    body = case.body
    agent = body.get("agent") if isinstance(body, dict) else None
    # (Not where the agent is what a negative case made invalid on purpose.)
    if isinstance(body, dict) and isinstance(agent, str) and 1 <= len(agent) <= 100 and mix % 4:
        case.body = {**body, "agent": AGENTS[mix % len(AGENTS)]}
    for name, ids in (("task_id", TASK_IDS), ("attempt_id", ATTEMPT_IDS)):
        if case.path_parameters and name in case.path_parameters and mix % 3:
            case.path_parameters = {**case.path_parameters, name: str(ids[mix % len(ids)])}
    return case


@dataclasses.dataclass(frozen=True)
class Live:
    url: str
    token: str | None
    callback_key: str
    claim_tokens: dict[int, str | None]  # by attempt id: each callback secret names its claim


async def _noop(task: Any) -> None:
    return None


async def _seed(app: App, url: str) -> Live:
    tasks = [{"agent": "invoice", "payload": {"n": n}} for n in range(len(TASK_IDS))]
    assert tuple(await app.enqueue_many_async(tasks)) == TASK_IDS
    db = await app.database()
    async with db.connection() as conn:
        claimed = await queue.claim(conn, worker_id="fuzz", agents=["invoice"], limit=2)
        key = await queue.callback_key(conn)
    assert tuple(c.attempt_id for c in claimed) == ATTEMPT_IDS
    await app.cancel_async(claimed[1].id)
    return Live(url, app.settings.api_token, key, {c.attempt_id: c.claim_token for c in claimed})


@contextlib.contextmanager
def _database(server_url: str, template_db: str) -> Iterator[str]:
    """A fresh database, made like conftest's function-scoped `database_url`."""
    name = f"conveyor_fuzz_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template_db)
            )
        )
    try:
        yield with_dbname(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="module", params=[None, "fuzz-token"], ids=["open", "bearer"])
def live(
    request: pytest.FixtureRequest,
    server_url: str,
    template_db: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    """A real server on loopback, on a thread of its own, over a seeded database. One per
    variant and module: the operations are fuzzed one after the other against the same
    server, as clients would use it (and a server per operation would double the time)."""
    with (
        _database(server_url, template_db) as database,
        _serving_in_a_thread(
            Settings(
                database_url=database,
                home=tmp_path_factory.mktemp("fuzz"),
                api_token=request.param,
            )
        ) as live,
    ):
        yield live


@contextlib.contextmanager
def _serving_in_a_thread(settings: Settings) -> Iterator[Live]:
    started: stdqueue.Queue[Live | BaseException] = stdqueue.Queue()
    stop = threading.Event()
    failures: list[BaseException] = []

    async def main() -> None:
        app = App(settings=settings)
        for name in AGENTS:
            app.agent(name)(_noop)
        async with serving(app) as url:
            started.put(await _seed(app, url))
            while not stop.is_set():
                await asyncio.sleep(0.02)

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            failures.append(exc)
            started.put(exc)

    thread = threading.Thread(target=run, name="fuzzed-server")
    thread.start()
    first = started.get(timeout=60)
    if isinstance(first, BaseException):
        raise first
    try:
        yield first
    finally:
        stop.set()
        thread.join(timeout=30)
    if failures:
        raise failures[0]


class Client(requests.Session):
    """Sends what schemathesis generates, with the token when the server wants one, and
    signs the callbacks to attempts that exist, so that their bodies get looked at (a few
    go unsigned, and must get a documented 401)."""

    CALLBACK = re.compile(r"^/api/callbacks/(\d+)(?:\?|$)")

    def __init__(self, live: Live) -> None:
        super().__init__()
        self.live = live
        if live.token:
            self.headers["Authorization"] = f"Bearer {live.token}"

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        match = self.CALLBACK.match(request.path_url)
        if match and int(match.group(1)) in ATTEMPT_IDS:
            body = request.body or b""
            body = body.encode() if isinstance(body, str) else body
            assert isinstance(body, bytes)  # requests prepared it from our bytes or text
            if zlib.crc32(body) % 5:
                attempt_id = int(match.group(1))
                secret = attempt_secret(
                    self.live.callback_key, attempt_id, self.live.claim_tokens[attempt_id]
                )
                request.headers.update(sign(secret, body))
        return super().send(request, **kwargs)


@schema.parametrize()
@hypothesis.settings(
    deadline=None,  # the time a request takes is not what is tested
    suppress_health_check=[HealthCheck.too_slow],
)
def test_every_answer_is_documented(case: Case[Any], live: Live) -> None:
    with Client(live) as client:
        case.call_and_validate(base_url=live.url, session=client, checks=CHECKS, timeout=30)


def test_the_served_document_is_the_one_fuzzed(live: Live) -> None:
    headers = {"Authorization": f"Bearer {live.token}"} if live.token else {}
    served = requests.get(f"{live.url}/openapi.json", headers=headers, timeout=30)
    assert served.status_code == 200 and served.json() == SPEC
