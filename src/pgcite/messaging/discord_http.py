"""`POST /discord/interactions` on `pgcite serve`: Discord's interactions endpoint. A request is
verified as Discord specifies before anything else is done with it: `X-Signature-Ed25519` is the
hex Ed25519 signature of `{X-Signature-Timestamp}{body}` under the application's public key; and a
timestamp more than five minutes from now is refused too (a replay). An unsigned, forged or stale
request gets 401. A verified one is answered within Discord's three seconds (a deferred response
for a question); the answer is worked out after the response is sent (discord_bot.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

import anyio.to_thread
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.messaging.discord_bot import DiscordBot

PATH = "/discord/interactions"
MAX_AGE = 300  # seconds a signed request stays valid


def public_key(text: str) -> Ed25519PublicKey:
    try:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text.strip()))
    except ValueError:
        raise PgciteError(
            "PGCITE_DISCORD_PUBLIC_KEY is not the 64 hex digits of an Ed25519 public key; copy the Public Key "
            "from the application's General Information page"
        ) from None


def _refused(why: str) -> PgciteError:
    return PgciteError(f"not a request from Discord: {why}", kind="unauthorized")


def check_signature(key: Ed25519PublicKey, headers: Mapping[str, str], body: bytes) -> None:
    """Raise (401) unless `body` is signed by Discord with the application's key in the last five minutes."""
    timestamp, signature = headers.get("x-signature-timestamp"), headers.get("x-signature-ed25519")
    if not timestamp or not signature:
        raise _refused("it carries no X-Signature-Ed25519 and X-Signature-Timestamp")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_AGE:
        raise _refused("its timestamp is more than five minutes from now (a stale or replayed request)")
    try:
        key.verify(bytes.fromhex(signature), timestamp.encode() + body)
    except (ValueError, InvalidSignature):
        raise _refused("its signature does not match (check PGCITE_DISCORD_PUBLIC_KEY)") from None


def add_discord_routes(app: FastAPI, core: Pgcite) -> DiscordBot:
    key = public_key(core.settings.discord_public_key)
    bot = DiscordBot(core)

    @app.post(PATH, include_in_schema=False)
    async def discord_interactions(request: Request) -> JSONResponse:
        body = await request.body()
        check_signature(key, request.headers, body)
        try:
            interaction = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            interaction = None
        if not isinstance(interaction, dict):
            raise PgciteError("the request body is not a JSON object")
        response, job = await anyio.to_thread.run_sync(bot.handle, interaction)
        return JSONResponse(response, background=BackgroundTask(job) if job else None)

    return bot
