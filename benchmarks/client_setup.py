"""What building an LLM client costs the event loop: CPU time per `LLMClient(...)`, with the
process's shared TLS context (conveyor.llm.client._tls, the default) and with one built
per client (httpx's default, what every client did before), interleaved round by round.

    python benchmarks/client_setup.py [--clients 20] [--rounds 5]

A document's page-range children each build a client when they start, on the worker's
loop, so this is CPU the loop spends before any request goes out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai

from conveyor.llm.client import LLMClient

URL = "http://127.0.0.1:1/v1"  # never asked: only the client is built


def per_client_ms(clients: int, own_tls: bool) -> float:
    start = time.process_time()
    for _ in range(clients):
        http = openai.DefaultAsyncHttpxClient() if own_tls else None
        LLMClient(model="m", base_url=URL, api_key="x", http_client=http)
    return (time.process_time() - start) / clients * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    LLMClient(model="m", base_url=URL, api_key="x")  # the shared context, built once
    shared, own = [], []
    for _ in range(args.rounds):
        shared.append(per_client_ms(args.clients, own_tls=False))
        own.append(per_client_ms(args.clients, own_tls=True))
    print(f"CPU per client, median of {args.rounds} rounds of {args.clients}:")
    print(f"  shared TLS context      {statistics.median(shared):7.2f} ms")
    print(f"  a TLS context per client {statistics.median(own):6.2f} ms")


if __name__ == "__main__":
    main()
