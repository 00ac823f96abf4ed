"""The App that tests/test_document_fanout.py runs in real `conveyor worker` processes:
the `contract` document agent, with the limits given as JSON in FANOUT_LIMITS; the model
is the simulator the test serves (CONVEYOR_LLM_* in the environment)."""

from __future__ import annotations

import json
import os

from conveyor import App
from conveyor.agents.documents import declare_document_agents

app = App()
declare_document_agents(
    app,
    names={"contract": "contract"},
    limits=json.loads(os.environ.get("FANOUT_LIMITS") or "{}"),
)
