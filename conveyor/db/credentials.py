"""Database credentials that rotate: a provider asked for them at every new connection.

`CONVEYOR_DATABASE_CREDENTIALS=MODULE:CALLABLE` (or `App(credentials=...)`) names a plain
or async callable that returns the connection parameters that change (a password alone, as
a string, or a mapping)::

    {"password": "...", "user": "...", "host": "...", "port": 5432, "dbname": "...",
     "expires_at": datetime | epoch seconds}        # all but password optional

The URL (CONVEYOR_DATABASE_URL) supplies everything else; what the provider returns wins.
A provider takes no argument, or one: the URL's parameters as a dict without the password
(`host`, `port`, `user`, `dbname`, ...), which is what a cloud's token is signed for.
Every new connection, pooled or not (the pool, its outage probe, every LISTEN connection:
`conveyor.listener.open_listening`), goes through `Credentials.connect`:

* the provider is called (at most `timeout` seconds: one that raises or hangs gives a
  `CredentialsUnavailable`, a connection error like any other, so the pool's outage gate
  and the listener's reconnection loop retry it instead of wedging); parameters that came
  with an `expires_at` are reused until a minute before it, so a busy pool or an outage
  probe does not call a cloud API for each attempt;
* a refused authentication asks the provider again, bypassing that reuse, and retries once:
  a password rotated a moment ago costs one extra round trip, not an outage;
* `lifetime(conn)` says how long the parameters a connection was opened with last (each
  connection is remembered with its own expiry: the cache may hold newer parameters by
  the time it asks): the pool keeps that connection's `max_lifetime` below it, and the
  listeners renew their LISTEN connection at it (`conveyor.listener.renewal_delay`), so
  that no connection outlives its token.

A process knows its providers by URL (`register`): LISTEN connections are opened from the
URL alone, by code that has no App at hand.

The built-in providers (`lakebase`, `rds_iam`, `entra`) are a few lines over each cloud's
SDK, installed by the matching extra (`pip install 'conveyor[lakebase]'`, `[rds]`, `[azure]`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import logging
import os
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from conveyor.log import fields
from conveyor.settings import SettingsError

log = logging.getLogger(__name__)

Provider = Callable[..., Any]  # () or (url parameters) -> str | Mapping, or an awaitable
C = TypeVar("C")

#: The keys a provider may return; anything else is a mistake worth saying so.
PARAMETERS = frozenset({"password", "user", "host", "port", "dbname"})
#: Parameters with an expiry are reused until this many seconds before it.
REUSE_MARGIN = 60.0
#: A pooled connection lives this share of its token's remaining life at most, so that
#: it is retired (and replaced with fresh credentials) before the token expires...
LIFETIME_SHARE = 0.8
#: ... and this long at least, so that a token about to expire cannot make the pool
#: reconnect in a tight loop.
MIN_LIFETIME = 1.0
#: PostgreSQL's codes for a refused login: invalid password, invalid authorization.
_AUTH_SQLSTATES = frozenset({"28P01", "28000"})
_AUTH_MESSAGES = ("password authentication failed", "authentication failed", "pam authentication")


class CredentialsUnavailable(psycopg.OperationalError):
    """The provider raised, hung or answered nonsense. A connection error (an
    OperationalError), so that whatever retries a refused connection retries this too."""


class Credentials:
    """A provider, bounded in time, with the parameters it gave last."""

    def __init__(self, provider: Provider, *, timeout: float = 10.0, name: str | None = None):
        if not callable(provider):
            raise SettingsError(f"database credentials: {provider!r} is not callable")
        self.provider = provider
        self.timeout = timeout
        self.name = name or _describe(provider)
        self._takes_url = _takes_one_argument(provider)
        check = getattr(provider, "check", None)
        if callable(check):
            check()  # a built-in provider whose SDK is missing says so now
        self._params: dict[str, Any] = {}
        self._expires_at: float | None = None  # epoch seconds
        # The expiry of the parameters each open connection was made with.
        self._opened: weakref.WeakKeyDictionary[Any, float | None] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # the cache is shared by every loop of an App
        self.calls = 0

    async def get(self, url: str = "", *, refresh: bool = False) -> dict[str, Any]:
        """The parameters for a new connection to `url` (psycopg keyword arguments)."""
        params, _ = await self._current(url, refresh=refresh)
        return params

    async def _current(self, url: str, *, refresh: bool) -> tuple[dict[str, Any], float | None]:
        """The parameters and their expiry, the cached ones unless near their end."""
        with self._lock:
            if (
                not refresh
                and self._expires_at is not None
                and time.time() < self._expires_at - REUSE_MARGIN
            ):
                return dict(self._params), self._expires_at
        answer = await self._ask(url)
        params, expires_at = self._parse(answer)
        with self._lock:
            self._params, self._expires_at = params, expires_at
        return dict(params), expires_at

    def lifetime(self, conn: Any = None) -> float | None:
        """Seconds `conn` (a connection this opened) may live, or one opened now with the
        cached parameters; None if the provider gave no expiry."""
        with self._lock:
            if conn is not None and conn in self._opened:
                expires_at = self._opened[conn]
            else:
                expires_at = self._expires_at
        if expires_at is None:
            return None
        return max(MIN_LIFETIME, LIFETIME_SHARE * (expires_at - time.time()))

    async def connect(
        self, connect: Callable[..., Awaitable[C]], conninfo: str, **options: Any
    ) -> C:
        """`connect(conninfo, **options, **parameters)`, asking the provider again and
        retrying once if the server refuses the login."""
        params, expires_at = await self._current(conninfo, refresh=False)
        try:
            return self._remember(await connect(conninfo, **{**options, **params}), expires_at)
        except psycopg.OperationalError as exc:
            if isinstance(exc, CredentialsUnavailable) or not is_auth_failure(exc):
                raise
            log.info(
                "database login refused, asking for fresh credentials",
                extra=fields(provider=self.name, error=_line(exc)),
            )
        params, expires_at = await self._current(conninfo, refresh=True)
        return self._remember(await connect(conninfo, **{**options, **params}), expires_at)

    def _remember(self, conn: C, expires_at: float | None) -> C:
        with self._lock:
            self._opened[conn] = expires_at
        return conn

    async def _ask(self, url: str) -> Any:
        self.calls += 1
        args = (url_parameters(url),) if self._takes_url else ()
        try:
            if _is_async(self.provider):
                return await asyncio.wait_for(self.provider(*args), self.timeout)
            answer = await asyncio.wait_for(_in_thread(lambda: self.provider(*args)), self.timeout)
            if inspect.isawaitable(answer):
                answer = await asyncio.wait_for(answer, self.timeout)
            return answer
        except TimeoutError:
            raise CredentialsUnavailable(
                f"the database credentials provider {self.name} did not answer within "
                f"{self.timeout:g} s"
            ) from None
        except Exception as exc:
            raise CredentialsUnavailable(
                f"the database credentials provider {self.name} failed: "
                f"{type(exc).__name__}: {_line(exc)}"
            ) from exc

    def _parse(self, answer: Any) -> tuple[dict[str, Any], float | None]:
        if isinstance(answer, str):
            answer = {"password": answer}
        if not isinstance(answer, Mapping):
            raise CredentialsUnavailable(
                f"the database credentials provider {self.name} returned "
                f"{type(answer).__name__}; expected a password or a mapping with 'password'"
            )
        values = dict(answer)
        expires_at = _epoch(values.pop("expires_at", None), self.name)
        unknown = sorted(set(values) - PARAMETERS)
        if unknown:
            raise CredentialsUnavailable(
                f"the database credentials provider {self.name} returned unknown keys "
                f"{', '.join(unknown)}; expected {', '.join(sorted(PARAMETERS))}, expires_at"
            )
        if not values.get("password"):
            raise CredentialsUnavailable(
                f"the database credentials provider {self.name} returned no password"
            )
        return {k: v for k, v in values.items() if v is not None}, expires_at


def is_auth_failure(exc: psycopg.OperationalError) -> bool:
    """True if the server refused the login (a wrong or expired password or token)."""
    if exc.sqlstate in _AUTH_SQLSTATES:
        return True
    text = str(exc).lower()
    return any(message in text for message in _AUTH_MESSAGES)


def url_parameters(url: str) -> dict[str, Any]:
    """The URL's connection parameters, the password left out (a provider has no use for
    a static one)."""
    try:
        params = conninfo_to_dict(url) if url else {}
    except psycopg.ProgrammingError:
        return {}
    params.pop("password", None)
    return params


def load(spec: str) -> Credentials:
    """`MODULE:CALLABLE` -> Credentials; a clear error for a bad name."""
    variable = "CONVEYOR_DATABASE_CREDENTIALS"
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SettingsError(f"{variable}={spec!r}: expected MODULE:CALLABLE")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingsError(f"{variable}={spec!r}: cannot import {module_name}: {exc}") from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SettingsError(f"{variable}={spec!r}: {module_name} has no {attribute}") from None
    if not callable(target):
        raise SettingsError(f"{variable}={spec!r}: {attribute} is not callable")
    return Credentials(target, name=spec)


def as_credentials(value: Credentials | Provider | str | None) -> Credentials | None:
    """What App(credentials=...) accepts: a Credentials, a callable or MODULE:CALLABLE."""
    if value is None or isinstance(value, Credentials):
        return value
    if isinstance(value, str):
        return load(value)
    return Credentials(value)


# ---- which URL uses which provider ------------------------------------------------------

_registry: dict[str, Credentials] = {}
_registry_lock = threading.Lock()


def register(url: str, credentials: Credentials) -> None:
    """Connections to `url` opened with `connect_to` use `credentials`."""
    with _registry_lock:
        _registry[url] = credentials


def for_url(url: str) -> Credentials | None:
    with _registry_lock:
        return _registry.get(url)


async def connect_to(url: str, **options: Any) -> psycopg.AsyncConnection[Any]:
    """A connection of its own (not pooled) to `url`, with its registered credentials."""
    credentials = for_url(url)
    if credentials is None:
        return await psycopg.AsyncConnection.connect(url, **options)
    return await credentials.connect(psycopg.AsyncConnection.connect, url, **options)


# ---- helpers ----------------------------------------------------------------------------


def _is_async(provider: Provider) -> bool:
    return inspect.iscoroutinefunction(provider) or inspect.iscoroutinefunction(
        getattr(provider, "__call__", None)  # noqa: B004 (an object with an async __call__)
    )


def _takes_one_argument(provider: Provider) -> bool:
    try:
        signature = inspect.signature(provider)
    except (TypeError, ValueError):  # a builtin without a signature: called as documented
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 1


async def _in_thread(fn: Callable[[], Any]) -> Any:
    """fn() in a daemon thread of its own: a provider that hangs for ever is given up on
    (the caller's timeout) without holding a pool's thread or the interpreter's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value, error = fn(), None
        except BaseException as exc:  # handed to the awaiting coroutine
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="conveyor-credentials", daemon=True).start()
    return await future


