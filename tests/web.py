"""A real Conveyor web server on loopback, in the test's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from conveyor import App
from conveyor.web import create_app
from conveyor.web.serve import make_server


@asynccontextmanager
async def serving(app: App) -> AsyncIterator[str]:
    """Serve `app` on a free port of 127.0.0.1; yield its base URL."""
    server = make_server(create_app(app), "127.0.0.1", 0, token=app.settings.api_token)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # it failed to start: say why
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
