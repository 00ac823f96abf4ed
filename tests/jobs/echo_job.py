"""An external job for the tests: reads its job from stdin, reports back by callback.

payload {"exit": N}       exit with status N without calling back
payload {"fail": "why"}   report a failure
otherwise                 report success with {"echo": payload}
"""

import json
import sys

from conveyor.external import report

job = json.load(sys.stdin)
payload = job["payload"]
if "exit" in payload:
    sys.exit(int(payload["exit"]))
if "fail" in payload:
    report("failed", error=payload["fail"], model="sim", input_tokens=10, output_tokens=0)
else:
    report(
        "succeeded",
        result={"echo": payload, "attempt": job["attempt"]},
        model="sim",
        input_tokens=120,
        output_tokens=30,
        cost_usd=0.0042,
        trace_id="trace-abc",
    )
