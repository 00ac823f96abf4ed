"""The command line: every command, its flags and their types, and `main`, which runs one.

A new command is added here (its flags) and in the module of its topic (its `cmd_*`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from conveyor.cli import admin, documents, reviews, serve, tasks
from conveyor.cli.common import Command
from conveyor.errors import ConveyorError
from conveyor.log import configure
from conveyor.settings import Settings, parse_duration


def _int_between(low: int, high: int = 2**31 - 1) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high`, with a message that says so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, not {value}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, not {value}")
        return value

    return parse


_positive_int = _int_between(1)
_non_negative_int = _int_between(0)
_port = _int_between(0, 65535)


def _seconds(text: str) -> float:
    """An argparse type: a duration (45s, 10m, 30d), in seconds."""
    try:
        return parse_duration(text)
    except ConveyorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conveyor",
        description="Long-running, rate-limited AI agent tasks on PostgreSQL.",
    )
    parser.add_argument(
        "--database-url",
        help="PostgreSQL URL (default: $CONVEYOR_DATABASE_URL, "
        "else an embedded server under $CONVEYOR_HOME)",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, fn: Command, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(run=fn)
        return p

    p = command(
        "up", serve.cmd_up, "run everything: database, migrations, a worker with the demo agents"
    )
    p.add_argument("--concurrency", type=_positive_int, default=8)
    p.add_argument("--prefetch", type=_non_negative_int, help="see `conveyor worker --help`")
    p.add_argument("--host", default="127.0.0.1", help="where the web app listens")
    p.add_argument("--port", type=_port, default=8000)
    p.add_argument(
        "--no-demo",
        dest="demo",
        action="store_false",
        help="do not enqueue demo tasks into an empty database",
    )

    p = command("worker", serve.cmd_worker, "run a worker daemon for the agents of an App")
    p.add_argument("--app", required=True, metavar="MODULE:APP")
    p.add_argument(
        "--concurrency",
        type=_positive_int,
        default=16,
        help="how many tasks run at once (default 16)",
    )
    p.add_argument(
        "--prefetch",
        type=_non_negative_int,
        help="tasks claimed ahead of a free slot, to hide the round trip (default: = concurrency; "
        "for agents that run for a few ms or less, more: up to 0.1 s of their work, 512 at most)",
    )
    p.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="only this agent (repeatable; default: all the App declares)",
    )

    p = command("web", serve.cmd_web, "serve the HTTP API (and registers the agents of --app)")
    p.add_argument("--app", metavar="MODULE:APP")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8000)

    command("migrate", admin.cmd_migrate, "apply the schema migrations the database lacks")

    p = command("enqueue", tasks.cmd_enqueue, "enqueue one task and print its id")
    p.add_argument("agent")
    p.add_argument("payload", nargs="?", help="JSON payload (default {})")
    p.add_argument("--priority", type=int, default=0)
    p.add_argument("--key", help="idempotency key")
    p.add_argument("--delay", type=_seconds, help="run after this long, e.g. 30s or 5m")

    p = command("submit", tasks.cmd_submit, "store files as documents and make each a task")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--agent", help="the agent that processes them")
    p.add_argument("--priority", type=int, default=0)
    p.add_argument("--key", help="idempotency key of a re-run (see --rerun)")
    p.add_argument(
        "--rerun",
        action="store_true",
        help="a new task even if the same bytes were submitted to the agent before",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until the tasks finish; exit 1 if any did not complete",
    )

    p = command("tasks", tasks.cmd_tasks, "list recent tasks")
    p.add_argument(
        "--status", choices=["enqueued", "processing", "completed", "failed", "cancelled"]
    )
    p.add_argument("--agent")
    p.add_argument("--limit", type=_positive_int, default=20)
    p.add_argument(
        "--top-level", action="store_true", help="only tasks nobody spawned (no child tasks)"
    )
    p.add_argument("--json", action="store_true", help="JSON, for scripts")

    p = command(
        "status",
        admin.cmd_status,
        "tasks by status per agent, in flight, limits and usage, cost today",
    )
    p.add_argument("--json", action="store_true", help="JSON, for scripts")

    p = command("task", tasks.cmd_task, "show one task with its attempts")
    p.add_argument("id", type=_positive_int)

    p = command("cancel", tasks.cmd_cancel, "cancel an enqueued or running task")
    p.add_argument("id", type=_positive_int)

    p = command("retry", tasks.cmd_retry, "enqueue a failed or cancelled task again")
    p.add_argument("id", type=_positive_int)

    p = command(
        "limits",
        admin.cmd_limits,
        "show each agent's limits and their use; `limits set` / `limits reset` change them",
    )
    p.set_defaults(action="show")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    setter = actions.add_parser(
        "set",
        help="set an agent's limits (they win over the code's; 0 removes one)",
        description="Set an agent's limits; they apply to the next claim, on every worker.",
    )
    setter.add_argument("agent")
    setter.add_argument("--max-concurrent", type=_non_negative_int, metavar="N")
    setter.add_argument("--max-tpm", type=_non_negative_int, metavar="N", help="tokens per window")
    setter.add_argument(
        "--max-rpm",
        type=_non_negative_int,
        metavar="N",
        help="requests (attempts started) per window",
    )
    setter.add_argument(
        "--window",
        type=_seconds,
        metavar="DURATION",
        help="the rolling window, e.g. 60s (default one minute)",
    )
    resetter = actions.add_parser(
        "reset", help="back to the limits declared in code; forget learned throttling"
    )
    resetter.add_argument("agent")

    p = command(
        "reviews",
        reviews.cmd_reviews,
        "pending reviews by agent and tenant; `reviews threshold` shows or sets review_below",
    )
    p.set_defaults(action="show")
    p.add_argument("--json", action="store_true", help="JSON, for scripts")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    threshold = actions.add_parser(
        "threshold",
        help="show every agent's review threshold, or set one (it wins over the code's)",
        description="A result whose confidence is below its agent's threshold waits for a "
        "review; a new value applies to the next completion, on every worker.",
    )
    threshold.add_argument("agent", nargs="?")
    threshold.add_argument("review_below", nargs="?", type=_fraction, metavar="VALUE")
    threshold.add_argument("--reset", action="store_true", help="back to the code's threshold")

    p = command("prune", admin.cmd_prune, "delete finished tasks older than a duration")
    p.add_argument(
        "--older-than", type=_seconds, required=True, metavar="DURATION", help="e.g. 30d, 12h"
    )
    p.add_argument(
        "--batch",
        type=_positive_int,
        default=1000,
        help="tasks deleted per transaction (default 1000)",
    )

    p = command("documents", documents.cmd_documents, "the document store (CONVEYOR_DOCUMENTS_URL)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    mover = actions.add_parser(
        "migrate",
        help="copy every document to another store, verified by sha256, and switch to it "
        "(resumable: run it again after a stop)",
    )
    mover.add_argument(
        "--to", required=True, metavar="URL", help="postgresql, file:///folder, s3://bucket/prefix"
    )
    mover.add_argument(
        "--remove-source", action="store_true", help="delete each from its old store once moved"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        configure(Settings.from_env().log_format, args.log_level)
        code: int = asyncio.run(args.run(args))
        return code
    except ConveyorError as exc:
        print(f"conveyor: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
