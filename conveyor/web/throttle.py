"""Throttling of wrong guesses at /login, per client address.

The first FREE wrong tokens from an address cost nothing (a typo, a paste of the wrong
secret); after that, each wrong one closes the address for twice as long as the one
before (1 s, 2 s, 4 s, … at most MAX_DELAY). While it is closed every sign-in from it is
answered 429 without the token being looked at, so a right guess cannot be told from a
wrong one: about a dozen guesses an hour instead of 100 in 3 s. A right token opens the
address again. IPv6 addresses count by their /64, which one client usually holds whole.

In this process's memory, not in the database, on purpose: an unauthenticated client
must not be able to make the server write; what a restart forgets is at most one more
round of FREE guesses; and each web process keeping its own count multiplies the rate by
the number of processes, a small constant. Entries idle for FORGET seconds are dropped,
and at most MAX_ADDRESSES are kept (the oldest go first), so memory stays bounded.
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE = 5
FIRST_DELAY = 1.0
MAX_DELAY = 300.0
FORGET = 3600.0
MAX_ADDRESSES = 10_000


@dataclass
class _Record:
    failures: int = 0
    closed_until: float = 0.0
    last: float = 0.0


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # monotonic: a throttle measures intervals, not dates
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def wait(self, address: str) -> float:
        """Seconds until `address` may try again; 0 when it may now."""
        record = self._records.get(_key(address))
        if record is None:
            return 0.0
        return max(0.0, record.closed_until - self.clock())

    def failed(self, address: str) -> None:
        now = self.clock()
        key = _key(address)
        record = self._records.pop(key, None)
        if record is None or now - record.last > FORGET:
            record = _Record()
        record.failures += 1
        record.last = now
        beyond = record.failures - FREE
        if beyond > 0:
            record.closed_until = now + min(MAX_DELAY, FIRST_DELAY * 2 ** min(beyond - 1, 20))
        self._records[key] = record  # the most recent last
        while len(self._records) > MAX_ADDRESSES:
            self._records.popitem(last=False)

    def succeeded(self, address: str) -> None:
        self._records.pop(_key(address), None)


def _key(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an IP (a Unix socket's peer, a test client): as it is
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
