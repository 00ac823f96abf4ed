"""The App that the worker processes of bench_long_document.py run: the `contract`
document agent, declared as the harness says in BENCH_LONG_DOCUMENT (JSON: `limits` for
App.agent, `parallel` chunk requests per attempt, `fanout`), the model settings from the
usual CONVEYOR_LLM_* variables.

    CONVEYOR_DATABASE_URL=... CONVEYOR_LLM_MODEL=... CONVEYOR_LLM_BASE_URL=... \\
    BENCH_LONG_DOCUMENT='{"limits": {"max_tpm": 200000}, "fanout": true}' \\
    python -m conveyor.cli worker --app long_document_app:app --concurrency 16

(with this folder on PYTHONPATH).
"""

from __future__ import annotations

import json
import os
from typing import Any

from conveyor import App
from conveyor.agents.documents import declare_document_agents

ENV = "BENCH_LONG_DOCUMENT"
AGENT = "contract"


def declare(app: App, options: dict[str, Any]) -> None:
    declare_document_agents(app, names={AGENT: "contract"}, **options)


app = App()
declare(app, json.loads(os.environ.get(ENV) or "{}"))
