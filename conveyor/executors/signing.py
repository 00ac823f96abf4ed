"""The callback's secrets and signatures, shared by the worker (which gives each attempt
its secret), the web app (which verifies a callback) and jobs (which sign theirs).

Each attempt has its own secret, derived from a key kept in the database, so the worker,
the web app and the job agree on it without storing one per attempt. A callback is
authenticated by HMAC-SHA256 over `"{timestamp}.{body}"`, and refused when its timestamp
is more than MAX_CLOCK_SKEW from the server's clock (a replay).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "X-Conveyor-Signature"
TIMESTAMP_HEADER = "X-Conveyor-Timestamp"
MAX_CLOCK_SKEW = 300.0  # seconds a callback's timestamp may differ from the server's clock


def attempt_secret(key: str, attempt_id: int, claim_token: str | None = None) -> str:
    """The callback secret of one attempt, derived from the database's key, and from the
    claim's token (tasks.claim_token): after a crash undid a claim, the next claim may get
    the same attempt id, and a job of the undone claim must not sign for it. (None: an
    attempt claimed before claims had tokens.)"""
    name = f"attempt:{attempt_id}" + ("" if claim_token is None else f":{claim_token}")
    return hmac.new(key.encode(), name.encode(), hashlib.sha256).hexdigest()


def new_key() -> str:
    return secrets.token_hex(32)


def sign(secret: str, body: bytes, timestamp: float | None = None) -> dict[str, str]:
    """The headers that authenticate a callback body."""
    stamp = str(int(time.time() if timestamp is None else timestamp))
    digest = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: f"sha256={digest.hexdigest()}"}


def verify(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    *,
    now: float | None = None,
) -> str | None:
    """None if the callback is authentic and fresh; else what is wrong with it."""
    if not timestamp or not signature:
        return f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header"
    try:
        moment = int(timestamp)
    except ValueError:
        return f"{TIMESTAMP_HEADER} is not a Unix time"
    if abs((time.time() if now is None else now) - moment) > MAX_CLOCK_SKEW:
        return "the callback's timestamp is too old or in the future (replay?)"
    expected = sign(secret, body, moment)[SIGNATURE_HEADER]
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return "the signature does not match"
    return None
