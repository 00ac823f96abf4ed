"""What keeps other web sites out of Conveyor, for every request before any route sees it.

A web page the operator visits can make their browser send requests to Conveyor on
loopback. Three checks stop it from acting on Conveyor or reading from it:

- **Host.** A page from a name the attacker controls, rebound in DNS to 127.0.0.1, is
  same-origin with itself and could read every answer. So the `Host` header must name
  this server: loopback (`localhost`, `127.0.0.1`, `::1`), the host it listens on, the
  host of CONVEYOR_PUBLIC_URL, CONVEYOR_ALLOWED_HOSTS (`*`: any). An IP address is always
  accepted: DNS cannot rebind it, so a page served from it is served by this server.
  Anything else is 421 `unknown_host`.
- **Same origin for changes.** POST, PUT, PATCH and DELETE from a browser must come from
  a page of this server: `Sec-Fetch-Site: same-origin` (or `none`, the user's own
  navigation), or, from browsers without fetch metadata, an `Origin` equal to this
  server's origin (the request's own, or CONVEYOR_PUBLIC_URL's behind a proxy). Else 403
  `cross_origin`. A request with neither header is not from a browser (curl, scripts, the
  CLI, external jobs' signed callbacks): browsers send at least one of them on every
  cross-site POST, so it is let through, and authenticated as before (bearer token).
  The rule is Go's `net/http.CrossOriginProtection`, written out for ASGI.
- **Headers on every answer**: the pages run only their own static scripts and styles
  (a Content-Security-Policy without inline code) and cannot be framed; no answer is
  sniffed into another type, leaks its URL to another site, or is embedded by one.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conveyor.settings import Settings
from conveyor.web.errors import error_response

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# fetch metadata that proves the request came from this server's pages (or the user)
SAME_ORIGIN_SITES = frozenset({b"same-origin", b"none"})
_ANY_HOST = ("0.0.0.0", "::", "")  # a wildcard bind says nothing about the names served

PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# JSON, CSV, event streams, static files: nothing in them runs.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"
# FastAPI's /docs and /redoc load their scripts from a CDN and start them inline; they
# keep doing so, and still cannot be framed.
DOCS_POLICY = "frame-ancestors 'none'"
DOCS_PATHS = ("/docs", "/redoc", "/docs/oauth2-redirect")

HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Same-origin requests keep their Referer (and their Origin: under `no-referrer`,
    # browsers send `Origin: null` on same-origin POSTs); other sites get none.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int


def parse_host(value: str) -> tuple[str, int | None] | None:
    """`Host` header → (lower-case name without brackets, explicit port or None); None
    when it is not a host[:port] at all."""
    if not value or any(c in value for c in "/?#@\\ \t"):
        return None
    try:
        parts = urlsplit(f"//{value}")
        name, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, a bracket left open
        return None
    if not name:
        return None
    return name.rstrip("."), port


def parse_origin(value: str) -> Origin | None:
    """An `Origin` header (or a URL) → scheme, host, port with its default; None for
    `null` and anything that is not an http(s) origin."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = 443 if parts.scheme == "https" else 80
    return Origin(parts.scheme, parts.hostname.rstrip("."), port or default)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class ServedNames:
    """The host names this server answers to (`Host` header, port aside)."""

    def __init__(self, settings: Settings) -> None:
        self.names = set(LOOPBACK_NAMES)
        self.public = parse_origin(settings.public_url)
        if self.public is not None:
            self.names.add(self.public.host)
        self.any = "*" in settings.allowed_hosts
        for name in settings.allowed_hosts:
            parsed = parse_host(name)
            if parsed is not None:
                self.names.add(parsed[0])

    def add(self, host: str) -> None:
        """The host the server listens on (make_server tells it)."""
        parsed = parse_host(host) if host not in _ANY_HOST else None
        if parsed is not None:
            self.names.add(parsed[0])

    def allows(self, name: str) -> bool:
        return self.any or name in self.names or _is_ip(name)


class SiteGuard:
    """The Host check and the same-origin check (ASGI middleware, outermost), and the
    security headers on every answer that passes through it."""

    def __init__(self, app: ASGIApp, names: ServedNames) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(scope["path"], send)
        headers = dict(scope.get("headers", ()))
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, code, message = refusal
            await error_response(status, code, message)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str, str] | None:
        raw_host = headers.get(b"host")
        host = parse_host(raw_host.decode("latin-1")) if raw_host is not None else None
        if raw_host is not None and (host is None or not self.names.allows(host[0])):
            shown = raw_host.decode("latin-1")[:100]
            return (
                421,
                "unknown_host",
                f"this server does not answer to Host {shown!r}; add the name to "
                "CONVEYOR_ALLOWED_HOSTS if it is really this server's",
            )
        if scope["method"] not in UNSAFE_METHODS:
            return None
        site = headers.get(b"sec-fetch-site")
        if site is not None:
            if site.lower() in SAME_ORIGIN_SITES:
                return None
            return _cross_origin(f"Sec-Fetch-Site is {site.decode('latin-1')[:40]!r}")
        origin = headers.get(b"origin")
        if origin is None:
            return None  # not a browser: authenticated by its token, or by its signature
        text = origin.decode("latin-1")
        if host is not None and self._same_origin(parse_origin(text), scope["scheme"], host):
            return None
        return _cross_origin(f"Origin {text[:100]!r} is not this server's")

    def _same_origin(
        self, origin: Origin | None, scheme: str, host: tuple[str, int | None]
    ) -> bool:
        if origin is None:
            return False
        if origin == self.names.public:
            return True
        name, port = host
        if port is None:
            # The request came to a default port: directly, or through a proxy that
            # ends TLS, so the page may be https while this hop is http.
            return origin.host == name and origin.port == (443 if origin.scheme == "https" else 80)
        return origin == Origin(scheme, name, port)


def _cross_origin(why: str) -> tuple[int, str, str]:
    return (
        403,
        "cross_origin",
        f"changes must come from this server's own pages or from outside a browser: {why}",
    )


def _with_headers(path: str, send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            given = {name.lower() for name, _ in headers}
            policy = _policy(path, dict(headers).get(b"content-type", b""))
            for name, value in (*HEADERS, (b"content-security-policy", policy)):
                if name not in given:
                    headers.append((name, value))
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _policy(path: str, content_type: bytes) -> bytes:
    if path in DOCS_PATHS:
        return DOCS_POLICY.encode()
    if content_type.startswith(b"text/html"):
        return PAGE_POLICY.encode()
    return DATA_POLICY.encode()
