"""The dashboard's session cookie: signed, different at every sign-in, and expiring.

A value is `<id>.<expires>.<mac>`: an id (random, and the name of the token signed in
with: `<random>~<name in base64url>`), the Unix time it expires at, and an HMAC-SHA256 of
both under a key derived from that name's API token. Nothing is stored: any web process
with the same tokens can check a cookie, a changed token ends its sessions (only its: with
named tokens, CONVEYOR_API_TOKENS, each person's sessions hang on their own token), and a
cookie that has expired, or was altered, is no session. The name is who a session acts
as: the reviewer a review made in the browser is recorded under. Expiry is wall-clock time, as the
browser's own `Max-Age` is; the server checks it too, since a client can keep a cookie
past its age.

Signing out revokes the id in this process's memory until it would have expired (a
revoked cookie is also removed from the browser); other web processes, or this one after
a restart, accept it until then. The cookie is HttpOnly, so a script cannot have copied it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from http.cookies import CookieError, SimpleCookie

from starlette.types import Scope

COOKIE = "conveyor_session"
LIFETIME = 12 * 3600.0
_KEY_LABEL = b"conveyor dashboard session key v1"


DEFAULT_NAME = "operator"  # a single CONVEYOR_API_TOKEN's name (conveyor.settings)


class Sessions:
    def __init__(
        self,
        tokens: str | Mapping[str, str],
        *,
        lifetime: float = LIFETIME,
        clock: Callable[[], float] = time.time,
    ) -> None:
        named = {DEFAULT_NAME: tokens} if isinstance(tokens, str) else dict(tokens)
        self._keys = {
            name: hmac.new(token.encode(), _KEY_LABEL, hashlib.sha256).digest()
            for name, token in named.items()
        }
        self.lifetime = lifetime
        self.clock = clock
        self._revoked: dict[str, float] = {}  # id -> when it expires anyway

    def issue(self, name: str = DEFAULT_NAME) -> str:
        """A new session's cookie value, for the holder of `name`'s token."""
        if name not in self._keys:
            raise KeyError(f"no token named {name!r}")
        label = base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
        body = f"{secrets.token_urlsafe(18)}~{label}.{int(self.clock() + self.lifetime)}"
        return f"{body}.{self._mac(name, body)}"

    def check(self, value: str) -> str | None:
        """The session's id, if `value` is a session one of the tokens signed that has
        neither expired nor been revoked."""
        found = self._checked(value)
        return None if found is None else found[0]

    def name_of(self, value: str) -> str | None:
        """Whose session `value` is (the name of the token signed in with), if valid."""
        found = self._checked(value)
        return None if found is None else found[1]

    def _checked(self, value: str) -> tuple[str, str] | None:
        body, _, mac = value.rpartition(".")
        session_id, _, expires = body.partition(".")
        if not (session_id and expires.isascii() and expires.isdigit()):
            return None
        name = _name_in(session_id)
        if name is None or name not in self._keys:
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(name, body).encode()):
            return None
        if int(expires) <= self.clock() or session_id in self._revoked:
            return None
        return session_id, name

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
        return self.who(scope) is not None

    def who(self, scope: Scope) -> str | None:
        """The name of the session a request carries, if it carries a valid one."""
        value = self.of_scope(scope)
        return None if value is None else self.name_of(value)

    def _mac(self, name: str, body: str) -> str:
        return hmac.new(self._keys[name], body.encode(), hashlib.sha256).hexdigest()


def _name_in(session_id: str) -> str | None:
    _, tilde, label = session_id.partition("~")
    if not tilde or not label.isascii():
        return None
    try:
        return base64.urlsafe_b64decode(label + "=" * (-len(label) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
