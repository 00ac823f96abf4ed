"""`conveyor documents migrate --to URL`: move every stored document to another store
(conveyor.documents.stores.migrate), verified by sha256, resumable."""

from __future__ import annotations

import argparse
import sys

from conveyor.app import App
from conveyor.cli.common import CliError, settings_from
from conveyor.document_urls import BadStoreUrl, parse
from conveyor.documents.stores.migrate import Migration, migrate_documents


async def cmd_documents(args: argparse.Namespace) -> int:
    """`conveyor documents ACTION` (migrate is the one action)."""
    return await cmd_documents_migrate(args)


async def cmd_documents_migrate(args: argparse.Namespace) -> int:
    try:
        target = parse(args.to).url
    except BadStoreUrl as exc:
        raise CliError(f"--to {exc}") from None

    def progress(state: Migration) -> None:
        if sys.stderr.isatty():
            print(f"\r{state.moved} moved, {len(state.failed)} left", end="", file=sys.stderr)

    async with App(settings=settings_from(args)) as app:
        result = await migrate_documents(
            await app.database(),
            app.settings,
            target,
            remove_source=args.remove_source,
            progress=progress,
        )
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(
        f"{result.moved} document(s) moved to {result.target}, "
        f"{result.already} there already, {len(result.failed)} left where they are"
    )
    for failure in result.failed:
        print(f"  {failure}", file=sys.stderr)
    if app.settings.documents_url != result.target:
        print(
            f"new uploads go to {app.settings.documents_url}: set CONVEYOR_DOCUMENTS_URL={target}"
        )
    return 1 if result.failed else 0
