"""`pgcite keys` and `pgcite db`: who may read and write: API keys for the server, and least-privilege
roles on the database."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, err, out
from pgcite.errors import PgciteError

db_app = typer.Typer(help="The database: roles for least privilege.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys for `pgcite serve`: create, list, revoke.", no_args_is_help=True)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Argument(help="A name for the key (who or what uses it).")],
    sources: Annotated[
        str | None, typer.Option("--sources", help="Comma-separated sources it may read (default: all).")
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="It may also ingest and remove sources.")] = False,
    origins: Annotated[
        str | None,
        typer.Option(
            "--origins",
            help="A browser key, for the Ask-AI widget: comma-separated sites whose pages may use it "
            "(https://docs.example.com); it only reads.",
        ),
    ] = None,
) -> None:
    """Create a key and print it once, alone on the last line (only its hash is kept)."""
    from pgcite.core import Pgcite

    scope = [s.strip() for s in sources.split(",") if s.strip()] if sources is not None else None
    if scope is not None and not scope:
        raise typer.BadParameter("name at least one source", param_hint="--sources")
    pages = [o.strip() for o in origins.split(",") if o.strip()] if origins is not None else None
    with Pgcite(cli_settings()) as app:
        known = {s.name for s in app.sources()}
        key = app.create_key(name, sources=scope, admin=admin, origins=pages)
    for missing in sorted(set(scope or ()) - known):
        err.print(f"[yellow]note:[/] no source {escape(missing)!r} yet; the key will read it once it is ingested")
    where = f", from pages at {escape(', '.join(pages))}" if pages else ""
    err.print(
        f"created key {escape(repr(name))} ({'admin, ' if admin else ''}reads "
        f"{escape(', '.join(scope)) if scope else 'every source'}{where}); it is shown this once:"
    )
    print(key)


@keys_app.command("list")
def keys_list(as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False) -> None:
    """The keys, without their secrets."""
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        rows = app.keys()
    if as_json:
        print(json.dumps({"keys": [shapes.key(k) for k in rows]}, ensure_ascii=False))
        return
    if not rows:
        out.print("No keys: reads are open and writes are off. Create one with `pgcite keys create NAME`.")
    for k in rows:
        scope = ", ".join(k.sources) if k.sources is not None else "every source"
        kind = "admin" if k.admin else "browser" if k.origins else "read"
        pages = f"  pages at {escape(', '.join(k.origins))}" if k.origins else ""
        out.print(
            f"[bold]{escape(k.name)}[/]  {kind}  {escape(scope)}{pages}  created {k.created_at}"
            + ("  [red]revoked[/]" if k.revoked else "")
        )


@keys_app.command("revoke")
def keys_revoke(name: Annotated[str, typer.Argument(help="The key to revoke.")]) -> None:
    """Revoke a key: requests with it are refused from now on."""
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        app.revoke_key(name)
    out.print(f"revoked key {escape(repr(name))}")


@db_app.command("roles")
def db_roles(
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the SQL (as PGCITE_DATABASE_URL's role) instead of printing it.")
    ] = False,
    writer: Annotated[str, typer.Option("--writer", help="Name of the login role that ingests.")] = "pgcite_writer",
    query: Annotated[
        str, typer.Option("--query", help="Name of the read-only login role of the query path.")
    ] = "pgcite_query",
) -> None:
    """Make a writing login role and a read-only one on your PostgreSQL (run before the first ingest)."""
    from pgcite.store.roles import apply_roles, plan_roles

    settings = cli_settings()
    if not settings.database_url:
        raise PgciteError(
            "set PGCITE_DATABASE_URL to your server (as a superuser or a role with CREATEROLE); "
            "the embedded server needs no roles"
        )
    plan = plan_roles(settings.database_url, writer, query)
    if not apply:
        print("\n".join(f"{s.as_string()};" for s in plan.statements))
        print(f"-- then: PGCITE_DATABASE_URL={plan.writer_url}\n-- and:  PGCITE_QUERY_DATABASE_URL={plan.query_url}")
        return
    apply_roles(settings.database_url, plan)
    err.print(f"made roles {escape(writer)} (writes) and {escape(query)} (reads only); connect with:")
    print(f"PGCITE_DATABASE_URL={plan.writer_url}")
    print(f"PGCITE_QUERY_DATABASE_URL={plan.query_url}")
