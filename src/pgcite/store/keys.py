"""The SQL of API keys (table api_keys, migration 6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import errors as pgerrors

from pgcite.errors import PgciteError
from pgcite.store.database import Store


@dataclass(frozen=True)
class ApiKey:
    name: str
    sources: tuple[str, ...] | None  # None: every source
    admin: bool
    created_at: str = ""
    revoked: bool = False
    origins: tuple[str, ...] | None = None  # a browser key's web pages (scheme://host[:port]); None: not one


@dataclass(frozen=True)
class KeyPolicy:
    key: ApiKey | None  # the presented key, when it is a live one
    reads_need_key: bool  # some live key is not an admin key
    writes_on: bool  # some live admin key exists


def add_key(
    store: Store,
    name: str,
    key_hash: bytes,
    sources: Sequence[str] | None,
    admin: bool,
    origins: Sequence[str] | None = None,
) -> None:
    try:
        store.conn.execute(
            "INSERT INTO api_keys (name, key_hash, sources, admin, origins) VALUES (%s, %s, %s, %s, %s)",
            (name, key_hash, list(sources) if sources is not None else None, admin, _list(origins)),
        )
    except pgerrors.UniqueViolation:
        raise PgciteError(
            f"a key named {name!r} exists already; revoke it or choose another name", kind="conflict"
        ) from None


def list_keys(store: Store) -> list[ApiKey]:
    rows = store.conn.execute(
        """SELECT name, sources, admin, to_char(created_at, 'YYYY-MM-DD HH24:MI:SS'), revoked_at IS NOT NULL,
                  origins
           FROM api_keys ORDER BY name"""
    ).fetchall()
    return [
        ApiKey(name, _tuple(sources), admin, created, revoked, _tuple(origins))
        for name, sources, admin, created, revoked, origins in rows
    ]


def _list(values: Sequence[str] | None) -> list[str] | None:
    return list(values) if values is not None else None


def _tuple(values: Sequence[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


def origin_has_key(store: Store, origin: str) -> bool:
    """Some live browser key was made for pages at `origin` (CORS grants it, the key is checked later)."""
    row = store.conn.execute(
        "SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND %s = ANY(origins))", (origin,)
    ).fetchone()
    return bool(row and row[0])


def revoke_key(store: Store, name: str) -> bool:
    return (
        store.conn.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE name = %s AND revoked_at IS NULL", (name,)
        ).rowcount
        > 0
    )


def key_policy(store: Store, key_hash: bytes | None) -> KeyPolicy:
    row = store.conn.execute(
        """SELECT k.name, k.sources, k.admin, k.origins,
                  EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND NOT admin),
                  EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND admin)
           FROM (SELECT 1) one
           LEFT JOIN api_keys k ON k.key_hash = %s AND k.revoked_at IS NULL""",
        (key_hash,),
    ).fetchone()
    assert row is not None  # the LEFT JOIN on one row always returns it
    name, sources, admin, origins, reads_need_key, writes_on = row
    key = ApiKey(name, _tuple(sources), admin, origins=_tuple(origins)) if name is not None else None
    return KeyPolicy(key, reads_need_key, writes_on)
