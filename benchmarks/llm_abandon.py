"""What a model server does with a request its client abandoned (issue #12, item 3).

    python benchmarks/llm_abandon.py --base-url http://127.0.0.1:8081/v1 [--model M]
        [--timeout 3] [--tokens 400] [--full]

1. A short request alone: how long the server takes for it (the baseline).
2. A long request (--tokens to write), streamed as LLMClient streams by default,
   abandoned after --timeout seconds (the connection closed while the server writes),
   then at once the same short request: how long it waits.
3. The same, the long request not streamed (LLMClient(stream=False), as a server that
   refuses streaming is asked): the server learns of the close only when it writes its
   answer, so on a single-slot server the short request waits for the rest of it.
4. With --full, the long request again, not abandoned: how long the whole answer takes.

A server that stops working on a closed request answers the short one in about the
baseline; one that goes on generating makes it wait for the rest of the abandoned answer.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conveyor.llm.client import LLMClient, LLMUnavailable

SHORT = [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}]
LONG = [
    {
        "role": "user",
        "content": "Write a JSON object with key 'story' holding a 300-word story about a "
        "lighthouse keeper.",
    }
]


async def timed(client: LLMClient, messages: list[dict[str, str]], tokens: int) -> float:
    started = time.perf_counter()
    await client.ask(None, messages, {"type": "object"}, name="x", max_tokens=tokens)
    return time.perf_counter() - started


async def abandoned_then_short(
    hasty: LLMClient, patient: LLMClient, tokens: int
) -> tuple[float, float]:
    """(seconds until the long request was abandoned, seconds the short one took after)."""
    started = time.perf_counter()
    try:
        await timed(hasty, LONG, tokens)
        print("the long request finished within the timeout: raise --tokens")
    except LLMUnavailable as exc:
        print(f"abandoned after {time.perf_counter() - started:.2f} s: {exc}")
    abandoned = time.perf_counter() - started
    return abandoned, await timed(patient, SHORT, 16)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--tokens", type=int, default=400, help="the long answer's length")
    parser.add_argument("--full", action="store_true", help="time the long answer in full")
    args = parser.parse_args()
    patient = LLMClient(model=args.model, base_url=args.base_url, timeout=1800, stream=False)
    streamed = LLMClient(model=args.model, base_url=args.base_url, timeout=args.timeout)
    unstreamed = LLMClient(
        model=args.model, base_url=args.base_url, timeout=args.timeout, stream=False
    )
    try:
        await timed(patient, SHORT, 16)  # warm: the prompt cache and the format learnt
        baseline = await timed(patient, SHORT, 16)
        gone_s, after_s = await abandoned_then_short(streamed, patient, args.tokens)
        print(f"streamed: {streamed.streamed}, refusals {streamed.refusals}")
        gone_u, after_u = await abandoned_then_short(unstreamed, patient, args.tokens)
        whole = await timed(patient, LONG, args.tokens) if args.full else None
    finally:
        await patient.aclose()
        await streamed.aclose()
        await unstreamed.aclose()
    print(f"short request alone:                              {baseline:6.2f} s")
    print(f"abandoned streamed after {gone_s:5.2f} s; short after it:   {after_s:6.2f} s")
    print(f"abandoned unstreamed after {gone_u:5.2f} s; short after it: {after_u:6.2f} s")
    if whole is not None:
        print(f"the long request answered in full:                {whole:6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
