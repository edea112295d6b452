"""Who may read what over HTTP. Reads are open until some read key exists, then need a key; a key
scoped to sources reads only those; writes need an admin key and are off until one exists; an
admin key scoped to sources administers only those (and reads only their answer log).
Keys are random (256 bits) and only their SHA-256 is stored, so a database dump reveals none."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from pgcite.errors import PgciteError
from pgcite.store.keys import KeyPolicy

KEY_PREFIX = "pgc_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Caller:
    name: str | None  # the key's name; None without a key
    sources: tuple[str, ...] | None  # what it may read; None: every source
    admin: bool = False


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def check_key_name(name: str) -> None:
    if not _NAME.match(name):
        raise PgciteError(f"a key name is 1-64 letters, digits, '.', '_' or '-' (got {name!r})")


def bearer(authorization: str | None) -> str | None:
    """The key of an `Authorization: Bearer <key>` header."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _unauthorized(message: str) -> PgciteError:
    return PgciteError(message, kind="unauthorized")


def reader(policy: KeyPolicy, presented: bool) -> Caller:
    """The caller of a read, or why it may not read."""
    if policy.key is not None:
        return Caller(policy.key.name, policy.key.sources, policy.key.admin)
    if policy.reads_need_key:
        if presented:
            raise _unauthorized("the API key is not valid (unknown or revoked); ask for a new one")
        raise _unauthorized("this server needs an API key: send `Authorization: Bearer <key>`")
    # Open reads: a key the server does not know (OpenAI clients always send one) changes nothing.
    return Caller(None, None)


def writer(policy: KeyPolicy, presented: bool) -> Caller:
    """The caller of a write (ingest, removal), or why it may not write."""
    if not policy.writes_on:
        raise PgciteError(
            "writes are off on this server: no admin key exists; create one with `pgcite keys create NAME --admin`",
            kind="forbidden",
        )
    if policy.key is None:
        raise _unauthorized(
            "this needs an admin key: send `Authorization: Bearer <admin key>`"
            if not presented
            else "the API key is not valid (unknown or revoked)"
        )
    if not policy.key.admin:
        raise PgciteError(f"the key {policy.key.name!r} may only read; this needs an admin key", kind="forbidden")
    return Caller(policy.key.name, policy.key.sources, True)


def check_writes(caller: Caller, source: str) -> None:
    """Refuse a write to a source outside an admin key's scope."""
    if caller.sources is not None and source not in caller.sources:
        raise PgciteError(f"the key {caller.name!r} administers only {', '.join(caller.sources)}", kind="forbidden")
