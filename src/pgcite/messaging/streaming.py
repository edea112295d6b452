"""A reply in a thread grown into the answer. While the answer is written the message is updated at
most once every INTERVAL seconds (chat.update is one of Slack's rate-limited methods); an update Slack
refuses is skipped (after a 429, none is sent until its Retry-After is over), the next one carries the
text anyway. The final update is retried: after a 429 as
long as its Retry-After says, after a 5xx or a lost connection with a growing backoff, and if the
message cannot be updated at all the answer is posted in the thread instead: it is never lost."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from pgcite.errors import first_line

log = logging.getLogger("pgcite.slack")


def _retry_after(exc: SlackClientError) -> float | None:
    """The seconds a 429 asks to wait (None: not a 429)."""
    if not isinstance(exc, SlackApiError) or exc.response.status_code != 429:
        return None
    headers = {k.lower(): v for k, v in exc.response.headers.items()}
    value = headers.get("retry-after", "1")
    try:
        return max(float(value[0] if isinstance(value, list) else value), 0.0)
    except ValueError:
        return 1.0


def _fault(exc: SlackClientError) -> bool:
    """Slack failed (a 5xx) or could not be reached; not a refusal that trying again cannot change
    (the message was deleted, the bot left the channel ...)."""
    return not isinstance(exc, SlackApiError) or exc.response.status_code >= 500


class Reply:
    INTERVAL = 1.0  # seconds between updates while the answer grows
    TRIES = 8  # of the final update, and then of the final post

    def __init__(
        self,
        client: WebClient,
        channel: str,
        thread_ts: str,
        ts: str,
        *,
        renew: Callable[[], None] = lambda: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.channel, self.thread_ts, self.ts = client, channel, thread_ts, ts
        self._renew, self._sleep = renew, sleep
        self._last = time.monotonic()  # the placeholder was just posted

    def grow(self, text: str, blocks: list[dict]) -> None:
        """The answer so far: shown if the last update is INTERVAL old."""
        if time.monotonic() - self._last < self.INTERVAL:
            return
        self._last = time.monotonic()
        try:
            self.client.chat_update(channel=self.channel, ts=self.ts, text=text, blocks=blocks)
        except SlackClientError as exc:  # the final update carries it all
            log.info("slack: an update of %s/%s skipped: %s", self.channel, self.ts, first_line(exc))
            self._last += _retry_after(exc) or 0.0  # none before Slack's Retry-After is over
        self._renew()

    def finish(self, text: str, blocks: list[dict]) -> bool:
        """The finished answer, delivered: True once Slack has it."""
        if self._send(lambda: self.client.chat_update(channel=self.channel, ts=self.ts, text=text, blocks=blocks)):
            return True
        return self._send(
            lambda: self.client.chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, text=text, blocks=blocks, unfurl_links=False
            )
        )

    def _send(self, call: Callable[[], object]) -> bool:
        faults = 0
        for attempt in range(self.TRIES):
            try:
                call()
                return True
            except SlackClientError as exc:
                log.warning("slack: the answer in %s not delivered yet: %s", self.channel, first_line(exc))
                if (wait := _retry_after(exc)) is None:
                    if not _fault(exc):
                        return False
                    wait, faults = min(0.5 * 2**faults, 30.0), faults + 1
                if attempt == self.TRIES - 1:
                    return False
                self._renew()
                self._sleep(wait)
        return False
