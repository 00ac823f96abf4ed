"""The dashboard's session cookie: signed, different at every sign-in, and expiring.

A value is `<id>.<expires>.<mac>`: a random id, the Unix time it expires at, and an
HMAC-SHA256 of both under a key derived from the API token. Nothing is stored: any web
process with the same token can check a cookie, a changed token ends every session, and a
cookie that has expired, or was altered, is no session. Expiry is wall-clock time, as the
browser's own `Max-Age` is; the server checks it too, since a client can keep a cookie
past its age.

Signing out revokes the id in this process's memory until it would have expired (a
revoked cookie is also removed from the browser); other web processes, or this one after
a restart, accept it until then. The cookie is HttpOnly, so a script cannot have copied it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie

from starlette.types import Scope

COOKIE = "conveyor_session"
LIFETIME = 12 * 3600.0
_KEY_LABEL = b"conveyor dashboard session key v1"


class Sessions:
    def __init__(
        self,
        token: str,
        *,
        lifetime: float = LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = hmac.new(token.encode(), _KEY_LABEL, hashlib.sha256).digest()
        self.lifetime = lifetime
        self.clock = clock
        self._revoked: dict[str, float] = {}  # id -> when it expires anyway

    def issue(self) -> str:
        """A new session's cookie value."""
        body = f"{secrets.token_urlsafe(18)}.{int(self.clock() + self.lifetime)}"
        return f"{body}.{self._mac(body)}"

    def check(self, value: str) -> str | None:
        """The session's id, if `value` is a session this token signed that has neither
        expired nor been revoked."""
        body, _, mac = value.rpartition(".")
        session_id, _, expires = body.partition(".")
        if not (session_id and expires.isascii() and expires.isdigit()):
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(body).encode()):
            return None
        if int(expires) <= self.clock() or session_id in self._revoked:
            return None
        return session_id

    def revoke(self, value: str) -> None:
        session_id = self.check(value)
        if session_id is None:
            return
        now = self.clock()
        # Forget the revocations that have expired by themselves: the set stays small.
        self._revoked = {k: t for k, t in self._revoked.items() if t > now}
        self._revoked[session_id] = float(value.split(".")[1])

    def of_scope(self, scope: Scope) -> str | None:
        """The session cookie a request carries (its raw value), if any."""
        raw = dict(scope.get("headers", ())).get(b"cookie")
        if not raw:
            return None
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(raw.decode("latin-1"))
        except CookieError:  # a malformed Cookie header is simply no session
            return None
        morsel = cookie.get(COOKIE)
        return None if morsel is None else morsel.value

    def reads(self, scope: Scope) -> bool:
        """A valid session cookie, on a request that only reads: the cookie lets a browser
        read; every change still needs the bearer token."""
        if scope.get("method") not in ("GET", "HEAD"):
            return False
        value = self.of_scope(scope)
        return value is not None and self.check(value) is not None

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
