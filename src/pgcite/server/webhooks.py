"""Push webhooks of git hosts: whether a request comes from one (the shared secret), and whether it
reports a push to the branch the docs are read from.

- GitHub signs the body: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
- GitLab sends the secret itself in `X-Gitlab-Token`, or, with a signing token, signs as the Standard
  Webhooks do: `webhook-signature: v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`.

Every comparison is constant-time. A signature is checked before the body is parsed."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from pgcite.errors import PgciteError

MAX_BYTES = 25 << 20  # the largest payload GitHub sends
TIMESTAMP_TOLERANCE = 300  # seconds a signed GitLab timestamp may be off, against a replay


@dataclass(frozen=True)
class Push:
    """What a verified request reports."""

    host: str  # github, gitlab
    event: str  # the host's event name: push, ping, Push Hook...
    ref: str  # the pushed ref (refs/heads/main); "" when the event is not a push
    default_branch: str

    @property
    def ignored(self) -> str:
        """Why this starts no sync ("" when it does)."""
        if not self.ref:
            return f"a {self.host} {self.event!r} event is not a push"
        if self.default_branch and self.ref != f"refs/heads/{self.default_branch}":
            return f"a push to {self.ref}, not to the default branch {self.default_branch}"
        return ""


def _unauthorized(message: str) -> PgciteError:
    return PgciteError(message, kind="unauthorized")


def check_headers(headers: Mapping[str, str], secret: str, *, now: float | None = None) -> None:
    """What can be refused before the body is read (up to 25 MB): webhooks off, no signature at all,
    a malformed GitHub signature, a stale GitLab timestamp, a wrong GitLab token."""
    if not secret:
        verify(headers, b"", secret)  # raises: webhooks are off
    if (signature := headers.get("x-hub-signature-256")) is not None:
        if not re.fullmatch(r"sha256=[0-9a-f]{64}", signature.strip()):
            raise _unauthorized("X-Hub-Signature-256 is not sha256=<64 hex digits>")
    elif headers.get("webhook-signature") is not None:
        _check_timestamp(headers.get("webhook-timestamp", ""), time.time() if now is None else now)
    else:
        verify(headers, b"", secret)  # a GitLab token is checked whole; no signature at all is refused


def verify(headers: Mapping[str, str], body: bytes, secret: str, *, now: float | None = None) -> str:
    """The host whose signature `headers` carry for `body` under `secret`: github or gitlab. Raises
    forbidden when the server has no secret, unauthorized when the signature is missing or wrong."""
    if not secret:
        raise PgciteError(
            "webhooks are off on this server: set PGCITE_WEBHOOK_SECRET to the secret the git host signs with",
            kind="forbidden",
        )
    if (signature := headers.get("x-hub-signature-256")) is not None:
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if hmac.compare_digest(signature.strip().encode(), expected.encode()):
            return "github"
        raise _unauthorized(
            "X-Hub-Signature-256 does not match the body: the webhook's secret is not the "
            "server's PGCITE_WEBHOOK_SECRET"
        )
    if (signatures := headers.get("webhook-signature")) is not None:
        _verify_standard(headers, signatures, body, secret, time.time() if now is None else now)
        return "gitlab"
    if (token := headers.get("x-gitlab-token")) is not None:
        if hmac.compare_digest(token.encode(), secret.encode()):
            return "gitlab"
        raise _unauthorized("X-Gitlab-Token is not the server's PGCITE_WEBHOOK_SECRET")
    raise _unauthorized(
        "the request is not signed: set the webhook's secret (GitHub) or secret token (GitLab) "
        "to the server's PGCITE_WEBHOOK_SECRET"
    )


def _check_timestamp(stamp: str, now: float) -> None:
    # ASCII digits only, and few: str.isdigit() takes "²", and int() refuses over 4,300 digits.
    if not re.fullmatch(r"[0-9]{1,12}", stamp) or abs(now - int(stamp)) > TIMESTAMP_TOLERANCE:
        raise _unauthorized(f"webhook-timestamp is missing or more than {TIMESTAMP_TOLERANCE} s from now")


def _verify_standard(headers: Mapping[str, str], signatures: str, body: bytes, secret: str, now: float) -> None:
    webhook_id, stamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    _check_timestamp(stamp, now)
    # A Standard Webhooks secret is "whsec_" and the key in base64; any other is the key itself.
    try:
        key = base64.b64decode(secret[6:], validate=True) if secret.startswith("whsec_") else secret.encode()
    except binascii.Error:
        key = secret.encode()
    expected = base64.b64encode(hmac.new(key, f"{webhook_id}.{stamp}.".encode() + body, hashlib.sha256).digest())
    for signature in signatures.split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value.encode(), expected):
            return
    raise _unauthorized(
        "webhook-signature does not match the body: the webhook's signing token is not the "
        "server's PGCITE_WEBHOOK_SECRET"
    )


def push(host: str, headers: Mapping[str, str], body: bytes) -> Push:
    """What a verified request from `host` reports."""
    event = headers.get("x-github-event" if host == "github" else "x-gitlab-event", "")
    try:
        if body.startswith(b"payload="):  # GitHub's form content type: the JSON in a form field
            body = urllib.parse.parse_qs(body.decode(), strict_parsing=True)["payload"][0].encode()
        payload = json.loads(body) if body else {}
    except RecursionError:  # signed, yet nested deeper than any push payload (it was a 500)
        raise PgciteError("the webhook's body is nested too deep to be a push payload") from None
    except (ValueError, KeyError, UnicodeDecodeError):
        raise PgciteError("the webhook's body is not JSON: set its content type to application/json") from None
    if not isinstance(payload, dict):
        payload = {}
    is_push = event == "push" if host == "github" else payload.get("object_kind") == "push"
    repository = payload.get("repository" if host == "github" else "project")
    default = repository.get("default_branch", "") if isinstance(repository, dict) else ""
    ref = payload.get("ref", "") if is_push else ""
    return Push(host, event, ref if isinstance(ref, str) else "", default if isinstance(default, str) else "")
