"""The server's TCP port on loopback: whether one is free, and choosing a new one."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

from conveyor.db.embedded.layout import HOST


def port_free(port: int) -> bool:
    """Whether PostgreSQL could listen on 127.0.0.1:port (it too sets SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def choose_port() -> int:
    """A free TCP port on 127.0.0.1, preferably below the kernel's ephemeral port range.

    Ports in the ephemeral range are handed out to outgoing connections, which could take
    ours while the server is down; ports below it are only ever taken by explicit binds.
    """
    low = 32768
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low > 11000:
        for _ in range(100):
            port = random.randint(10000, low - 1)
            if port_free(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])
