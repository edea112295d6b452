"""The one value of a query that always returns a row (an aggregate, EXISTS, SHOW, INSERT ...
RETURNING), typed: psycopg's fetchone() may be None, which these queries never are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg


def scalar(conn: psycopg.Connection, query: str, params: Sequence | Mapping | None = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return row[0]
