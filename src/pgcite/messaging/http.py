"""`POST /slack/events` on `pgcite serve`: Slack's Events API and its interactivity (button clicks,
modals) at one URL. A request is verified as Slack specifies before anything else is done with it:
`X-Slack-Signature` is `v0=` HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{body}` under the signing
secret, and a timestamp more than five minutes from now is refused (a replay); an unsigned, forged or
stale request gets 401. A verified one goes to the Bolt app (slack.py), which answers within Slack's
three seconds and does the work on a thread of its own."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import anyio.to_thread
from fastapi import FastAPI, Request, Response
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk.signature import SignatureVerifier

from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.messaging.slack import SlackBot

PATH = "/slack/events"
MAX_AGE = 300  # seconds a signed request stays valid (Slack's rule)


def _refused(why: str) -> PgciteError:
    return PgciteError(f"not a request from Slack: {why}", kind="unauthorized")


def check_signature(verifier: SignatureVerifier, headers: Mapping[str, str], body: bytes) -> None:
    """Raise (401) unless `body` is signed by Slack with the signing secret in the last five minutes."""
    timestamp, signature = headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
    if not timestamp or not signature:
        raise _refused("it carries no X-Slack-Signature and X-Slack-Request-Timestamp")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_AGE:
        raise _refused("its timestamp is more than five minutes from now (a stale or replayed request)")
    if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
        raise _refused("its signature does not match (check PGCITE_SLACK_SIGNING_SECRET)")


def add_slack_routes(app: FastAPI, core: Pgcite, follow_up: Callable[[str], bool]) -> SlackBot:
    """Mount the bot; follow_up: the rule that says a question leans on the one before it."""
    bot = SlackBot(core, follow_up)
    verifier = SignatureVerifier(core.settings.slack_signing_secret)

    @app.post(PATH, include_in_schema=False)
    async def slack_events(request: Request) -> Response:
        body = await request.body()
        check_signature(verifier, request.headers, body)
        try:
            bolt_request = to_bolt_request(request, body)
        except UnicodeDecodeError:
            raise PgciteError("the request body is not UTF-8") from None
        response = await anyio.to_thread.run_sync(bot.app.dispatch, bolt_request)
        return to_starlette_response(response)

    return bot
