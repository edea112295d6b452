"""Who may read what over HTTP. Reads are open until some read key exists, then need a key; a key
scoped to sources reads only those; writes need an admin key and are off until one exists; an
admin key scoped to sources administers only those (and reads only their answer log).
A browser key (`--origins`) is for web pages and nothing else: it sits in a page's source for anyone
to read, so it only ever reads, within its scope, and only from the pages it names. Any other key
sent from a web page on another origin is refused, on every route: a page's key is public.
Keys are random (256 bits) and only their SHA-256 is stored, so a database dump reveals none."""

from __future__ import annotations

import hashlib
import secrets
import urllib.parse
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pgcite.errors import PgciteError
from pgcite.store import Store
from pgcite.store import keys as key_rows
from pgcite.store.keys import ApiKey, KeyPolicy
from pgcite.vocabulary import check_name

KEY_PREFIX = "pgc_"


@dataclass(frozen=True)
class Caller:
    name: str | None  # the key's name; None without a key
    sources: tuple[str, ...] | None  # what it may read; None: every source
    admin: bool = False
    browser: bool = False  # a browser key (one address of many visitors: rate-limited per address too)


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def check_key_name(name: str) -> None:
    check_name(name, "a key name")


def bearer(authorization: str | None) -> str | None:
    """The key of an `Authorization: Bearer <key>` header."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _unauthorized(message: str) -> PgciteError:
    return PgciteError(message, kind="unauthorized")


def check_origins(origins: Sequence[str]) -> tuple[str, ...]:
    """A browser key's origins as browsers send them: `scheme://host[:port]`, lower case."""
    checked = []
    for origin in origins:
        parts = urllib.parse.urlsplit(origin.strip().lower())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or parts.query:
            raise PgciteError(f"an origin is https://host[:port] with no path, as a browser sends it (got {origin!r})")
        checked.append(f"{parts.scheme}://{parts.netloc}")
    if not checked:
        raise PgciteError("a browser key needs at least one origin (https://docs.example.com)")
    return tuple(checked)


def _not_from_a_page(key: ApiKey, origin: str) -> PgciteError:
    return PgciteError(
        f"the key {key.name!r} may not be used from a web page ({origin}): a page's key is public; "
        "create a browser key for it with `pgcite keys create NAME --origins ORIGIN`",
        kind="forbidden",
    )


def _from_page(key: ApiKey, origin: str) -> Caller:
    if key.origins is None:
        raise _not_from_a_page(key, origin)
    if origin not in key.origins:
        raise PgciteError(f"the key {key.name!r} is not valid on {origin}", kind="forbidden")
    return Caller(key.name, key.sources, browser=True)


def reader(policy: KeyPolicy, presented: bool, origin: str | None = None) -> Caller:
    """The caller of a read, or why it may not read; `origin`: the web page's, when another site's."""
    if policy.key is not None:
        if origin is not None:
            return _from_page(policy.key, origin)
        if policy.key.origins is not None:
            raise PgciteError(
                f"the key {policy.key.name!r} is a browser key: only the web pages it was made for may use it "
                f"({', '.join(policy.key.origins)}); a program needs a key of its own (`pgcite keys create NAME`)",
                kind="forbidden",
            )
        return Caller(policy.key.name, policy.key.sources, policy.key.admin)
    if policy.reads_need_key:
        if presented:
            raise _unauthorized("the API key is not valid (unknown or revoked); ask for a new one")
        raise _unauthorized("this server needs an API key: send `Authorization: Bearer <key>`")
    # Open reads: a key the server does not know (OpenAI clients always send one) changes nothing.
    return Caller(None, None)


def writer(policy: KeyPolicy, presented: bool, origin: str | None = None) -> Caller:
    """The caller of a write (ingest, removal), or why it may not write; `origin`: the web page's,
    when another site's (no key may write from one)."""
    if not policy.writes_on:
        raise PgciteError(
            "this needs an admin key and the server has none, so writes, the answer log and insights are off "
            "(the log holds what people asked); create one with: pgcite keys create NAME --admin",
            kind="forbidden",
        )
    if policy.key is None:
        raise _unauthorized(
            "this needs an admin key: send `Authorization: Bearer <admin key>`"
            if not presented
            else "the API key is not valid (unknown or revoked)"
        )
    if origin is not None and policy.key.origins is None:
        raise _not_from_a_page(policy.key, origin)
    if not policy.key.admin:
        raise PgciteError(f"the key {policy.key.name!r} may only read; this needs an admin key", kind="forbidden")
    return Caller(policy.key.name, policy.key.sources, True)


def check_writes(caller: Caller, source: str) -> None:
    """Refuse a write to a source outside an admin key's scope."""
    if caller.sources is not None and source not in caller.sources:
        raise PgciteError(f"the key {caller.name!r} administers only {', '.join(caller.sources)}", kind="forbidden")


class KeyOps:
    """The keys' operations, mixed into core.Pgcite, which provides the store."""

    if TYPE_CHECKING:

        def reader(self) -> AbstractContextManager[Store]: ...

        def writer(self) -> AbstractContextManager[Store]: ...

    def create_key(
        self,
        name: str,
        *,
        sources: Sequence[str] | None = None,
        admin: bool = False,
        origins: Sequence[str] | None = None,
    ) -> str:
        """A new key, returned once: only its hash is stored. origins: a browser key's web pages."""
        check_key_name(name)
        if origins is not None:
            if admin:
                raise PgciteError("a browser key only reads: it sits in a web page for anyone to copy")
            origins = check_origins(origins)
        key = new_key()
        with self.writer() as store:
            key_rows.add_key(store, name, hash_key(key), sources, admin, origins)
        return key

    def keys(self) -> list[key_rows.ApiKey]:
        with self.reader() as store:
            return key_rows.list_keys(store)

    def revoke_key(self, name: str) -> None:
        with self.writer() as store:
            if not key_rows.revoke_key(store, name):
                raise PgciteError(f"no live key named {name!r}; `pgcite keys list` shows them", kind="not_found")

    def caller(self, authorization: str | None, *, write: bool = False, origin: str | None = None) -> Caller:
        """Who sent a request with this Authorization header (from a web page at `origin`, when another
        site's), and what it may do (or an unauthorized / forbidden error)."""
        key = bearer(authorization)
        with self.reader() as store:
            policy = key_rows.key_policy(store, hash_key(key) if key else None)
        if write:
            return writer(policy, key is not None, origin)
        return reader(policy, key is not None, origin)

    def origin_has_key(self, origin: str) -> bool:
        with self.reader() as store:
            return key_rows.origin_has_key(store, origin)
