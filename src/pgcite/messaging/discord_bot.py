"""The Discord bot, over Discord's HTTP interactions: `/ask question:` in a channel, or *Apps → Ask
pgcite* on a message, is answered with a deferred response (Discord shows "pgcite is thinking…"),
whose message is then edited as the answer is written (discord_api.Original, the same throttle and
backoff as Slack's replies). Each channel reads only the sources discord_channels maps it to
(channels.py). Helpful / Not helpful reach the answer log as a rating at once, and the comment of the
modal that follows as its comment.

Each interaction is answered once: the first server to record its id in the database (chat_events,
platform `discord`), before its deferred response is sent, takes it and holds it by a lease while it
answers; a server that stops mid-answer lets the lease run out, and a sweep (bots.py: at start, then
every 30 seconds) finishes the answer in the same message while the interaction's token is valid (15
minutes). The log says channel `discord` and who asked as GUILD/CHANNEL/USER."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, first_line
from pgcite.learn.log import Origin
from pgcite.messaging import bots
from pgcite.messaging import discord_render as render
from pgcite.messaging.channels import DISCORD, ChannelMap, Scope
from pgcite.messaging.discord_api import MESSAGE_COMMAND, DiscordApi, Original
from pgcite.store.chat_sql import Pending

log = logging.getLogger("pgcite.discord")

PING, COMMAND, COMPONENT, MODAL_SUBMIT = 1, 2, 3, 5  # interaction types
PONG, REPLY, DEFERRED, DEFERRED_UPDATE, SHOW_MODAL = 1, 4, 5, 6, 9  # response types
NOT_SET_UP = "pgcite is not set up to answer in this channel; ask whoever runs it to map the channel to its docs."
TOKEN_LIFE = "14 minutes"  # an interaction's token is valid 15: past it, an answer cannot be delivered
Job = Callable[[], None]


def _reply(text: str) -> dict:
    """A message only the person who acted sees."""
    return {"type": REPLY, "data": render.note(text, ephemeral=True)}


def _where(interaction: dict) -> tuple[str, str, str]:
    """The guild, channel and user of an interaction (a guild's carries its member, a DM's its user)."""
    member_user = (interaction.get("member") or {}).get("user") or {}
    user = member_user or interaction.get("user") or {}
    channel = interaction.get("channel_id") or (interaction.get("channel") or {}).get("id") or ""
    return str(interaction.get("guild_id") or ""), str(channel), str(user.get("id") or "")


class DiscordBot:
    def __init__(self, core: Pgcite) -> None:
        settings = core.settings
        if not settings.discord_application_id.isdigit():
            raise PgciteError(
                "PGCITE_DISCORD_PUBLIC_KEY is set but PGCITE_DISCORD_APPLICATION_ID is not an application id: "
                "copy both from the application's General Information page (docs/discord.md)"
            )
        self.core = core
        self.channels = ChannelMap.parse(settings.discord_channels, DISCORD)
        self.api = DiscordApi(settings.discord_api_url, settings.discord_application_id)
        self._work = ThreadPoolExecutor(16, thread_name_prefix="pgcite-discord")
        self._sweeper = bots.Sweeper(core, "discord", self._resume, within=TOKEN_LIFE, log=log)

    def close(self) -> None:
        self._sweeper.close()
        self._work.shutdown(wait=False, cancel_futures=True)  # a queued answer is left to a sweep
        self.api.close()

    def handle(self, interaction: dict) -> tuple[dict, Job | None]:
        """The response to a verified interaction, and the work to do once it is sent (or None)."""
        kind = interaction.get("type")
        if kind == PING:
            return {"type": PONG}, None
        if kind == COMMAND:
            return self._command(interaction)
        if kind == COMPONENT:
            return self._click(interaction), None
        if kind == MODAL_SUBMIT:
            return self._comment(interaction), None
        raise PgciteError(f"interaction type {str(kind)[:20]!r} is not one pgcite answers")

    # --- questions ---------------------------------------------------------------------------

    def _command(self, interaction: dict) -> tuple[dict, Job | None]:
        guild, channel, user = _where(interaction)
        data = interaction.get("data") or {}
        if data.get("name") == MESSAGE_COMMAND or data.get("type") == 3:
            messages = (data.get("resolved") or {}).get("messages") or {}
            target = messages.get(str(data.get("target_id"))) or {}
            question = render.question_of(str(target.get("content") or ""))
            empty = "That message has no text to ask about."
        else:
            options = data.get("options") or []
            asked = next((o.get("value") for o in options if o.get("name") == "question"), "")
            question = " ".join(str(asked or "").split())
            empty = "Ask a question after /ask, e.g. how do I install it?"
        scope = self.channels.scope(guild, channel) if guild else None
        if scope is None:
            log.warning(
                "discord: a question in %s/%s not answered: discord_channels maps no sources to that channel",
                guild or "(a direct message)",
                channel,
            )
            return _reply(NOT_SET_UP), None
        if problem := bots.problem(question, empty):
            return _reply(problem), None
        pending = Pending(str(interaction.get("id")), guild, channel, user, "", str(interaction.get("token")),
                          question, platform="discord")  # fmt: skip
        # Taken before the deferred response: a database that cannot take it raises NotRecorded, a 503
        # (Discord sends an interaction once: the asker sees it failed rather than "thinking" for good).
        held = bots.take(self.core, pending, "ask again")
        if held is None:
            log.info("discord: interaction %s delivered again; answered once", pending.event_id)
            return {"type": DEFERRED}, None
        return {"type": DEFERRED}, lambda: self._queue(held, scope)

    def _queue(self, pending: Pending, scope: Scope) -> None:
        try:
            self._work.submit(self._answer, pending, scope)
        except RuntimeError:  # the server is stopping: the lease runs out and a sweep answers
            log.info("discord: %s left to the next server", pending.event_id)

    def _answer(self, pending: Pending, scope: Scope) -> None:
        lease = bots.Lease(self.core, pending)
        reply = Original(self.api, pending.reply, f"{pending.team}/{pending.channel}", renew=lease)
        try:
            lease(now=True)  # still this server's after its wait in the queue
            result = bots.answer(
                self.core,
                pending.question,
                scope,
                Origin("discord", f"{pending.team}/{pending.channel}/{pending.user}"),
                lambda text: reply.grow(render.growing(pending.question, text)),
                log,
            )
            final = (
                render.answer_message(result, pending.question) if isinstance(result, Answer) else render.note(result)
            )
            delivered = reply.finish(final)
        except bots.LeaseLost:
            log.info("discord: %s was taken by another server, which answers it", pending.event_id)
            return
        if delivered:
            bots.finished(self.core, pending)
        else:
            log.error("discord: the answer in %s was not delivered; it is tried again in a minute", reply.where)

    def _resume(self, pending: Pending) -> None:
        """An answer a stopped server left, finished in its message while the token lasts."""
        scope = self.channels.scope(pending.team, pending.channel)
        if scope is None or not pending.question or not pending.reply:
            bots.finished(self.core, pending)
        else:
            self._answer(pending, scope)

    # --- feedback ----------------------------------------------------------------------------

    def _click(self, interaction: dict) -> dict:
        """Helpful / Not helpful: the rating is recorded at once, then a modal asks for a comment."""
        kind, _, rest = str((interaction.get("data") or {}).get("custom_id") or "").partition(":")
        rating, _, answer_id = rest.partition(":")
        if kind != render.BUTTON or rating not in (render.HELPFUL, render.NOT_HELPFUL):
            return {"type": DEFERRED_UPDATE}  # not pgcite's button: nothing changes
        if (scope := self._scope_of_click(interaction)) is None:
            return _reply(NOT_SET_UP)
        try:
            self.core.rate(answer_id, rating, allowed=scope.sources)
        except PgciteError as exc:
            log.warning("discord: a rating not recorded: %s", first_line(exc))
            return _reply(f"Not recorded: {bots.for_chat(exc)}")
        return {"type": SHOW_MODAL, "data": render.comment_modal(answer_id, rating)}

    def _comment(self, interaction: dict) -> dict:
        data = interaction.get("data") or {}
        kind, _, rest = str(data.get("custom_id") or "").partition(":")
        rating, _, answer_id = rest.partition(":")
        if kind != render.MODAL or (scope := self._scope_of_click(interaction)) is None:
            return _reply(NOT_SET_UP)
        comment = _text_input(data.get("components") or [], render.COMMENT).strip()
        if comment:
            try:
                self.core.rate(answer_id, rating, comment[: render.COMMENT_CHARS], allowed=scope.sources)
            except PgciteError as exc:
                return _reply(f"The comment was not saved: {bots.for_chat(exc)}")
        return _reply("Thanks: the docs team will see it." if comment else "Thanks.")

    def _scope_of_click(self, interaction: dict) -> Scope | None:
        guild, channel, _ = _where(interaction)
        scope = self.channels.scope(guild, channel) if guild else None
        if scope is None:
            log.warning("discord: a click in %s/%s ignored: discord_channels maps no sources to it", guild, channel)
        return scope


def _text_input(components: list, custom_id: str) -> str:
    """A modal's text input by its id, in an action row or a label (both of Discord's layouts)."""
    for component in components:
        if not isinstance(component, dict):
            continue
        if component.get("custom_id") == custom_id and "value" in component:
            return str(component.get("value") or "")
        inner = [*(component.get("components") or []), *([component["component"]] if "component" in component else [])]
        if found := _text_input(inner, custom_id):
            return found
    return ""
