"""The server's ceiling for small write transactions, measured with pgbench.

Every queue here pays at least one commit (one WAL flush) per exchange with the database,
so the rate at which this server commits one-row updates bounds what any of them can do
per transaction. pgbench measures that with nothing but libpq in the way.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

# One row updated per transaction, at a random account of the 100,000 that -s 1 makes.
SCRIPT = """\\set aid random(1, 100000 * :scale)
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
"""

_TPS = re.compile(r"tps = ([\d.]+) \(without initial connection time\)")


class Pgbench:
    def __init__(self, url: str) -> None:
        # pgbench takes a connection URI where it expects a database name.
        self.url = url
        self._folder = tempfile.TemporaryDirectory(prefix="bench_pgbench_")
        self.script = Path(self._folder.name) / "one_row_update.sql"
        self.script.write_text(SCRIPT)

    def prepare(self) -> None:
        """pgbench -i -s 1: 100,000 accounts."""
        subprocess.run(
            ["pgbench", "-i", "-s", "1", "-q", self.url],
            check=True,
            capture_output=True,
        )

    def tps(self, clients: int, seconds: int) -> float:
        """Transactions per second of the one-row-update script with `clients` clients."""
        threads = min(clients, 2)  # one pgbench thread per core is plenty for the client side
        done = subprocess.run(
            [
                *("pgbench", "-n", "-M", "prepared", "-f", str(self.script)),
                *("-c", str(clients), "-j", str(threads), "-T", str(seconds), self.url),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        match = _TPS.search(done.stdout)
        if not match:
            raise RuntimeError(f"no tps in pgbench's output:\n{done.stdout}\n{done.stderr}")
        return float(match.group(1))

    def close(self) -> None:
        self._folder.cleanup()
