"""Discord's REST API, the few routes pgcite calls (on httpx2): an interaction's deferred message
edited as the answer grows (`PATCH /webhooks/{application}/{token}/messages/@original`), a follow-up
when it cannot be (`POST /webhooks/{application}/{token}`), and the commands registered
(`PUT /applications/{application}/commands`, or a guild's). The webhook routes are authorised by the
interaction's token (valid 15 minutes); only registering uses the bot's token. A call Discord does not
take raises streaming.Refused: a 429 with its retry_after (the JSON body's, else Retry-After), a 5xx
or no answer as a fault worth trying again."""

from __future__ import annotations

import time
from urllib.parse import quote

import httpx2

from pgcite.errors import PgciteError, first_line
from pgcite.messaging.streaming import Growing, Refused
from pgcite.vocabulary import MAX_QUESTION_CHARS

USER_AGENT = "DiscordBot (https://github.com/pgcite/pgcite, 0.1.0)"
GUILD = 0  # an interaction context: commands are offered in servers, not in direct messages
ASK, MESSAGE_COMMAND = "ask", "Ask pgcite"
COMMANDS = [
    {
        "name": ASK,
        "type": 1,  # a slash command
        "description": "Ask the docs; the answer cites its sources",
        "options": [
            {
                "type": 3,  # a string
                "name": "question",
                "description": "What you want to know",
                "required": True,
                "max_length": MAX_QUESTION_CHARS,
            }
        ],
        "contexts": [GUILD],
    },
    {"name": MESSAGE_COMMAND, "type": 3, "contexts": [GUILD]},  # a message's Apps menu
]


def _seconds(value: object) -> float | None:
    try:
        return max(float(str(value)), 0.0)
    except ValueError:
        return None


class DiscordApi:
    def __init__(self, base_url: str, application_id: str, bot_token: str = "", timeout: float = 30.0) -> None:
        self.application_id, self.bot_token = application_id, bot_token
        self.http = httpx2.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers={"User-Agent": USER_AGENT})

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, body: object, *, bot: bool = False) -> object:
        headers = {"Authorization": f"Bot {self.bot_token}"} if bot else {}
        try:
            response = self.http.request(method, path, json=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise Refused(f"Discord could not be reached: {first_line(exc)}", fault=True) from None
        if response.status_code < 300:
            return response.json() if response.content else None
        try:
            said = response.json()
        except ValueError:
            said = {}
        said = said if isinstance(said, dict) else {}
        message = f"Discord answered {response.status_code}: {str(said.get('message') or response.reason_phrase)[:200]}"
        if response.status_code == 429:
            wait = _seconds(said.get("retry_after", response.headers.get("retry-after", "1")))
            raise Refused(message, retry_after=1.0 if wait is None else wait, status=429)
        raise Refused(message, fault=response.status_code >= 500, status=response.status_code)

    def _webhook(self, token: str) -> str:
        return f"/webhooks/{self.application_id}/{quote(token, safe='')}"

    def edit_original(self, token: str, message: dict) -> object:
        return self._call("PATCH", self._webhook(token) + "/messages/@original", message)

    def follow_up(self, token: str, message: dict) -> object:
        return self._call("POST", self._webhook(token), message)

    def register(self, guild: str | None = None) -> list[dict]:
        """Put pgcite's commands (replacing the application's others), globally or in one guild."""
        if not self.bot_token:
            raise PgciteError("PGCITE_DISCORD_BOT_TOKEN is not set: copy the bot's token (Bot page) and run again")
        where = f"/guilds/{guild}" if guild else ""
        path = f"/applications/{self.application_id}{where}/commands"
        for attempt in range(3):
            try:
                done = self._call("PUT", path, COMMANDS, bot=True)
                return done if isinstance(done, list) else []
            except Refused as exc:
                if attempt < 2 and (exc.retry_after is not None or exc.fault):
                    time.sleep(min(exc.retry_after if exc.retry_after is not None else 1.0, 10.0))
                    continue
                hint = {
                    401: "check PGCITE_DISCORD_BOT_TOKEN",
                    403: "check that the token is this application's bot's",
                    404: "check PGCITE_DISCORD_APPLICATION_ID (and that the app is installed in the guild)",
                }.get(exc.status, "try again")
                raise PgciteError(f"registering the commands failed: {exc}; {hint}") from None
        return []


class Original(Growing):
    """An interaction's deferred message, edited as the answer grows; a follow-up when it cannot be."""

    def __init__(self, api: DiscordApi, token: str, where: str, **options) -> None:
        super().__init__("discord", where, **options)
        self.api, self.token = api, token

    def grow(self, message: dict) -> None:
        self.show(lambda: self.api.edit_original(self.token, message))

    def finish(self, message: dict) -> bool:
        """The finished answer, delivered: True once Discord has it."""
        return self.deliver(
            lambda: self.api.edit_original(self.token, message), lambda: self.api.follow_up(self.token, message)
        )
