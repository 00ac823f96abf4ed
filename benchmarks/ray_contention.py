"""The control for bench_ray: in-process attempts with plain Ray tasks running alongside.

    python benchmarks/ray_contention.py [--server URL] [--tasks 2000] [--alongside 0 8 16]

bench_ray finds a worker's exchange (outcomes out, claims in, one round trip) 3-4 times
slower while its Ray attempts run than while its in-process ones do. Is that Conveyor's
Ray executor, or Ray's work on the same cores? Here no attempt is a Ray task: one worker
in this process drains `--tasks` no-op in-process attempts (concurrency 16) while this
process, as a plain Ray driver, keeps N no-op Ray tasks in flight (each asking for 2/16 of
the local cluster's 2 CPUs, as bench_ray's do), for each N of `--alongside`. Printed per
N: the exchanges' round trip, the in-process attempts' times, the Ray tasks run meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import bench_ray  # beside this file
from scratch import fresh_database

from conveyor import App
from conveyor.settings import Settings


async def alongside(url: str, tasks: int, in_flight: int) -> None:
    import ray

    remote = ray.remote(max_retries=0, num_cpus=2 / bench_ray.CONCURRENCY)(bench_ray.noop)
    stop = asyncio.Event()
    ran = 0

    async def keep_one_in_flight() -> None:
        nonlocal ran
        while not stop.is_set():
            await remote.remote(None)
            ran += 1

    bench = App(
        settings=Settings(database_url=url, home=Path(tempfile.mkdtemp()), poll_interval=0.2)
    )
    bench.agents.update(bench_ray.app.agents)
    async with bench, bench.connection() as conn:
        await asyncio.gather(*(remote.remote(None) for _ in range(128)))  # Ray's processes
        flood = [asyncio.create_task(keep_one_in_flight()) for _ in range(in_flight)]
        began = time.perf_counter()
        since = await bench_ray._drain(bench, "inproc", tasks)
        seconds = time.perf_counter() - began
        stop.set()
        await asyncio.gather(*flood)
        label = f"+{in_flight} Ray"
        bench_ray._stats(label, *await bench_ray._durations(conn, "inproc", since))
        print(f"{'':>14}plain Ray tasks run meanwhile: {ran / seconds:.0f}/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("CONVEYOR_TEST_DATABASE_URL"))
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--alongside", type=int, nargs="+", default=[0, 8, 16])
    args = parser.parse_args()
    if not args.server:
        sys.exit("--server URL (or CONVEYOR_TEST_DATABASE_URL): a PostgreSQL to create a db in")
    import ray

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    name = f"conveyor_ray_contention_{secrets.token_hex(4)}"
    with fresh_database(args.server, name) as url:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            for in_flight in args.alongside:
                print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
                asyncio.run(alongside(url, args.tasks, in_flight))
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
