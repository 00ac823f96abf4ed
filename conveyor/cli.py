"""The `conveyor` command."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conveyor import queue
from conveyor.app import App
from conveyor.errors import ConveyorError
from conveyor.log import configure
from conveyor.settings import Settings, parse_duration
from conveyor.states import FINISHED
from conveyor.worker import Worker

if TYPE_CHECKING:
    from conveyor.web.serve import Server

Command = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


class CliError(ConveyorError):
    pass


def load_app(spec: str) -> App:
    """Import MODULE:APP (the current directory is importable, as with `python -m`)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--app must look like MODULE:APP (e.g. myproject.tasks:app), not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import {module_name!r}: {exc}") from None
    app = getattr(module, attr, None)
    if not isinstance(app, App):
        raise CliError(f"{spec!r} is not a conveyor.App (found {type(app).__name__})")
    return app


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    if args.database_url:
        settings = replace(settings, database_url=args.database_url)
    return settings


def _app(args: argparse.Namespace, spec: str) -> App:
    app = load_app(spec)
    if args.database_url:
        app.settings = replace(app.settings, database_url=args.database_url)
    return app


# ---------------------------------------------------------------------------------------
# Commands


async def cmd_up(args: argparse.Namespace) -> int:
    from conveyor.demo import app, enqueue_demo_documents
    from conveyor.web import create_app
    from conveyor.web.serve import make_server

    app.settings = _settings(args)
    await _check_llm(app)
    if not os.environ.get("CONVEYOR_PUBLIC_URL"):  # external jobs call back to this server
        app.settings = replace(app.settings, public_url=f"http://{args.host}:{args.port}")
    server = make_server(create_app(app), args.host, args.port, token=app.settings.api_token)
    where = (
        "CONVEYOR_DATABASE_URL"
        if app.settings.database_url
        else f"embedded PostgreSQL under {app.settings.home / 'postgres'}"
    )
    print(f"conveyor: database: {where}", flush=True)
    db = await app.database()
    print("conveyor: migrations applied", flush=True)
    if args.demo:
        async with db.connection() as conn:
            empty = not await queue.list_tasks(conn, limit=1)
        if empty:
            ids = await enqueue_demo_documents(
                app, lambda line: print(f"conveyor: {line}", flush=True)
            )
            if ids:
                print(
                    f"conveyor: enqueued {len(ids)} demo documents (ids {ids[0]}..{ids[-1]}); "
                    f"results: conveyor tasks, or GET /api/tasks/ID",
                    flush=True,
                )
    extractor = app.settings.llm_model or "offline (set CONVEYOR_LLM_MODEL for a model)"
    print(f"conveyor: document extractor: {extractor}", flush=True)
    print(f"conveyor: dashboard on http://{args.host}:{args.port}/ (API docs at /docs)", flush=True)
    print(
        f"conveyor: worker running agents {', '.join(sorted(app.agents))} "
        f"with concurrency {args.concurrency}; Ctrl-C to stop",
        flush=True,
    )
    await _run(app, _worker(app, args), server)
    return 0


async def _check_llm(app: App) -> None:
    """A configured model that cannot be used (no key) fails `up` at once, not each task."""
    from conveyor.llm.client import LLMClient, LLMRequestRefused

    try:
        client = LLMClient.from_settings(app.settings)
    except LLMRequestRefused as exc:
        raise CliError(str(exc)) from None
    if client is not None:
        await client.aclose()


