"""Least privilege on an external PostgreSQL: a login role that writes (ingest, migrations) and a
login role that may only read (the query path), both made by `pgcite db roles`."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgcite.errors import StoreError
from pgcite.store.database import READER_ROLE


@dataclass(frozen=True)
class RolePlan:
    statements: list[sql.SQL | sql.Composed]
    writer_url: str
    query_url: str


def plan_roles(dsn: str, writer: str, query: str) -> RolePlan:
    """The statements that make both roles on the database of `dsn`, with new passwords, and
    the URLs pgcite then connects with."""
    info = conninfo_to_dict(dsn)
    database = str(info.get("dbname") or info.get("user") or "postgres")
    writer_password, query_password = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    w, q, r = sql.Identifier(writer), sql.Identifier(query), sql.Identifier(READER_ROLE)
    statements: list[sql.SQL | sql.Composed] = [
        sql.SQL("CREATE EXTENSION IF NOT EXISTS vector"),
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(w, sql.Literal(writer_password)),
        sql.SQL("GRANT CONNECT, TEMPORARY ON DATABASE {} TO {}").format(sql.Identifier(database), w),
        sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(w),
        # The query path's rights: SELECT on every table the writer makes, now and later.
        sql.SQL(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {}) THEN CREATE ROLE {} NOLOGIN; "
            "END IF; END $$"
        ).format(sql.Literal(READER_ROLE), r),
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(r),
        sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(r),
        sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA public GRANT SELECT ON TABLES TO {}").format(w, r),
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(q, sql.Literal(query_password), r),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), q),
        sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(q),
    ]
    return RolePlan(statements, _url(dsn, writer, writer_password), _url(dsn, query, query_password))


def _url(dsn: str, user: str, password: str) -> str:
    """`dsn` as another user: a postgresql:// URL, or keywords for a socket folder."""
    info = conninfo_to_dict(dsn)
    host = str(info.get("host") or "localhost")
    if host.startswith("/"):
        return make_conninfo(dsn, user=user, password=password)
    port = f":{info['port']}" if info.get("port") else ""
    return (
        f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}@{host}{port}/"
        f"{quote(str(info.get('dbname') or user), safe='')}"
    )


def apply_roles(dsn: str, plan: RolePlan) -> None:
    """Run the plan in one transaction: both roles are made, or neither."""
    try:
        with psycopg.connect(dsn, connect_timeout=10) as conn, conn.transaction():
            for statement in plan.statements:
                conn.execute(statement)
    except psycopg.errors.DuplicateObject as exc:
        raise StoreError(
            f"{str(exc).splitlines()[0]}; choose other names (--writer, --query) or drop that role", kind="conflict"
        ) from None
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StoreError(
            f"{str(exc).splitlines()[0]}; run it as a superuser, or as a role with CREATEROLE that owns the database",
            kind="forbidden",
        ) from None
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to make the roles: {str(exc).strip().splitlines()[0]}") from None
