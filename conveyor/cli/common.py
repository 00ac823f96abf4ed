"""What every command shares: its error, and the App and settings the flags name."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from conveyor.app import App
from conveyor.errors import ConveyorError
from conveyor.settings import Settings

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


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    if args.database_url:
        settings = replace(settings, database_url=args.database_url)
    return settings


def app_from(args: argparse.Namespace, spec: str) -> App:
    app = load_app(spec)
    if args.database_url:
        app.settings = replace(app.settings, database_url=args.database_url)
    return app
