"""The Slack bot, on Slack's Bolt: a mention in a channel, or a direct message, is answered in its
thread, the reply growing as the answer is written (streaming.py); a follow-up in the thread is asked
with the question the bot answered before it, by the same rule as the chat endpoint and the widget.
Each channel reads only the sources slack_channels maps it to (channels.py). Helpful / Not helpful
reach the answer log as a rating, and the comment of the modal that follows as its comment.

Nothing is acknowledged before it is in the database: a message is taken, and a rating recorded, before
Slack has its response; a database that cannot take it answers 503 (bots.record, _failed).

Each message is answered once: the first server to record it in the database takes it (a retried or
twice-subscribed delivery finds it taken), and holds it by a lease while it answers; a server that
stops mid-answer lets the lease run out, and a sweep (bots.py: at start, then every 30 seconds) finishes
the answer in the same reply. The log says channel `slack` and who asked as TEAM/CHANNEL/USER."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, error_body, first_line
from pgcite.learn.log import Origin
from pgcite.messaging import bots, render
from pgcite.messaging.channels import ChannelMap, Scope
from pgcite.messaging.streaming import Reply
from pgcite.store import chat_sql
from pgcite.store.chat_sql import Pending

log = logging.getLogger("pgcite.slack")

NOT_SET_UP = "pgcite is not set up to answer in this channel; ask whoever runs it to map the channel to its docs."


class SlackBot:
    LEASE = bots.LEASE  # seconds an answer stays its server's without a renewal

    def __init__(self, core: Pgcite, follow_up: Callable[[str], bool]) -> None:
        settings = core.settings
        if not settings.slack_bot_token:
            raise PgciteError(
                "PGCITE_SLACK_SIGNING_SECRET is set but PGCITE_SLACK_BOT_TOKEN is not: set both (docs/slack.md)"
            )
        self.core, self.follow_up = core, follow_up
        self.channels = ChannelMap.parse(settings.slack_channels)
        self.client = WebClient(
            token=settings.slack_bot_token,
            base_url=settings.slack_api_url,
            timeout=30,
            retry_handlers=[
                ConnectionErrorRetryHandler(),
                RateLimitErrorRetryHandler(max_retry_count=2),
                ServerErrorRetryHandler(max_retry_count=2),
            ],
        )
        # The replies' updates are retried by streaming.py, which knows which one must arrive.
        self._replies = WebClient(
            token=settings.slack_bot_token,
            base_url=settings.slack_api_url,
            timeout=30,
            retry_handlers=[],
        )
        self.app = App(
            signing_secret=settings.slack_signing_secret,
            client=self.client,
            token_verification_enabled=False,  # auth.test on the first request, not at start
            logger=logging.getLogger("pgcite.slack.bolt"),
        )
        self.app.event("app_mention", middleware=[self._record])(self._on_mention)
        self.app.event("message", middleware=[self._record])(self._on_message)
        for action in render.RATINGS:
            self.app.action(action)(self._on_click)
        self.app.view(render.FEEDBACK_VIEW)(self._on_comment)
        self.app.error(self._failed)
        self._sweeper = bots.Sweeper(core, "slack", self._resume, within="1 hour", log=log)

    def close(self) -> None:
        self._sweeper.close()

    # --- questions ---------------------------------------------------------------------------

    @staticmethod
    def _asked(event: dict) -> bool:
        """A mention, or a direct message (in a channel only mentions are answered; edits and bots'
        posts never)."""
        if event.get("type") == "app_mention":
            return True
        return event.get("channel_type") == "im" and not event.get("subtype") and not event.get("bot_id")

    def _record(self, body: dict, context, next) -> None:  # Bolt passes `next` by name
        """Before Slack has its 200: the message recorded as taken (context["pgcite_held"]; None for a
        second delivery). A database that cannot record it raises NotRecorded: a 503 (_failed), so
        that Slack delivers it again rather than the question going unanswered."""
        event = body.get("event") or {}
        if self._asked(event):
            context["pgcite_held"] = bots.take(self.core, self._pending(event, body), "Slack delivers it again")
        next()

    def _failed(self, error: Exception, response: BoltResponse | None) -> BoltResponse | None:
        """Bolt's error handler. Something not recorded before its response answers 503 in JSON;
        anything else keeps Bolt's 500 (after an ack, `response` is None: nothing more is sent)."""
        if not isinstance(error, bots.NotRecorded):
            log.error("slack: a request failed", exc_info=error)
            return None
        log.error("slack: %s", error)
        if response is None:
            return None
        body = json.dumps(error_body(str(error), error.kind))
        return BoltResponse(status=503, body=body, headers={"content-type": "application/json"})

    def _on_mention(self, event: dict, body: dict, context) -> None:
        self._take(event, body, context, direct=False)

    def _on_message(self, event: dict, body: dict, context) -> None:
        if self._asked(event):
            self._take(event, body, context, direct=True)

    @staticmethod
    def _pending(event: dict, body: dict) -> Pending:
        team, channel, ts = body.get("team_id") or event.get("team", ""), event["channel"], event["ts"]
        question = render.question_of(event.get("text", ""))
        return Pending(
            event_id=f"{team}/{channel}/{ts}",  # the message: a redelivery and a second subscription alike
            team=team,
            channel=channel,
            user=event.get("user", ""),
            thread=event.get("thread_ts") or ts,
            reply="",
            question="" if _problem(question) else question,
        )

    def _take(self, event: dict, body: dict, context, *, direct: bool) -> None:
        pending = context.get("pgcite_held")  # recorded by _record, before the 200
        if pending is None:
            log.info("slack: %s delivered again; answered once", self._pending(event, body).event_id)
            return
        question = render.question_of(event.get("text", ""))
        problem = _problem(question)
        scope = self.channels.scope(pending.team, pending.channel, direct=direct)
        if scope is None or problem:
            self._decline(pending, scope, problem)
            return
        if pending.thread != event["ts"] and self.follow_up(question):
            question = self._with_previous(pending, event["ts"], question, context.bot_user_id, direct)
        self._start(dataclasses.replace(pending, question=question), scope)

    def _decline(self, pending: Pending, scope: Scope | None, problem: str) -> None:
        try:
            if scope is None:
                log.warning(
                    "slack: a question in %s/%s not answered: slack_channels maps no sources to that channel",
                    pending.team,
                    pending.channel,
                )
                self.client.chat_postEphemeral(channel=pending.channel, user=pending.user, text=NOT_SET_UP)
            else:
                text, blocks = render.note(problem)
                self.client.chat_postMessage(
                    channel=pending.channel, thread_ts=pending.thread, text=text, blocks=blocks
                )
        except SlackClientError as exc:
            log.warning("slack: could not reply in %s: %s", pending.channel, first_line(exc))
        self._finished(pending)

    def _with_previous(self, pending: Pending, ts: str, question: str, bot: str, direct: bool) -> str:
        """The question with the one the bot answered earlier in the thread before it (a follow-up)."""
        try:
            reply = self.client.conversations_replies(channel=pending.channel, ts=pending.thread, limit=200)
        except SlackClientError as exc:
            log.info("slack: the thread of a follow-up not read, asked alone: %s", first_line(exc))
            return question
        earlier = [m for m in reply.get("messages") or [] if float(m.get("ts", 0)) < float(ts)]
        answers = [i for i, m in enumerate(earlier) if m.get("user") == bot]
        if not answers:
            return question
        asked = [
            render.question_of(m.get("text", ""))
            for m in earlier[: answers[-1]]
            if m.get("user") != bot and not m.get("bot_id") and (direct or render.mentions(m.get("text", ""), bot))
        ]
        previous = asked[-1] if asked else ""
        return f"{previous} {question}" if previous and not _problem(previous) else question

    def _start(self, pending: Pending, scope: Scope) -> None:
        """Post the placeholder reply, then grow it into the answer."""
        try:
            bots.Lease(self.core, pending)(now=True)  # still this server's after its wait in the queue
        except bots.LeaseLost:
            log.info("slack: %s was taken by another server, which answers it", pending.event_id)
            return
        text, blocks = render.note(render.THINKING)
        try:
            posted = self.client.chat_postMessage(
                channel=pending.channel, thread_ts=pending.thread, text=text, blocks=blocks
            )
        except SlackClientError as exc:  # the lease runs out and a sweep tries again
            log.warning("slack: could not reply in %s: %s", pending.channel, first_line(exc))
            return
        pending = dataclasses.replace(pending, reply=posted["ts"])
        with self.core.writer() as store:
            ours = chat_sql.started(store, pending, self.LEASE)
        if not ours:
            # The post slept through a rate limit past the lease and another server answers: the
            # placeholder would stay in the thread, saying it is looking, for good.
            log.info("slack: %s was taken by another server, which answers it", pending.event_id)
            try:
                self._replies.chat_delete(channel=pending.channel, ts=pending.reply)
            except SlackClientError as exc:
                log.warning("slack: an unused placeholder in %s not deleted: %s", pending.channel, first_line(exc))
            return
        self._answer(pending, scope)

    def _answer(self, pending: Pending, scope: Scope) -> None:
        lease = bots.Lease(self.core, pending)
        reply = Reply(self._replies, pending.channel, pending.thread, pending.reply, renew=lease)
        try:
            lease(now=True)
            result = bots.answer(
                self.core,
                pending.question,
                scope,
                Origin("slack", f"{pending.team}/{pending.channel}/{pending.user}"),
                lambda text: reply.grow(*render.growing(text)),
                log,
            )
            final = render.answer_message(result) if isinstance(result, Answer) else render.note(result)
            delivered = reply.finish(*final)
        except bots.LeaseLost:
            log.info("slack: %s was taken by another server, which answers it", pending.event_id)
            return
        if delivered:
            self._finished(pending)
        else:
            log.error("slack: the answer in %s was not delivered; it is tried again in a minute", pending.channel)

    def _finished(self, pending: Pending) -> None:
        bots.finished(self.core, pending)

    def _resume(self, pending: Pending) -> None:
        """An answer a stopped server left: started again, or finished in its reply."""
        scope = self.channels.scope(pending.team, pending.channel, direct=pending.channel.startswith("D"))
        if scope is None or not pending.question:
            self._finished(pending)
        elif not pending.reply:
            self._start(pending, scope)
        else:
            self._answer(pending, scope)

    # --- feedback ----------------------------------------------------------------------------

    def _on_click(self, ack, body: dict, action: dict) -> None:
        """Helpful / Not helpful: the rating is recorded before Slack has its 200 (a database that
        cannot take it raises NotRecorded: a 503, and Slack shows the click failed), then a modal asks
        for a comment."""
        team, channel = body.get("team", {}).get("id", ""), body.get("channel", {}).get("id", "")
        rating, answer_id = render.RATINGS[action["action_id"]], action.get("value", "")
        scope = self._scope_of_click(team, channel)
        rated = scope is not None and self._rated(answer_id, rating, scope, f"{team}/{channel}")
        ack()  # only now: the rating is in the database, or was refused
        if not rated:
            return
        try:
            self.client.views_open(
                trigger_id=body["trigger_id"], view=render.feedback_view(answer_id, rating, team, channel)
            )
        except (SlackClientError, KeyError) as exc:  # the rating stands without a comment
            log.info("slack: the comment's modal not opened: %s", first_line(exc))

    def _rated(self, answer_id: str, rating: str, scope: Scope, where: str) -> bool:
        """Record a click's rating: False when it is refused (an answer this channel may not rate, or
        one no longer logged); NotRecorded when the database cannot take it."""
        try:
            bots.record(lambda: self.core.rate(answer_id, rating, allowed=scope.sources), "the rating", "click again")
        except bots.NotRecorded:
            raise
        except PgciteError as exc:
            log.warning("slack: a rating in %s not recorded: %s", where, first_line(exc))
            return False
        return True

    def _on_comment(self, ack, view: dict) -> None:
        meta = json.loads(view.get("private_metadata") or "{}")
        values = view.get("state", {}).get("values", {})
        comment = (values.get(render.COMMENT, {}).get(render.COMMENT, {}).get("value") or "").strip()
        scope = self._scope_of_click(meta.get("team", ""), meta.get("channel", ""))
        if comment and scope is not None:
            try:
                self.core.rate(meta["answer"], meta["rating"], comment[: render.COMMENT_CHARS], allowed=scope.sources)
            except (PgciteError, KeyError) as exc:
                ack(response_action="errors", errors={render.COMMENT: bots.for_chat(exc)[:150]})
                return
        ack()

    def _scope_of_click(self, team: str, channel: str) -> Scope | None:
        scope = self.channels.scope(team, channel, direct=channel.startswith("D"))
        if scope is None:
            log.warning("slack: a click in %s/%s ignored: slack_channels maps no sources to it", team, channel)
        return scope


def _problem(question: str) -> str:
    """Why a message cannot be asked as it is, or ""."""
    return bots.problem(question, "Ask a question after the mention, e.g. how do I install it?")
