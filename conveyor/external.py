"""External jobs: agents whose work runs outside the worker and reports back by callback.

    app.external("ocr", SubprocessJob(["python", "ocr_job.py"]), lease_seconds=120)
    app.external("transcribe", HttpJob("http://runner.internal/jobs"))

The worker *dispatches* a job for each attempt and keeps the attempt's lease alive while it
runs; the job finishes the attempt with a signed callback, `POST /api/callbacks/{attempt}`
(see `report()` for job authors, or `python -m conveyor.external` for shell scripts).

This module is the face of external jobs for those who declare and write them; the
dispatchers live in conveyor.executors.jobs, the executor that waits for their callbacks in
conveyor.executors.callback, and the secrets and signatures in conveyor.executors.signing.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import urllib.request
from typing import Any

from conveyor.executors.jobs import (
    Dispatched,
    Dispatcher,
    DispatchError,
    HttpJob,
    Job,
    SubprocessJob,
)
from conveyor.executors.signing import (
    MAX_CLOCK_SKEW,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    attempt_secret,
    new_key,
    sign,
    verify,
)

__all__ = [
    "MAX_CLOCK_SKEW",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "DispatchError",
    "Dispatched",
    "Dispatcher",
    "HttpJob",
    "Job",
    "SubprocessJob",
    "attempt_secret",
    "main",
    "new_key",
    "report",
    "sign",
    "verify",
]


def report(
    status: str,
    *,
    result: Any = None,
    error: str | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: float | None = None,
    trace_id: str | None = None,
    url: str | None = None,
    secret: str | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Finish this job's attempt: call from the job with `status` "succeeded" or "failed".

    URL and secret come from CONVEYOR_CALLBACK_URL and CONVEYOR_CALLBACK_SECRET (set for
    subprocess jobs; an HTTP runner gets them in the job it was posted). Standard library
    only, so a job needs nothing but Conveyor installed — or can sign the same way itself.
    """
    url = url or os.environ["CONVEYOR_CALLBACK_URL"]
    secret = secret or os.environ["CONVEYOR_CALLBACK_SECRET"]
    body = json.dumps(
        {
            "status": status,
            "result": result,
            "error": error,
            "trace_id": trace_id,
            "cost_usd": cost_usd,
            "usage": {"model": model, "input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", **sign(secret, body)},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


USAGE = """usage: python -m conveyor.external [succeeded|failed] ['{"result": ...}']

Finish this job's attempt by its signed callback. The JSON holds report()'s keywords
(result, error, model, input_tokens, output_tokens, cost_usd, trace_id); the URL and
secret come from CONVEYOR_CALLBACK_URL and CONVEYOR_CALLBACK_SECRET."""


def main() -> None:
    """`python -m conveyor.external succeeded '{"result": ...}'`, for shell-script jobs."""
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return
    status = args[0] if args else "succeeded"
    try:
        extra = json.loads(args[1]) if len(args) > 1 else {}
    except ValueError as exc:
        sys.exit(f"conveyor.external: the second argument is not JSON: {exc}\n\n{USAGE}")
    if not isinstance(extra, dict):
        sys.exit(f"conveyor.external: the second argument must be a JSON object\n\n{USAGE}")
    unknown = sorted(set(extra) - set(inspect.signature(report).parameters) - {"status"})
    if unknown:
        sys.exit(f"conveyor.external: unknown keys {unknown}\n\n{USAGE}")
    missing = [
        name
        for name in ("CONVEYOR_CALLBACK_URL", "CONVEYOR_CALLBACK_SECRET")
        if name not in os.environ and name.split("_")[-1].lower() not in extra
    ]
    if missing:
        sys.exit(f"conveyor.external: {' and '.join(missing)} not set (a job gets them)")
    print(json.dumps(report(status, **extra)))


if __name__ == "__main__":
    main()