def _epoch(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise CredentialsUnavailable(
                f"the database credentials provider {name} returned a naive expires_at; "
                "give it a time zone (datetime.now(timezone.utc) + ...)"
            )
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise CredentialsUnavailable(
        f"the database credentials provider {name} returned expires_at={value!r}; "
        "expected an aware datetime or epoch seconds"
    )


def _describe(provider: Provider) -> str:
    module = getattr(provider, "__module__", None) or "?"
    qualname = getattr(provider, "__qualname__", None) or type(provider).__qualname__
    return f"{module}:{qualname}"


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# ---- built-in providers -----------------------------------------------------------------
# Each is a few lines over its cloud's SDK, imported when first called; `check()` runs when
# the provider is configured, so a missing SDK is a clear error at start, not a retry loop.


class _SdkProvider:
    module = ""
    extra = ""

    def check(self) -> None:
        if importlib.util.find_spec(self.module.split(".")[0]) is None:
            raise SettingsError(
                f"the {type(self).__name__} database credentials need {self.module}: "
                f"pip install 'conveyor[{self.extra}]'"
            )


class RdsIam(_SdkProvider):
    """AWS RDS and Aurora IAM authentication: a token boto3 signs locally (no network)
    for the URL's host, port and user, valid 15 minutes. The region: `region`, else the
    host's (`….<region>.rds.amazonaws.com`), else boto3's own configuration."""

    module, extra = "boto3", "rds"
    TOKEN_SECONDS = 15 * 60

    def __init__(self, region: str | None = None) -> None:
        self.region = region
        self._clients: dict[str | None, Any] = {}

    def __call__(self, url: Mapping[str, Any]) -> dict[str, Any]:
        import boto3

        host, user = _required(url, "host", "RdsIam"), _required(url, "user", "RdsIam")
        region = self.region or _rds_region(host)
        client = self._clients.get(region)
        if client is None:
            client = self._clients[region] = boto3.client("rds", region_name=region)
        token = client.generate_db_auth_token(
            DBHostname=host, Port=int(url.get("port") or 5432), DBUsername=user, Region=region
        )
        return {"password": token, "expires_at": time.time() + self.TOKEN_SECONDS}


class Entra(_SdkProvider):
    """Azure Database for PostgreSQL with Microsoft Entra ID: an access token from
    azure-identity's DefaultAzureCredential (managed identity, workload identity, the
    Azure CLI's login, ...) for the URL's user (the Entra role)."""

    module, extra = "azure.identity", "azure"
    SCOPE = "https://ossrdbms-aad.database.windows.net/.default"

    def __init__(self, credential: Any = None) -> None:
        self._credential = credential

    def check(self) -> None:
        if self._credential is None:
            super().check()

    def __call__(self) -> dict[str, Any]:
        if self._credential is None:
            from azure.identity import DefaultAzureCredential

            self._credential = DefaultAzureCredential()
        token = self._credential.get_token(self.SCOPE)
        return {"password": token.token, "expires_at": float(token.expires_on)}


class Lakebase(_SdkProvider):
    """Databricks Lakebase: an OAuth token from the workspace, valid an hour, for an
    autoscaling endpoint (`endpoint=`, else CONVEYOR_LAKEBASE_ENDPOINT:
    `projects/…/branches/…/endpoints/…`, through `WorkspaceClient().postgres`) or a
    provisioned instance (`instance_name=`, else CONVEYOR_LAKEBASE_INSTANCE, through
    `WorkspaceClient().database`). The workspace and identity come from the SDK's usual
    configuration (DATABRICKS_HOST, a profile, a service principal, or the app or notebook
    it runs in); the user from the URL, else the identity's own name."""

    module, extra = "databricks.sdk", "lakebase"
    TOKEN_SECONDS = 3600

    def __init__(
        self, instance_name: str | None = None, *, endpoint: str | None = None, client: Any = None
    ) -> None:
        self.instance_name = instance_name
        self.endpoint = endpoint
        self._client = client
        self._user: str | None = None

    def check(self) -> None:
        if self._client is None:
            super().check()

    def __call__(self, url: Mapping[str, Any]) -> dict[str, Any]:
        import uuid

        endpoint = self.endpoint or os.environ.get("CONVEYOR_LAKEBASE_ENDPOINT")
        instance = self.instance_name or os.environ.get("CONVEYOR_LAKEBASE_INSTANCE")
        if not endpoint and not instance:
            raise SettingsError(
                "Lakebase credentials need the database: CONVEYOR_LAKEBASE_ENDPOINT "
                "(autoscaling) or CONVEYOR_LAKEBASE_INSTANCE (provisioned)"
            )
        if self._client is None:
            from databricks.sdk import WorkspaceClient

            self._client = WorkspaceClient()
        if endpoint:
            credential = self._client.postgres.generate_database_credential(endpoint=endpoint)
            expiry = credential.expire_time
        else:
            credential = self._client.database.generate_database_credential(
                request_id=str(uuid.uuid4()), instance_names=[instance]
            )
            expiry = credential.expiration_time
        answer: dict[str, Any] = {
            "password": credential.token,
            "expires_at": _expiry(expiry) or time.time() + self.TOKEN_SECONDS,
        }
        if not url.get("user"):
            if self._user is None:
                self._user = self._client.current_user.me().user_name
            answer["user"] = self._user
        return answer


#: Ready to name in CONVEYOR_DATABASE_CREDENTIALS, e.g. conveyor.db.credentials:rds_iam
rds_iam = RdsIam()
entra = Entra()
lakebase = Lakebase()


def _required(url: Mapping[str, Any], key: str, provider: str) -> str:
    value = url.get(key)
    if not value:
        raise SettingsError(f"{provider} credentials need the {key} in CONVEYOR_DATABASE_URL")
    return str(value)


def _rds_region(host: str) -> str | None:
    # mydb.abc123.eu-west-1.rds.amazonaws.com -> eu-west-1
    parts = host.split(".")
    if len(parts) >= 5 and parts[-3:] == ["rds", "amazonaws", "com"]:
        return parts[-4]
    return None


def _expiry(value: Any) -> float | None:
    """An SDK's expiry as epoch seconds: ISO text, a datetime or a protobuf Timestamp."""
    if not value:
        return None
    if hasattr(value, "seconds") and hasattr(value, "nanos"):
        return float(value.seconds) + float(value.nanos) / 1e9
    if isinstance(value, datetime):
        return _aware(value).timestamp()
    try:
        return _aware(datetime.fromisoformat(str(value))).timestamp()
    except ValueError:
        return None


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
