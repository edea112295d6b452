"""`pgcite discord`: the chat bots' commands that are not the server (docs/discord.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, out
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
