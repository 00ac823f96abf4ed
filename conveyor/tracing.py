"""OpenTelemetry spans for attempts and model calls, off unless CONVEYOR_TRACING=otel.

With tracing on, every attempt runs inside a span `conveyor.attempt <agent>` (its trace
id is stored on the attempt, `task_attempts.trace_id`), and every model call the LLM
client makes is a child span `chat <model>` with the GenAI semantic conventions'
attributes: gen_ai.operation.name, gen_ai.system, gen_ai.request.model,
gen_ai.response.model, gen_ai.usage.input_tokens, gen_ai.usage.output_tokens.

Where spans go: to the tracer provider the process has set up, if any (an app, a test,
`opentelemetry-instrument`); otherwise Conveyor sets up the SDK with an OTLP/HTTP
exporter, configured by the standard OTEL_EXPORTER_OTLP_* variables (`pip install
'conveyor[tracing]'`). With CONVEYOR_MLFLOW_TRACKING_URI, the same spans also go to that
MLflow server, whose OTLP/HTTP endpoint (`/v1/traces`, MLflow >= 3.6) files them under
CONVEYOR_MLFLOW_EXPERIMENT_ID: MLflow's UI then shows each attempt as a trace with its
model calls, and the mlflow package itself is not needed here.

Off, this module imports nothing from OpenTelemetry and makes no span: `enabled()` is one
global read, and the worker and client skip everything behind it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conveyor.log import fields

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from conveyor.settings import Settings

log = logging.getLogger(__name__)

TRACER_NAME = "conveyor"
_tracer: Tracer | None = None


def enabled() -> bool:
    return _tracer is not None


def configure(settings: Settings) -> bool:
    """Turn tracing on if the settings ask for it (idempotent); whether it is on."""
    global _tracer
    if settings.tracing != "otel":
        return _tracer is not None
    if _tracer is not None:
        return True
    try:
        from opentelemetry import trace
    except ImportError:
        log.warning(
            "CONVEYOR_TRACING=otel but OpenTelemetry is not installed: tracing stays off "
            "(pip install 'conveyor[tracing]')"
        )
        return False
    provider = trace.get_tracer_provider()
    if type(provider).__name__ in {"ProxyTracerProvider", "NoOpTracerProvider"}:
        provider = _sdk_provider()
        if provider is None:
            return False
        trace.set_tracer_provider(provider)
    if settings.mlflow_tracking_uri:
        send_to_mlflow(provider, settings.mlflow_tracking_uri, settings.mlflow_experiment_id)
    _tracer = trace.get_tracer(TRACER_NAME)
    log.info("tracing on", extra=fields(provider=type(provider).__name__))
    return True


def use_tracer(tracer: Tracer | None) -> None:
    """Trace with this tracer (None: off). For tests and apps that manage providers."""
    global _tracer
    _tracer = tracer


def _sdk_provider() -> Any:
    """The SDK's provider exporting by OTLP/HTTP; None (and a warning) if not installed."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning(
            "CONVEYOR_TRACING=otel needs the OpenTelemetry SDK and its OTLP exporter: "
            "tracing stays off (pip install 'conveyor[tracing]')",
            extra=fields(error=str(exc)),
        )
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": "conveyor"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def send_to_mlflow(provider: Any, tracking_uri: str, experiment_id: str = "0") -> bool:
    """Also export `provider`'s spans to an MLflow tracking server, by OTLP/HTTP."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("MLflow export needs 'conveyor[tracing]': spans are not sent to MLflow")
        return False
    if not hasattr(provider, "add_span_processor"):
        log.warning(
            "the tracer provider takes no span processor: spans are not sent to MLflow",
            extra=fields(provider=type(provider).__name__),
        )
        return False
    exporter = OTLPSpanExporter(
        endpoint=f"{tracking_uri.rstrip('/')}/v1/traces",
        headers={"x-mlflow-experiment-id": experiment_id},
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    log.info("tracing to MLflow", extra=fields(uri=tracking_uri, experiment=experiment_id))
    return True


@contextlib.contextmanager
def attempt_span(agent: str, task_id: int, attempt: int) -> Iterator[Span]:
    """The span of one attempt, current while the agent runs (so model calls nest in it).
    Only call with tracing on."""
    assert _tracer is not None
    with _tracer.start_as_current_span(
        f"conveyor.attempt {agent}",
        attributes={
            "conveyor.agent": agent,
            "conveyor.task_id": task_id,
            "conveyor.attempt": attempt,
            "gen_ai.agent.name": agent,
        },
    ) as span:
        yield span


def trace_id_of(span: Span) -> str:
    """The W3C form of a span's trace id: 32 lowercase hex digits."""
    return format(span.get_span_context().trace_id, "032x")


class ModelCall:
    """What the client tells the span of one model call once the answer is in."""

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def answered(self, *, model: str | None, input_tokens: int, output_tokens: int) -> None:
        if self.span is None:
            return
        if model:
            self.span.set_attribute("gen_ai.response.model", model)
        self.span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


_OFF = ModelCall(None)


@contextlib.contextmanager
def model_call_span(system: str, model: str, operation: str = "chat") -> Iterator[ModelCall]:
    """A span per model call (a no-op when tracing is off)."""
    if _tracer is None:
        yield _OFF
        return
    with _tracer.start_as_current_span(
        f"{operation} {model}",
        attributes={
            "gen_ai.operation.name": operation,
            "gen_ai.system": system,
            "gen_ai.request.model": model,
        },
    ) as span:
        yield ModelCall(span)
