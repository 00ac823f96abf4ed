"""OpenTelemetry spans per attempt and model call, and nothing at all when tracing is off."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from conveyor import App, Task, TaskStatus, tracing
from conveyor.llm.client import LLMClient
from conveyor.settings import Settings
from conveyor.testing.simulator import Simulator
from conveyor.worker import Worker
from tests.conftest import wait_for
from tests.processes import ROOT
from tests.test_worker import Running


class Answer(BaseModel):
    answer: str


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer(provider.get_tracer(tracing.TRACER_NAME))
    try:
        yield exporter
    finally:
        tracing.use_tracer(None)
        provider.shutdown()


async def test_an_attempt_and_its_model_calls_are_spans_with_gen_ai_attributes(
    settings: Settings, spans: InMemorySpanExporter
) -> None:
    simulator = Simulator(base_latency=0, responder=lambda r: '{"answer": "42"}')
    async with simulator.serving() as url:
        app = App(settings=dataclasses.replace(settings, tracing="otel"))

        @app.agent("ask")
        async def ask(task: Task) -> str:
            client = LLMClient(model="sim-1", base_url=f"{url}/v1", stream=False)
            try:
                for question in ("one", "two"):
                    await client.extract(
                        task, [{"role": "user", "content": question}], Answer, name="a"
                    )
            finally:
                await client.aclose()
            return "done"

        try:
            task_id = await app.enqueue_async("ask")
            async with Running(Worker(app, concurrency=1)):
                await wait_for(lambda: _completed(app, task_id), what="the traced task")
            (attempt,) = (await app.get_task_async(task_id)).attempt_history
        finally:
            await app.aclose()

    finished = spans.get_finished_spans()
    (root,) = [s for s in finished if s.name == "conveyor.attempt ask"]
    calls = [s for s in finished if s.name == "chat sim-1"]
    assert len(calls) == 2
    assert attempt.trace_id == format(root.context.trace_id, "032x")
    assert root.attributes is not None
    assert root.attributes["conveyor.task_id"] == task_id
    assert root.attributes["gen_ai.usage.input_tokens"] == attempt.input_tokens
    log = simulator.log()
    for call, entry in zip(calls, log, strict=True):
        assert call.parent is not None and call.parent.span_id == root.context.span_id
        assert call.context.trace_id == root.context.trace_id
        assert dict(call.attributes or {}) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai_compatible",
            "gen_ai.request.model": "sim-1",
            "gen_ai.response.model": "sim-1",
            "gen_ai.usage.input_tokens": entry.prompt_tokens,
            "gen_ai.usage.output_tokens": entry.completion_tokens,
        }


async def _completed(app: App, task_id: int) -> bool:
    return (await app.get_task_async(task_id)).status == TaskStatus.COMPLETED


def test_tracing_off_imports_no_opentelemetry_and_stores_no_trace(database_url: str) -> None:
    """A worker process with tracing off: an attempt that reports usage runs and is
    recorded, and not one OpenTelemetry module was imported on the way."""
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from conveyor import App, Task, TaskStatus
        from conveyor.worker import Worker

        app = App()

        @app.agent("spend")
        async def spend(task: Task) -> str:
            task.report_usage(model="gpt-4o-mini", input_tokens=10, output_tokens=5)
            return "ok"

        async def main() -> None:
            task_id = await app.enqueue_async("spend")
            worker = Worker(app, concurrency=1)
            run = asyncio.create_task(worker.run())
            while (await app.get_task_async(task_id)).status != TaskStatus.COMPLETED:
                await asyncio.sleep(0.02)
            worker.stop()
            await run
            (attempt,) = (await app.get_task_async(task_id)).attempt_history
            loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
            print(json.dumps({"trace_id": attempt.trace_id, "cost": attempt.llm_cost_usd,
                              "loaded": loaded}))
            await app.aclose()

        asyncio.run(main())
        """
    )
    env: dict[str, Any] = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "CONVEYOR_DATABASE_URL": database_url,
        "CONVEYOR_POLL_INTERVAL": "0.2",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["trace_id"] is None
    assert report["cost"] > 0  # the attempt was really priced and recorded


def test_spans_reach_an_mlflow_server_by_otlp_with_the_experiment_header() -> None:
    """What an MLflow tracking server (>= 3.6) takes at /v1/traces, received by a stand-in
    server on loopback: OTLP/HTTP protobuf, filed under the experiment in the header."""
    import http.server
    import threading

    received: list[tuple[str, dict[str, str], bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert tracing.send_to_mlflow(provider, url + "/", "7")
        with provider.get_tracer("t").start_as_current_span("conveyor.attempt demo"):
            pass
        assert provider.force_flush(10_000)
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
    (path, headers, body) = received[0]
    assert path == "/v1/traces"
    assert {k.lower(): v for k, v in headers.items()}["x-mlflow-experiment-id"] == "7"
    assert b"conveyor.attempt demo" in body
