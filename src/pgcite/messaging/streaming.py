"""A reply grown into the answer, on any chat. While the answer is written the message is updated at
most once every INTERVAL seconds (the chats rate-limit their edits); an update the chat refuses is
skipped (after a 429, none is sent until its Retry-After is over), the next one carries the text
anyway. The final update is retried: after a 429 as long as its Retry-After says, after a 5xx or a
lost connection with a growing backoff; if the message cannot be updated at all the answer is sent
as a new message instead (Slack: in the thread; Discord: a follow-up): it is never lost.

`Growing` is that rule; a platform says how its calls fail by raising `Refused`. `Reply` is Slack's."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from pgcite.errors import first_line


class Refused(Exception):
    """A chat's API did not take a call. retry_after: a 429's seconds to wait; fault: the chat failed
    (a 5xx) or could not be reached, so trying again may work (not so a deleted message)."""

    def __init__(self, message: str, *, retry_after: float | None = None, fault: bool = False, status: int = 0) -> None:
        super().__init__(message)
        self.retry_after, self.fault, self.status = retry_after, fault, status


class Growing:
    INTERVAL = 1.0  # seconds between updates while the answer grows
    TRIES = 8  # of the final update, and then of the final post

    def __init__(
        self,
        platform: str,
        where: str,
        *,
        renew: Callable[[], None] = lambda: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.platform, self.where, self.log = platform, where, logging.getLogger(f"pgcite.{platform}")
        self._renew, self._sleep = renew, sleep
        self._last = time.monotonic()  # the placeholder was just posted

    def show(self, update: Callable[[], object]) -> None:
        """Send an update of the answer so far if the last one is INTERVAL old; a refusal skips it."""
        if time.monotonic() - self._last < self.INTERVAL:
            return
        self._last = time.monotonic()
        try:
            update()
        except Refused as exc:  # the final update carries it all
            self.log.info("%s: an update of %s skipped: %s", self.platform, self.where, first_line(exc))
            self._last += exc.retry_after or 0.0  # none before the chat's Retry-After is over
        self._renew()

    def deliver(self, *calls: Callable[[], object]) -> bool:
        """The finished answer: each call in turn (the update, then a new message) until one is taken."""
        return any(self._send(call) for call in calls)

    def _send(self, call: Callable[[], object]) -> bool:
        faults = 0
        for attempt in range(self.TRIES):
            try:
                call()
                return True
            except Refused as exc:
                self.log.warning("%s: the answer in %s not delivered yet: %s", self.platform, self.where, exc)
                if (wait := exc.retry_after) is None:
                    if not exc.fault:
                        return False
                    wait, faults = min(0.5 * 2**faults, 30.0), faults + 1
                if attempt == self.TRIES - 1:
                    return False
                self._renew()
                self._sleep(wait)
        return False


def _refused(exc: SlackClientError) -> Refused:
    """Slack's error as a Refused: a 429's Retry-After; a 5xx or no answer is a fault."""
    if not isinstance(exc, SlackApiError):
        return Refused(first_line(exc), fault=True)
    status = exc.response.status_code
    retry_after = None
    if status == 429:
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        value = headers.get("retry-after", "1")
        try:
            retry_after = max(float(value[0] if isinstance(value, list) else value), 0.0)
        except ValueError:
            retry_after = 1.0
    return Refused(first_line(exc), retry_after=retry_after, fault=status >= 500, status=status)


class Reply(Growing):
    """Slack's: a reply in a thread, updated with chat.update, posted again if it cannot be."""

    def __init__(self, client: WebClient, channel: str, thread_ts: str, ts: str, **options) -> None:
        super().__init__("slack", f"{channel}/{ts}", **options)
        self.client, self.channel, self.thread_ts, self.ts = client, channel, thread_ts, ts

    def _slack(self, method: Callable[..., object], **args) -> Callable[[], object]:
        def call() -> object:
            try:
                return method(**args)
            except SlackClientError as exc:
                raise _refused(exc) from None

        return call

    def grow(self, text: str, blocks: list[dict]) -> None:
        """The answer so far: shown if the last update is INTERVAL old."""
        self.show(self._slack(self.client.chat_update, channel=self.channel, ts=self.ts, text=text, blocks=blocks))

    def finish(self, text: str, blocks: list[dict]) -> bool:
        """The finished answer, delivered: True once Slack has it."""
        return self.deliver(
            self._slack(self.client.chat_update, channel=self.channel, ts=self.ts, text=text, blocks=blocks),
            self._slack(
                self.client.chat_postMessage,
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=text,
                blocks=blocks,
                unfurl_links=False,
            ),
        )
