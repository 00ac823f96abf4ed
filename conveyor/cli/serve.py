"""The long-running commands: `up`, `worker` and `web`, and how they run until a signal."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from conveyor import queue
from conveyor.app import App
from conveyor.cli.common import CliError, app_from, settings_from
from conveyor.worker import Worker

if TYPE_CHECKING:
    from conveyor.web.serve import Server


async def cmd_up(args: argparse.Namespace) -> int:
    from conveyor.demo import app, enqueue_demo_documents
    from conveyor.web import create_app
    from conveyor.web.documents import check_store
    from conveyor.web.serve import make_server

    app.settings = settings_from(args)
    await _check_llm(app)
    if not os.environ.get("CONVEYOR_PUBLIC_URL"):  # external jobs call back to this server
        app.settings = replace(app.settings, public_url=f"http://{args.host}:{args.port}")
    server = make_server(create_app(app), args.host, args.port, token=_any_token(app))
    where = (
        "CONVEYOR_DATABASE_URL"
        if app.settings.database_url
        else f"embedded PostgreSQL under {app.settings.home / 'postgres'}"
    )
    print(f"conveyor: database: {where}", flush=True)
    db = await app.database()
    print("conveyor: migrations applied", flush=True)
    await check_store(app)  # before the demo stores documents, and with a clear error
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
    from conveyor.documents.stores import configured_store

    app = app_from(args, args.app)
    worker = _worker(app, args)
    # The store this worker's CONVEYOR_DOCUMENTS_URL names (what its prune deletes from): a
    # wrong bucket or credentials stop it here with one line, not at its first document.
    try:
        await configured_store(app.settings).check(await app.database())
    except BaseException:
        await app.aclose()  # an embedded database it started stops with it
        raise
    await _run(app, worker, None)
    return 0


async def cmd_web(args: argparse.Namespace) -> int:
    from conveyor.web import create_app
    from conveyor.web.documents import check_store
    from conveyor.web.serve import make_server

    app = app_from(args, args.app) if args.app else App(settings=settings_from(args))
    await check_store(app)  # here, for a clear error: the lifespan's would be a traceback
    server = make_server(create_app(app), args.host, args.port, token=_any_token(app))
    print(f"conveyor: dashboard on http://{args.host}:{args.port}/ (API docs at /docs)", flush=True)
    await _run(app, None, server)
    return 0


def _any_token(app: App) -> str | None:
    """A token the API requires, if it requires one (CONVEYOR_API_TOKEN or _TOKENS)."""
    return next(iter(app.settings.named_tokens().values()), None)
