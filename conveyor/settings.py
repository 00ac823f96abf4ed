"""Configuration, read from the environment (the CLI's flags override it).

CONVEYOR_DATABASE_URL      a PostgreSQL URL; unset: an embedded server under CONVEYOR_HOME
CONVEYOR_DATABASE_CREDENTIALS  MODULE:CALLABLE, plain or async, giving the password (and
                           optionally user, host, port, dbname, expires_at) for every new
                           connection: rotating tokens (conveyor.db.credentials:rds_iam,
                           :entra, :lakebase); the URL supplies the rest
CONVEYOR_HOME              local state (embedded database, documents);
                           default ~/.conveyor, or /var/lib/conveyor for root
CONVEYOR_DOCUMENTS_URL     where uploaded documents are stored, for every worker to read:
                           postgresql (default: in the database), file:///folder, or
                           s3://, gs://, abfs://bucket/prefix (extras s3, gcs, azure)
CONVEYOR_API_TOKEN         bearer token for the HTTP API; unset: no authentication
CONVEYOR_API_TOKENS        named tokens, name=token,...: the same, and the name is who did it
CONVEYOR_POLL_INTERVAL     seconds between polls of an idle worker (default 1)
CONVEYOR_LISTEN            0 turns LISTEN/NOTIFY off, behind a transaction pooler (default 1)
CONVEYOR_SWEEP_INTERVAL    seconds between sweeps for expired leases (default 2)
CONVEYOR_SHUTDOWN_TIMEOUT  seconds running tasks get to finish on SIGTERM (default 30)
CONVEYOR_STATEMENT_TIMEOUT the longest a statement (or an idle transaction) may take; a
                           database that does not answer within it (+2 s) is unavailable
                           (default 10s)
CONVEYOR_PRUNE_AFTER       e.g. 30d: workers delete tasks finished longer ago (default: keep)
CONVEYOR_LOG_FORMAT        text or json (default text)
CONVEYOR_PUBLIC_URL        where external jobs reach the web app for their callbacks
                           (default http://127.0.0.1:8000)
CONVEYOR_ALLOWED_HOSTS     more names the web app answers to (Host header), comma-separated,
                           besides loopback, the host it listens on and PUBLIC_URL's; * any
CONVEYOR_LLM_MODEL         the model the document agents call; unset: the offline extractor
CONVEYOR_LLM_BASE_URL      an OpenAI-compatible endpoint (default: the SDK's, OpenAI's)
CONVEYOR_LLM_API_KEY       its key (default: OPENAI_API_KEY, as the SDK reads it)
CONVEYOR_LLM_VISION        1: the model reads page images (scanned pages); default 0
CONVEYOR_LLM_CHUNK_TOKENS  prompt tokens per request; longer documents go in chunks (6000)
CONVEYOR_LLM_TIMEOUT       the longest one model request may take, whole (default 120s)
CONVEYOR_LLM_MODE          with a model: hybrid (rules first, the model for the rest) or
                           llm (the model reads every document); default hybrid
CONVEYOR_LLM_PRICES        JSON, model -> {"input_per_mtok", "output_per_mtok"} in USD;
                           wins over the genai-prices table
CONVEYOR_COMPUTE_USD_PER_HOUR  compute cost of an attempt's wall time, for agents that
                           declare no rate of their own (default 0.10)
CONVEYOR_TRACING           otel: OpenTelemetry spans per attempt and model call (default off)
CONVEYOR_MLFLOW_TRACKING_URI  with tracing on, also send the spans to this MLflow server
                           (MLflow >= 3.6 takes OTLP at /v1/traces; no mlflow package needed)
CONVEYOR_MLFLOW_EXPERIMENT_ID  the experiment they go to (default 0, MLflow's default)
CONVEYOR_RAY_ADDRESS       the Ray cluster of Ray-executed agents (ray://host:10001, auto);
                           unset: a local one, started in the worker's process

Durations accept a unit: 500ms, 45s, 10m, 12h, 30d.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conveyor.errors import ConveyorError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}


class SettingsError(ConveyorError):
    pass


def parse_duration(text: str) -> float:
    """'30d' -> 2592000.0; a bare number is seconds."""
    match = _DURATION.match(text)
    if not match:
        raise SettingsError(f"not a duration: {text!r} (try 45s, 10m, 12h or 30d)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def default_home() -> Path:
    # The embedded PostgreSQL runs as its own OS user and opens up the permissions of the
    # folders above its data, so root's state goes to /var/lib rather than under /root.
    if os.geteuid() == 0:
        return Path("/var/lib/conveyor")
    return Path.home() / ".conveyor"


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse_duration(raw)
    except SettingsError:
        raise SettingsError(f"{name}={raw!r} is not a number of seconds") from None


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name}={raw!r}: expected 1/0, true/false, yes/no or on/off")


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    database_credentials: str | None = None  # MODULE:CALLABLE, loaded by the App
    home: Path = field(default_factory=default_home)
    api_token: str | None = None
    # CONVEYOR_API_TOKENS, `name=token,...`: (name, token) pairs; the name is who made a
    # change (a review) in the audit trail. api_token is accepted beside them as "operator".
    api_tokens: tuple[tuple[str, str], ...] = ()
    poll_interval: float = 1.0
    listen: bool = True
    sweep_interval: float = 2.0
    shutdown_timeout: float = 30.0
    statement_timeout: float = 10.0
    prune_after: float | None = None
    log_format: str = "text"
    public_url: str = "http://127.0.0.1:8000"
    allowed_hosts: tuple[str, ...] = ()
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_vision: bool = False
    llm_chunk_tokens: int = 6000
    llm_timeout: float = 120.0
    llm_mode: str = "hybrid"
    llm_prices: str | None = None  # JSON text, checked by from_env; parsed by the pricer
    compute_usd_per_hour: float = 0.10
    tracing: str | None = None
    mlflow_tracking_uri: str | None = None
    mlflow_experiment_id: str = "0"
    documents_url: str = "postgresql"  # canonical (conveyor.document_urls)
    ray_address: str | None = None

    @classmethod
    def from_env(cls) -> Settings:
        prune = os.environ.get("CONVEYOR_PRUNE_AFTER")
        log_format = os.environ.get("CONVEYOR_LOG_FORMAT", "text")
        if log_format not in {"text", "json"}:
            raise SettingsError(f"CONVEYOR_LOG_FORMAT={log_format!r}: expected text or json")
        home = os.environ.get("CONVEYOR_HOME")
        return cls(
            database_url=os.environ.get("CONVEYOR_DATABASE_URL") or None,
            database_credentials=os.environ.get("CONVEYOR_DATABASE_CREDENTIALS") or None,
            home=Path(home).expanduser() if home else default_home(),
            api_token=os.environ.get("CONVEYOR_API_TOKEN") or None,
            api_tokens=parse_api_tokens(os.environ.get("CONVEYOR_API_TOKENS", "")),
            poll_interval=_env_float("CONVEYOR_POLL_INTERVAL", 1.0),
            listen=_env_bool("CONVEYOR_LISTEN", True),
            sweep_interval=_env_float("CONVEYOR_SWEEP_INTERVAL", 2.0),
            shutdown_timeout=_env_float("CONVEYOR_SHUTDOWN_TIMEOUT", 30.0),
            statement_timeout=_statement_timeout(),
            prune_after=parse_duration(prune) if prune else None,
            log_format=log_format,
            public_url=os.environ.get("CONVEYOR_PUBLIC_URL") or "http://127.0.0.1:8000",
            allowed_hosts=tuple(
                name.strip().lower()
                for name in os.environ.get("CONVEYOR_ALLOWED_HOSTS", "").split(",")
                if name.strip()
            ),
            ray_address=os.environ.get("CONVEYOR_RAY_ADDRESS") or None,
            documents_url=_documents_url(),
            **_llm_settings(),
        )

    def named_tokens(self) -> dict[str, str]:
        """Every token the API accepts, by the name its changes are recorded under."""
        tokens = dict(self.api_tokens)
        if self.api_token:
            if tokens.get(SINGLE_TOKEN_NAME, self.api_token) != self.api_token:
                raise SettingsError(
                    f"CONVEYOR_API_TOKENS names a token {SINGLE_TOKEN_NAME!r}, the name of "
                    "CONVEYOR_API_TOKEN's: give it another name"
                )
            tokens[SINGLE_TOKEN_NAME] = self.api_token
        return tokens


SINGLE_TOKEN_NAME = "operator"
_TOKEN_NAME = re.compile(r"^[A-Za-z0-9_.@+-]{1,64}$")


def parse_api_tokens(text: str) -> tuple[tuple[str, str], ...]:
    """`alice=t1,bob=t2` -> (("alice", "t1"), ("bob", "t2")); a bad entry, a name given
    twice or a token shared by two names is a SettingsError (never the token's text)."""
    pairs: list[tuple[str, str]] = []
    for number, entry in enumerate((e.strip() for e in text.split(",")), 1):
        if not entry:
            continue
        name, equals, token = entry.partition("=")
        name, token = name.strip(), token.strip()
        if not equals or not token:
            raise SettingsError(f"CONVEYOR_API_TOKENS: entry {number} is not name=token")
        if not _TOKEN_NAME.match(name):
            raise SettingsError(
                f"CONVEYOR_API_TOKENS: entry {number}: a name is 1-64 letters, digits or _.@+-"
            )
        if any(name == n for n, _ in pairs):
            raise SettingsError(f"CONVEYOR_API_TOKENS: the name {name!r} is given twice")
        if any(token == t for _, t in pairs):
            raise SettingsError(f"CONVEYOR_API_TOKENS: {name!r} has the token of another name")
        pairs.append((name, token))
    return tuple(pairs)


def _documents_url() -> str:
    """CONVEYOR_DOCUMENTS_URL, checked (not reached) here: a bad one stops start-up."""
    from conveyor.document_urls import VARIABLE, BadStoreUrl, parse

    try:
        return parse(os.environ.get(VARIABLE)).url
    except BadStoreUrl as exc:
        raise SettingsError(f"{VARIABLE}={exc}") from None


def _statement_timeout() -> float:
    seconds = _env_float("CONVEYOR_STATEMENT_TIMEOUT", 10.0)
    # PostgreSQL takes whole milliseconds, and 0 would mean no bound at all.
    if not 0.001 <= seconds <= 86400:
        raise SettingsError(
            f"CONVEYOR_STATEMENT_TIMEOUT={os.environ['CONVEYOR_STATEMENT_TIMEOUT']!r}: "
            "expected a duration from 1ms to 1d (e.g. 10s)"
        )
    return seconds


def _llm_settings() -> dict[str, Any]:
    """The model, cost and tracing settings (CONVEYOR_LLM_*, COMPUTE, TRACING, MLFLOW)."""
    from conveyor.model_prices import PRICES_VARIABLE, BadPrices, parse_prices

    prices = os.environ.get(PRICES_VARIABLE) or None
    try:
        parse_prices(prices)  # refuse a bad value at start, not at the first attempt's end
    except BadPrices as exc:
        raise SettingsError(str(exc)) from None
    chunk = os.environ.get("CONVEYOR_LLM_CHUNK_TOKENS") or "6000"
    if not chunk.isascii() or not chunk.isdigit() or not 500 <= int(chunk) <= 2_000_000:
        raise SettingsError(
            f"CONVEYOR_LLM_CHUNK_TOKENS={chunk!r}: expected a number of tokens from 500"
        )
    timeout = _env_float("CONVEYOR_LLM_TIMEOUT", 120.0)
    if not 0 < timeout <= 86400:
        raise SettingsError("CONVEYOR_LLM_TIMEOUT: expected a duration above 0 (e.g. 300s)")
    mode = (os.environ.get("CONVEYOR_LLM_MODE") or "hybrid").strip().lower()
    if mode not in {"hybrid", "llm"}:
        raise SettingsError(f"CONVEYOR_LLM_MODE={mode!r}: expected hybrid or llm")
    rate = os.environ.get("CONVEYOR_COMPUTE_USD_PER_HOUR") or "0.10"
    try:
        compute = float(rate)
    except ValueError:
        compute = -1.0
    if not 0 <= compute < 1e6:
        raise SettingsError(f"CONVEYOR_COMPUTE_USD_PER_HOUR={rate!r}: expected a number >= 0")
    tracing = (os.environ.get("CONVEYOR_TRACING") or "").strip().lower() or None
    if tracing in {"off", "0", "none"}:
        tracing = None
    if tracing not in {None, "otel"}:
        raise SettingsError(f"CONVEYOR_TRACING={tracing!r}: expected otel (or unset: off)")
    return {
        "llm_model": os.environ.get("CONVEYOR_LLM_MODEL") or None,
        "llm_base_url": os.environ.get("CONVEYOR_LLM_BASE_URL") or None,
        "llm_api_key": os.environ.get("CONVEYOR_LLM_API_KEY") or None,
        "llm_vision": _env_bool("CONVEYOR_LLM_VISION", False),
        "llm_chunk_tokens": int(chunk),
        "llm_timeout": timeout,
        "llm_mode": mode,
        "llm_prices": prices,
        "compute_usd_per_hour": compute,
        "tracing": tracing,
        "mlflow_tracking_uri": os.environ.get("CONVEYOR_MLFLOW_TRACKING_URI") or None,
        "mlflow_experiment_id": os.environ.get("CONVEYOR_MLFLOW_EXPERIMENT_ID") or "0",
    }
