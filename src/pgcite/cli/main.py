"""The `pgcite` command: a thin shell over ingest() and search(). This module assembles it: which
commands it has, in the order its help lists them, and how their errors end the process."""

from __future__ import annotations

import sys

import psycopg
import typer
from rich.markup import escape

from pgcite.cli.answers import ask, search
from pgcite.cli.chat import discord_app, slack
from pgcite.cli.common import err
from pgcite.cli.eval import eval_questions
from pgcite.cli.export import export_app
from pgcite.cli.ingest import ingest, sync
from pgcite.cli.insights import insights
from pgcite.cli.keys import db_app, keys_app
from pgcite.cli.log import gaps, log_app
from pgcite.cli.review import review
from pgcite.cli.server import mcp, serve, status, stop
from pgcite.cli.sources import sources_app
from pgcite.errors import PgciteError, first_line

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Cited answers from your documentation.",
)
# Typer lists the commands in the order they are added, then the groups.
app.command()(ingest)
app.command()(sync)
app.command()(search)
app.command()(ask)
app.command()(status)
app.command()(serve)
app.command()(mcp)
app.command()(slack)
app.command()(stop)
app.command("gaps")(gaps)
app.command("insights")(insights)
app.command("eval")(eval_questions)
app.command()(review)
app.add_typer(sources_app, name="sources")
app.add_typer(db_app, name="db")
app.add_typer(keys_app, name="keys")
app.add_typer(log_app, name="log")
app.add_typer(export_app, name="export")
app.add_typer(discord_app, name="discord")


def command() -> typer._click.Command:  # Typer's own copy of click
    """The command tree `pgcite` runs. A flag's help row shows no type tag: Typer 0.29 writes `<bool>`
    on every flag, though a flag takes no value (an option that takes one keeps `<str>`, `<int>`)."""
    root = typer.main.get_command(app)
    pending = [root]
    while pending:
        cmd = pending.pop()
        pending.extend(getattr(cmd, "commands", {}).values())
        for param in [*cmd.params, cmd.get_help_option(cmd.context_class(cmd))]:
            if param is not None and getattr(param, "is_flag", False):  # Typer's own click: not click.Option
                param.metavar = ""
    return root


def main() -> None:
    # Standalone mode: click prints usage errors itself and sets the exit code.
    try:
        command()()
    except PgciteError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        sys.exit(getattr(exc, "exit_code", 1))
    except psycopg.Error as exc:  # a server that went away mid-command, a statement timeout...
        first = first_line(exc)
        err.print(
            f"[red]error:[/] database: {escape(first)}; check the server (`pgcite status`) and run again",
            soft_wrap=True,
        )
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted; what was stored stays consistent (each file is one transaction)")
        sys.exit(130)
