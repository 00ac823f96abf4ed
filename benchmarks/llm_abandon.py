"""What a model server does with a request its client abandoned (issue #12, item 3).

    python benchmarks/llm_abandon.py --base-url http://127.0.0.1:8081/v1 [--model M]

1. A short request alone: how long the server takes for it (the baseline).
2. A long request (a few hundred tokens to write), abandoned after --timeout seconds by
   the client (LLMClient with that timeout: the connection is closed), then at once the
   same short request: how long it waits. A server that stops working on a closed
   request answers it in about the baseline; one that goes on generating makes it wait
   for the rest of the abandoned answer first (on a single-slot server).
3. The long request again, not abandoned: how long the whole answer takes, for scale.
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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args()
    patient = LLMClient(model=args.model, base_url=args.base_url, timeout=600)
    hasty = LLMClient(model=args.model, base_url=args.base_url, timeout=args.timeout)
    try:
        await timed(patient, SHORT, 16)  # warm: the prompt cache and the format learnt
        baseline = await timed(patient, SHORT, 16)
        started = time.perf_counter()
        try:
            await timed(hasty, LONG, 400)
            print("the long request finished within the timeout: raise its length")
        except LLMUnavailable as exc:
            abandoned = time.perf_counter() - started
            print(f"abandoned after {abandoned:.2f} s: {exc}")
        after = await timed(patient, SHORT, 16)
        whole = await timed(patient, LONG, 400)
    finally:
        await patient.aclose()
        await hasty.aclose()
    print(f"short request alone:                 {baseline:6.2f} s")
    print(f"short request after an abandoned one: {after:6.2f} s")
    print(f"the long request answered in full:   {whole:6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
