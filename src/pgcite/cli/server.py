"""`pgcite status`, `pgcite serve`, `pgcite mcp` and `pgcite stop`: what is stored where, the HTTP server, the
MCP server over stdio, and the embedded PostgreSQL."""

from __future__ import annotations

import errno
import json
import socket
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import calibration_line, cli_settings, err, out
from pgcite.errors import PgciteError


def status(as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False) -> None:
    """Where the data lives, which model it was embedded with, and what is stored."""
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        st = app.status()
    if as_json:
        print(json.dumps(shapes.status(st, app.settings.answer_log), ensure_ascii=False))
        return
    out.print(f"database: {escape(st.database)} (PostgreSQL {st.postgres}, pgvector {st.pgvector})")
    out.print("model:    " + (f"{st.model[0]} ({st.model[1]} dims)" if st.model else "none yet (nothing ingested)"))
    out.print(
        f"stored:   {len(st.sources)} sources, {sum(r.documents for r in st.sources)} documents, {st.chunks} chunks; "
        f"vector index {'built' if st.vector_index else 'not built'}"
    )
    for r in st.sources:
        out.print(f"  {escape(r.name)}: {calibration_line(r.calibration)}")
    settings = app.settings
    kept = f"kept {settings.answer_log_days} days" if settings.answer_log_days > 0 else "kept for good"
    out.print(
        f"log:      {st.answers_logged} answers, {kept}"
        if settings.answer_log
        else f"log:      off (PGCITE_ANSWER_LOG); {st.answers_logged} answers from before"
    )


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=64, help="Processes on the one port, each with its own model.")
    ] = 1,
) -> None:
    """Serve the HTTP API (search, ask with streaming, OpenAI-compatible chat, MCP) until stopped."""
    from pgcite.core import Pgcite
    from pgcite.server.app import serve as run_server

    check_port(host, port)  # before the model loads for seconds
    with Pgcite(cli_settings()) as app:  # connects, migrates and reports a bad setting once, up front
        if workers == 1:
            err.print("loading the embedding model...")
            app.warm_up()
            run_server(app, host, port, trusted_proxies=app.settings.serve_trusted_proxies)
            return
    err.print(f"starting {workers} workers, each loading the embedding model...")
    run_server(None, host, port, workers, trusted_proxies=app.settings.serve_trusted_proxies)


def check_port(host: str, port: int) -> None:
    """Fail in one line when the server could not listen on host:port (taken, or not this machine's)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise PgciteError(
            f"cannot listen on {host!r}: {exc.strerror}; give --host an address of this machine"
        ) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PgciteError(
                    f"port {port} on {host} is already in use (another pgcite serve?); "
                    "stop it or choose another with --port"
                ) from None
            raise PgciteError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def mcp(
    sources: Annotated[
        list[str] | None, typer.Option("--source", help="Only this source (repeat for more); default: all.")
    ] = None,
) -> None:
    """Serve the MCP tools (search_docs, ask_docs, read_page, read_section, list_sources) over stdio,
    for a coding agent that starts pgcite itself (docs/mcp.md)."""
    from pgcite.access import Caller
    from pgcite.agents.tools import build
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        for name in sources or ():
            app.require_source(name)
        caller = Caller(None, tuple(sources) if sources else None)
        build(app, lambda ctx: caller).run("stdio")


def stop() -> None:
    """Stop the embedded PostgreSQL server (the next command starts it again)."""
    from pgcite.store import server

    settings = cli_settings()
    if settings.database_url:
        raise PgciteError("PGCITE_DATABASE_URL is set: pgcite does not manage that server")
    stopped = server.stop(settings.home)
    out.print("stopped the embedded PostgreSQL" if stopped else "the embedded PostgreSQL was not running")
