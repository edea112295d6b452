"""`pgcite slack` and `pgcite discord`: the chat bots' commands besides the server: Slack over Socket
Mode (docs/slack.md), and registering Discord's commands (docs/discord.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, err, out
from pgcite.errors import PgciteError

discord_app = typer.Typer(help="The Discord bot: register its commands.", no_args_is_help=True)


@discord_app.command("register")
def discord_register(
    guild: Annotated[
        str | None,
        typer.Option("--guild", help="Register in this guild (server) id only; default: everywhere the app is."),
    ] = None,
) -> None:
    """Register /ask and the "Ask pgcite" message command with Discord (run again, it replaces them)."""
    from pgcite.messaging.discord_api import DiscordApi

    settings = cli_settings()
    if not settings.discord_application_id.isdigit():
        raise PgciteError(
            "PGCITE_DISCORD_APPLICATION_ID is not set to an application id: copy it from the application's "
            "General Information page"
        )
    if guild is not None and not guild.isdigit():
        raise typer.BadParameter("a guild id is a number (Copy Server ID in Discord)", param_hint="--guild")
    api = DiscordApi(settings.discord_api_url, settings.discord_application_id, settings.discord_bot_token)
    try:
        commands = api.register(guild)
    finally:
        api.close()
    names = ", ".join(("/" if c.get("type") == 1 else "") + str(c.get("name")) for c in commands)
    where = f"in guild {guild}" if guild else "in every guild the app is installed in"
    out.print(f"registered {escape(names)} for application {settings.discord_application_id} {where}")


def slack() -> None:
    """Answer in Slack over Socket Mode, for a server Slack cannot reach (docs/slack.md#socket-mode)."""
    import logging
    import threading

    from pgcite.core import Pgcite
    from pgcite.messaging.socket_mode import SocketMode, check_tokens
    from pgcite.server.chat import is_follow_up

    settings = cli_settings()
    check_tokens(settings)  # before the database and the model
    logging.basicConfig(format="%(levelname)s: %(message)s")
    logging.getLogger("pgcite").setLevel(logging.INFO)
    with Pgcite(settings) as app:
        bot = SocketMode(app, is_follow_up)
        try:
            bot.connect()
            err.print("loading the embedding model...")
            app.warm_up()
            err.print("answering in Slack over Socket Mode; Ctrl-C stops")
            threading.Event().wait()
        finally:
            bot.close()
