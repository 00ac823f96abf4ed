"""A Ray job for the tests (tests/test_ray_jobs.py): its attempt's job in CONVEYOR_JOB,
its end reported by the signed callback.

payload {"exit": N}              exit with status N without calling back
payload {"beat": "/path"}        write the time to the file every 0.1 s, for ever
otherwise                        run one Ray task on the cluster, then report success with
                                 {"echo": payload, "attempt": n, "node": the task's node}
"""

import json
import os
import sys
import time

from conveyor.external import report

job = json.loads(os.environ["CONVEYOR_JOB"])
payload = job["payload"]
if "exit" in payload:
    sys.exit(int(payload["exit"]))
if "beat" in payload:
    while True:
        with open(payload["beat"] + ".new", "w") as beat:
            beat.write(f"{time.time()}\n")
        os.replace(payload["beat"] + ".new", payload["beat"])
        time.sleep(0.1)

import ray  # noqa: E402 (only this branch needs the cluster)

ray.init(log_to_driver=False)  # the job's cluster: Ray sets its address for the job


@ray.remote(num_cpus=0.1)
def node() -> str:
    return ray.get_runtime_context().get_node_id()


report(
    "succeeded",
    result={"echo": payload, "attempt": job["attempt"], "node": ray.get(node.remote())},
    model="sim",
    input_tokens=12,
    output_tokens=3,
)
