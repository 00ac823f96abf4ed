"""Real `conveyor worker` processes for tests: start, signal, kill, wait."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    def __init__(
        self,
        database_url: str,
        *,
        concurrency: int = 8,
        app: str = "tests.worker_app:app",
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.log_path = log_path
        environment = {
            **os.environ,
            "CONVEYOR_DATABASE_URL": database_url,
            "CONVEYOR_POLL_INTERVAL": "0.2",
            "CONVEYOR_SWEEP_INTERVAL": "0.2",
            "PYTHONPATH": str(ROOT),
            **(env or {}),
        }
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "conveyor.cli",
                "worker",
                "--app",
                app,
                "--concurrency",
                str(concurrency),
            ],
            env=environment,
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye, exactly like a crash or an OOM kill."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        if self._log is not subprocess.DEVNULL:
            self._log.close()  # type: ignore[union-attr]

    def output(self) -> str:
        return self.log_path.read_text() if self.log_path else ""
