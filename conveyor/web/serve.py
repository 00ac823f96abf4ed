"""Serving the API with uvicorn, under Conveyor's own signal handling.

`conveyor up` runs the web app and a worker in one event loop; SIGTERM must drain the
worker and stop the server together, so uvicorn is told not to install handlers of its own.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from conveyor.errors import ConveyorError


class Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, api: FastAPI) -> None:
        super().__init__(config)
        self.api = api

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the caller handles SIGTERM and SIGINT, and sets should_exit

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn waits for open responses before its lifespan shutdown, and an event
        # stream never ends by itself: end the streams first.
        hub = getattr(self.api.state, "events", None)
        if hub is not None:
            hub.close_streams()
        await super().shutdown(sockets)
        if self.force_exit and self.config.lifespan != "off":
            # A second signal sets force_exit, and uvicorn then skips the lifespan's
            # shutdown: the lifespan task would be cancelled at loop close and logged as a
            # traceback, and the app's own shutdown (the event hub's LISTEN) would not run.
            # Connections are not waited for; the lifespan shutdown is quick.
            await self.lifespan.shutdown()


def make_server(api: FastAPI, host: str, port: int, *, token: str | None) -> Server:
    check_exposure(host, token)
    names = getattr(api.state, "served_names", None)
    if names is not None:  # the Host check (web/security.py) accepts the name it listens on
        names.add(host)
    config = uvicorn.Config(
        api,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        proxy_headers=False,
    )
    return Server(config, api)


def check_exposure(host: str, token: str | None) -> None:
    """Listening beyond loopback without a token would publish every task to the network."""
    if token or _is_loopback(host):
        return
    raise ConveyorError(
        f"refusing to listen on {host} without CONVEYOR_API_TOKEN: anyone who can reach it "
        "could read and submit tasks (set a token, or listen on 127.0.0.1)"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(
                ipaddress.ip_address(info[4][0]).is_loopback
                for info in socket.getaddrinfo(host, None)
            )
        except OSError:
            return False