def _worker(app: App, args: argparse.Namespace) -> Worker:
    try:
        return Worker(
            app,
            concurrency=args.concurrency,
            prefetch=args.prefetch,
            agents=getattr(args, "agent", None),
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None


async def _run(app: App, worker: Worker | None, server: Server | None) -> None:
    """Run a worker and/or the web server until SIGTERM or SIGINT: the first signal drains
    (the worker stops claiming and lets running tasks finish; the server stops accepting),
    a second one hands running tasks back and stops at once."""
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        name = signal.Signals(signum).name
        print(
            f"conveyor: {name}, {'stopping now' if signals > 1 else 'draining'}",
            file=sys.stderr,
            flush=True,
        )
        if worker is not None:
            worker.stop(now=signals > 1)
        if server is not None:
            server.should_exit = True
            server.force_exit = signals > 1

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    jobs = [
        asyncio.create_task(job)
        for job in (worker.run() if worker else None, server.serve() if server else None)
        if job
    ]
    try:
        done, _ = await asyncio.wait(jobs, return_when=asyncio.FIRST_EXCEPTION)
        for job in done:
            job.result()  # a server that could not start ends everything, loudly
    finally:
        if worker is not None:
            worker.stop()
        if server is not None:
            server.should_exit = True
        await asyncio.gather(*jobs, return_exceptions=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await app.aclose()


async def cmd_worker(args: argparse.Namespace) -> int:
    app = _app(args, args.app)
    await _run(app, _worker(app, args), None)
    return 0


async def cmd_web(args: argparse.Namespace) -> int:
    from conveyor.web import create_app
    from conveyor.web.serve import make_server

    app = _app(args, args.app) if args.app else App(settings=_settings(args))
    server = make_server(create_app(app), args.host, args.port, token=app.settings.api_token)
    print(f"conveyor: dashboard on http://{args.host}:{args.port}/ (API docs at /docs)", flush=True)
    await _run(app, None, server)
    return 0


async def cmd_migrate(args: argparse.Namespace) -> int:
    from conveyor.db.migrate import migrate
    from conveyor.db.pool import MIGRATION_STATEMENT_TIMEOUT

    async with App(settings=_settings(args), auto_migrate=False) as app:
        db = await app.database()
        # A migration may rewrite a large table: it gets longer than other statements.
        async with db.connection(statement_timeout=MIGRATION_STATEMENT_TIMEOUT) as conn:
            applied = await migrate(conn)
    print(
        f"applied {len(applied)} migration(s): {', '.join(applied)}"
        if applied
        else "the schema is up to date"
    )
    return 0


async def cmd_enqueue(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(args.payload) if args.payload is not None else None
    except ValueError as exc:
        raise CliError(f"the payload is not JSON: {exc}") from None
    async with App(settings=_settings(args)) as app:
        task_id = await app.enqueue_async(
            args.agent,
            payload,
            priority=args.priority,
            idempotency_key=args.key,
            run_after=args.delay,
        )
    print(task_id)
    return 0


async def cmd_submit(args: argparse.Namespace) -> int:
    from conveyor.documents import submit_files

    if not args.agent:
        raise CliError("name the agent that processes the files: --agent NAME")
    async with App(settings=_settings(args)) as app:
        submitted = await submit_files(
            app,
            args.files,
            agent=args.agent,
            priority=args.priority,
            idempotency_key=args.key,
            rerun=args.rerun,
        )
        for item in submitted:
            note = " (already submitted: the same task)" if item.duplicate else ""
            print(f"{item.name or item.document.sha256[:12]}: task {item.task_id}{note}")
        if not args.wait:
            return 0
        outcomes = await _wait_for(app, [item.task_id for item in submitted])
    failed = [task_id for task_id, status in outcomes.items() if status != "completed"]
    return 1 if failed else 0


async def _wait_for(app: App, task_ids: list[int]) -> dict[int, str]:
    """Wait until every task is finished, each shown as it finishes: a progress bar on a
    terminal, plain lines otherwise. Driven by the database's NOTIFYs (the same events as
    /api/events); every task is read once LISTEN is up, and again after a reconnect (the
    NOTIFYs sent meanwhile are lost), so that no completion is missed."""
    from conveyor.listener import Listener

    wanted = set(task_ids)
    changed: set[int] = set()
    reread_all = asyncio.Event()
    woken = asyncio.Event()

    def on_event(event: dict[str, Any]) -> None:
        ids = event.get("ids")
        if isinstance(ids, list):
            mine = wanted.intersection(ids)
            changed.update(mine)
            if mine:
                woken.set()
        elif "count" in event:  # a statement too large to name its tasks
            reread_all.set()
            woken.set()

    def on_reconnect() -> None:
        reread_all.set()
        woken.set()

    settings = app.settings
    listener = Listener((await app.database()).url, on_event, on_reconnect=on_reconnect)
    listening = asyncio.create_task(listener.run()) if settings.listen else None
    if listening is not None:
        await listener.wait_listening(10.0)
    # Without LISTEN (CONVEYOR_LISTEN=0) this polls; with it, the poll is only a safety net.
    poll = settings.poll_interval if listening is None else 10.0
    finished: dict[int, str] = {}
    with _progress_view(len(task_ids)) as view:
        try:
            pending = list(task_ids)
            while True:
                for task_id in pending:
                    task = await app.get_task_async(task_id)
                    if task.status in FINISHED and task_id not in finished:
                        finished[task_id] = task.status
                        view.finished(task_id, task.status, task.error)
                if len(finished) == len(task_ids):
                    break
                woken.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), poll)
                if reread_all.is_set() or not woken.is_set():
                    reread_all.clear()
                    pending = [t for t in task_ids if t not in finished]
                else:
                    pending = [t for t in changed if t not in finished]
                changed.clear()
        finally:
            if listening is not None:
                listening.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listening
            await listener.close()
    return finished


class _Lines:
    """Progress as plain lines (not a terminal: scripts and logs read these)."""

    def finished(self, task_id: int, status: str, error: str | None) -> None:
        detail = f": {error.splitlines()[0]}" if error else ""
        print(f"task {task_id}: {status}{detail}", flush=True)


class _Bar(_Lines):
    """Progress as a bar (rich), each finished task printed above it."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
        )
        self.counts: dict[str, int] = {}
        self.bar = self.progress.add_task("tasks", total=total, tally="")

    def finished(self, task_id: int, status: str, error: str | None) -> None:
        from rich.markup import escape

        colour = {"completed": "green", "failed": "red"}.get(status, "yellow")
        detail = escape(f": {error.splitlines()[0]}") if error else ""
        self.progress.console.print(f"task {task_id}: [{colour}]{status}[/]{detail}")
        self.counts[status] = self.counts.get(status, 0) + 1
        tally = " · ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        self.progress.update(self.bar, advance=1, tally=tally)


@contextlib.contextmanager
def _progress_view(total: int) -> Iterator[_Lines]:
    if not sys.stdout.isatty():
        yield _Lines()
        return
    view = _Bar(total)
    with view.progress:
        yield view


async def cmd_tasks(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app, app.connection() as conn:
        rows = await queue.list_tasks(conn, status=args.status, agent=args.agent, limit=args.limit)
    if args.json:
        print(json.dumps([dict(r) for r in rows], indent=2, default=str))
        return 0
    _show_table(
        "",
        ["id", "agent", "status", "priority", "attempts", "created", "took", "error"],
        [
            [
                r["id"],
                r["agent"],
                r["status"],
                r["priority"],
                r["attempts"],
                _when(r["created_at"]),
                _took(r["created_at"], r["finished_at"]),
                (r["error"] or "").splitlines()[0][:60] if r["error"] else "",
            ]
            for r in rows
        ],
        numeric={"id", "priority", "attempts", "took"},
    )
    return 0


async def cmd_status(args: argparse.Namespace) -> int:
    from conveyor import metrics

    async with App(settings=_settings(args)) as app, app.connection() as conn:
        status = await metrics.overview(conn)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
        return 0
    agents = status["agents"]
    _show_table(
        "Tasks by status (finished: all history, pruned tasks included)",
        ["agent", "enqueued", "processing", "completed", "failed", "cancelled"],
        [[a["agent"], *(a["tasks"][s] for s in _STATUS_COLUMNS)] for a in agents],
        numeric=set(_STATUS_COLUMNS),
    )
    print()
    _show_table(
        "In flight, limits and their use in the current window",
        [
            "agent",
            "in flight",
            "queued",
            "concurrent",
            "tokens/window",
            "requests/window",
            "cost today",
        ],
        [
            [
                a["agent"],
                a["tasks"]["processing"],
                a["tasks"]["enqueued"],
                _usage(a["usage"]["concurrent"], a["limits"]["max_concurrent"], None),
                _usage(a["usage"]["tpm"], a["limits"]["max_tpm"], None),
                _usage(a["usage"]["rpm"], a["limits"]["max_rpm"], None),
                f"${a['cost_today_usd']:.4f}",
            ]
            for a in agents
        ],
        numeric={"in flight", "queued", "cost today"},
    )
    today = status["cost_today"]
    print(
        f"\ncost today (tasks created since {today['since']:%Y-%m-%d %H:%M} UTC): "
        f"${today['total_usd']:.4f} (LLM ${today['llm_usd']:.4f}, "
        f"compute ${today['compute_usd']:.4f})"
    )
    return 0


_STATUS_COLUMNS = ("enqueued", "processing", "completed", "failed", "cancelled")


def _took(created: datetime | None, finished: datetime | None) -> str:
    """How long a finished task took from creation, in the largest sensible unit."""
    if created is None or finished is None:
        return ""
    seconds = (finished - created).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


async def cmd_task(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app:
        task = await app.get_task_async(args.id)
    print(json.dumps(_record(task), indent=2, default=str))
    return 0


async def cmd_cancel(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app:
        task = await app.cancel_async(args.id)
    print(f"task {task.id}: {task.status}")
    return 0


async def cmd_retry(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app:
        task = await app.retry_async(args.id)
    print(f"task {task.id}: {task.status}")
    return 0


async def cmd_prune(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app, app.connection() as conn:
        deleted = await queue.prune(conn, older_than=args.older_than, batch=args.batch)
    print(f"deleted {deleted} finished task(s) older than {args.older_than:g} s")
    return 0


async def cmd_limits(args: argparse.Namespace) -> int:
    async with App(settings=_settings(args)) as app, app.connection() as conn:
        if args.action == "set":
            await queue.set_limits(
                conn,
                args.agent,
                max_concurrent=args.max_concurrent,
                max_tpm=args.max_tpm,
                max_rpm=args.max_rpm,
                window_seconds=args.window,
            )
        elif args.action == "reset":
            await queue.reset_limits(conn, args.agent)
        rows = await queue.agent_limits(conn)
    _show_table(
        "",
        ["agent", "concurrent", "tokens/window", "requests/window", "window", "set by", "throttle"],
        [
            [
                r["name"],
                _usage(r["running"], r["max_concurrent"], r["learned_concurrency"]),
                _usage(r["tokens"], r["max_tpm"], r["learned_tpm"]),
                _usage(r["requests"], r["max_rpm"], None),
                f"{r['window_seconds']:g}s",
                r["limits_source"],
                _throttle(r),
            ]
            for r in rows
        ],
    )
    return 0


def _usage(used: int, limit: int | None, learned: int | None) -> str:
    """'3 / 4': used of the limit; a learned cap (from throttling) shows too."""
    text = f"{used} / {limit}" if limit is not None else f"{used} / -"
    return f"{text} (learned {learned})" if learned is not None else text


def _throttle(row: Any) -> str:
    """What throttling does to the agent now: a pause (a 429's Retry-After) and the factor
    on its request limit; the learned token budget shows in its own column."""
    from conveyor.metrics import throttling

    state = throttling(row)
    parts = []
    if state["paused_for_seconds"] > 0:
        parts.append(f"paused {state['paused_for_seconds']:.1f}s")
    if state["request_factor"] < 1:
        parts.append(f"requests x{state['request_factor']:.2f}")
    return ", ".join(parts) or "-"


# ---------------------------------------------------------------------------------------
# Output helpers


def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else ""


def _record(task: queue.TaskRecord) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(task)


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _show_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    numeric: set[str] | frozenset[str] = frozenset(),
) -> None:
    """A table: drawn with rich on a terminal, plain aligned text when piped (stable for
    grep and scripts; `--json` is the format for programs)."""
    if not sys.stdout.isatty():
        if title:
            print(f"{title}:")
        _print_table(headers, rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title or None, title_justify="left", header_style="bold")
    for header in headers:
        table.add_column(header, justify="right" if header in numeric else "left")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    Console().print(table)


# ---------------------------------------------------------------------------------------
# Parsing


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

    p = command("up", cmd_up, "run everything: database, migrations, a worker with the demo agents")
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

    p = command("worker", cmd_worker, "run a worker daemon for the agents of an App")
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

    p = command("web", cmd_web, "serve the HTTP API (and registers the agents of --app)")
    p.add_argument("--app", metavar="MODULE:APP")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8000)

    command("migrate", cmd_migrate, "apply the schema migrations the database lacks")

    p = command("enqueue", cmd_enqueue, "enqueue one task and print its id")
    p.add_argument("agent")
    p.add_argument("payload", nargs="?", help="JSON payload (default {})")
    p.add_argument("--priority", type=int, default=0)
    p.add_argument("--key", help="idempotency key")
    p.add_argument("--delay", type=_seconds, help="run after this long, e.g. 30s or 5m")

    p = command("submit", cmd_submit, "store files as documents and make each a task")
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

    p = command("tasks", cmd_tasks, "list recent tasks")
    p.add_argument(
        "--status", choices=["enqueued", "processing", "completed", "failed", "cancelled"]
    )
    p.add_argument("--agent")
    p.add_argument("--limit", type=_positive_int, default=20)
    p.add_argument("--json", action="store_true", help="JSON, for scripts")

    p = command(
        "status", cmd_status, "tasks by status per agent, in flight, limits and usage, cost today"
    )
    p.add_argument("--json", action="store_true", help="JSON, for scripts")

    p = command("task", cmd_task, "show one task with its attempts")
    p.add_argument("id", type=_positive_int)

    p = command("cancel", cmd_cancel, "cancel an enqueued or running task")
    p.add_argument("id", type=_positive_int)

    p = command("retry", cmd_retry, "enqueue a failed or cancelled task again")
    p.add_argument("id", type=_positive_int)

    p = command(
        "limits",
        cmd_limits,
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

    p = command("prune", cmd_prune, "delete finished tasks older than a duration")
    p.add_argument(
        "--older-than", type=_seconds, required=True, metavar="DURATION", help="e.g. 30d, 12h"
    )
    p.add_argument(
        "--batch",
        type=_positive_int,
        default=1000,
        help="tasks deleted per transaction (default 1000)",
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


if __name__ == "__main__":
    sys.exit(main())
