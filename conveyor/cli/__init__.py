"""The `conveyor` command (the console script runs `main`; `python -m conveyor.cli` too).

The package, split along its seams:
  parser.py    every command, its flags and their types; `main` runs the one asked for
  common.py    what every command shares: CliError, the App and settings the flags name
  serve.py     the long-running commands: up, worker, web (and running until a signal)
  tasks.py     commands on tasks: enqueue, submit, tasks, task, cancel, retry
  admin.py     commands on the system: migrate, status, limits, prune
  documents.py commands on stored documents: documents migrate
  progress.py  waiting for tasks to finish (`submit --wait`), a bar or plain lines
  output.py    tables and values as commands print them

A new command: its `cmd_*` function in the module of its topic (a new module for a new
topic, e.g. documents.py for `conveyor documents ...`), its flags in parser.build_parser.
"""

from conveyor.cli.common import CliError, load_app
from conveyor.cli.parser import build_parser, main

__all__ = ["CliError", "build_parser", "load_app", "main"]
