"""The LLM extractor for bench_extract.py: `--extractors llm` (or `offline,llm`).

The model is the LLM endpoint simulator in answer mode (conveyor.testing.answers), served from
a thread of the benchmark's process: it answers every request from the sample's truth,
each field wrong with probability --llm-error-rate (left out, or misread: a digit, a day,
a word), seeded, so a run is reproducible. What this measures is therefore the
extractor's own part, not a model's reading: the prompts and their chunking (tokens per
document), the merging of a long document's chunks, how much of the injected error the
cross-checks catch (confidence calibration) and what it would cost at the price of
--llm-model (genai-prices). The simulator answers at once (no latency), so documents/s is
Conveyor's overhead per request, not a model's speed.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from conveyor.agents.llm import DEFAULT_CHUNK_TOKENS, extract_llm
from conveyor.documents.text import DocumentText
from conveyor.llm.client import LLMClient
from conveyor.llm.pricing import Pricer
from conveyor.task import Task
from conveyor.testing.answers import TruthResponder
from conveyor.testing.samples import Sample
from conveyor.testing.simulator import Simulator

DEFAULT_ERROR_RATE = 0.05
DEFAULT_MODEL = "gpt-4o-mini"  # priced by genai-prices; the simulator answers any name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-error-rate",
        type=float,
        default=DEFAULT_ERROR_RATE,
        help=f"llm: share of fields the simulated model gets wrong ({DEFAULT_ERROR_RATE})",
    )
    parser.add_argument(
        "--llm-model", default=DEFAULT_MODEL, help=f"llm: the model priced ({DEFAULT_MODEL})"
    )
    parser.add_argument(
        "--llm-chunk-tokens",
        type=int,
        default=DEFAULT_CHUNK_TOKENS,
        help=f"llm: prompt tokens per request ({DEFAULT_CHUNK_TOKENS})",
    )
    parser.add_argument("--llm-seed", type=int, default=1, help="llm: the errors' seed (1)")


def llm_extractor(args: argparse.Namespace, Extractor: Any, Outcome: Any) -> Any:
    """The extractor, made of the benchmark's own Extractor and Outcome types."""
    error_rate = getattr(args, "llm_error_rate", DEFAULT_ERROR_RATE)
    model = getattr(args, "llm_model", DEFAULT_MODEL)
    chunk_tokens = getattr(args, "llm_chunk_tokens", DEFAULT_CHUNK_TOKENS)
    responder = TruthResponder({}, error_rate=error_rate, seed=getattr(args, "llm_seed", 1))
    server = Simulator(responder=responder, base_latency=0, per_token_latency=0)
    served = server.start_in_thread()
    client: LLMClient | None = None
    pricer = Pricer()

    async def run(sample: Sample, text: DocumentText) -> Outcome:
        nonlocal client
        if client is None:  # made in the benchmark's event loop, which then uses it
            client = LLMClient(model=model, base_url=f"{served.url}/v1")
        responder.add(sample.name.removesuffix(".pdf"), sample.truth.model_dump(mode="json"))
        task = Task(
            id=0,
            agent=sample.kind,
            payload={},
            attempt=1,
            max_attempts=1,
            priority=0,
            created_at=datetime.now(UTC),
        )
        extraction = await extract_llm(
            client, task, text, sample.kind, name=sample.name, chunk_tokens=chunk_tokens
        )
        usage = task.usage
        cost = pricer.cost(model, usage.input_tokens, usage.output_tokens)
        return Outcome(
            extraction,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=None if cost is None else float(cost),
        )

    async def close() -> None:
        if client is not None:
            await client.aclose()
        served.stop()

    return Extractor(f"llm (simulated, {error_rate:.0%} field errors)", run, close)
