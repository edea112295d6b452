"""`pgcite slack`: the same Slack bot (slack.py) over Socket Mode, for a server Slack cannot reach.
pgcite opens the connection: `apps.connections.open` with the app-level token (`xapp-...`) gives a
WebSocket URL, over which Slack sends the events and clicks it would have posted to /slack/events,
each acknowledged by its envelope id (Bolt's SocketModeHandler on slack_sdk's built-in client, which
reconnects by itself). No signing secret is needed: the connection is authenticated by the token."""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_bolt.adapter.socket_mode.builtin import SocketModeHandler
from slack_sdk.errors import SlackApiError, SlackClientError

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, first_line
from pgcite.messaging.slack import SlackBot

log = logging.getLogger("pgcite.slack")
WHERE = "Basic Information → App-Level Tokens, with the scope connections:write (docs/slack.md#socket-mode)"


def check_tokens(settings: Settings) -> None:
    """The tokens Socket Mode needs, or a one-line error saying which to set."""
    token = settings.slack_app_token.strip()
    if not token:
        raise PgciteError(f"PGCITE_SLACK_APP_TOKEN is not set: make an app-level token (xapp-...) in {WHERE}")
    if not token.startswith("xapp-"):
        raise PgciteError(f"PGCITE_SLACK_APP_TOKEN is not an app-level token (xapp-...): make one in {WHERE}")
    if not settings.slack_bot_token.strip():
        raise PgciteError(
            "PGCITE_SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-...) from Install App"
        )


class SocketMode:
    def __init__(self, core: Pgcite, follow_up: Callable[[str], bool]) -> None:
        check_tokens(core.settings)
        self.bot = SlackBot(core, follow_up)
        self.handler = SocketModeHandler(
            self.bot.app,
            core.settings.slack_app_token.strip(),
            logger=logging.getLogger("pgcite.slack.socket"),
            web_client=self.bot.client,
        )

    def connect(self) -> None:
        """Open the connection (returns once it is up; events are handled on the client's threads)."""
        try:
            self.handler.connect()
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            raise PgciteError(
                f"Slack refused PGCITE_SLACK_APP_TOKEN ({error or first_line(exc)}): make a new one in {WHERE}"
            ) from None
        except (SlackClientError, OSError) as exc:
            raise PgciteError(f"Slack's Socket Mode could not be reached: {first_line(exc)}; try again") from None
        log.info("slack: connected over Socket Mode")

    def close(self) -> None:
        try:
            self.handler.close()
        finally:
            self.bot.close()
