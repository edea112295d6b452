"""What every chat's bot does the same way: which questions it takes, recording what a request leaves
in the database before the platform has its response, asking one within a channel's sources while
the reply grows, the lease that keeps an answer its server's (and stops a server that lost it), and
the sweep that finishes the answers a stopped server left (their rows in store/chat_sql.py)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, StoreError, first_line
from pgcite.learn.log import Origin
from pgcite.messaging.channels import Scope
from pgcite.safety import check_text
from pgcite.store import chat_sql
from pgcite.vocabulary import MAX_QUESTION_CHARS, Delta, SearchFilter

LEASE = 60.0  # seconds an answer stays its server's without a renewal
SWEEP = 30.0  # seconds between looks for answers a stopped server left
STOPPED = "pgcite stopped before the answer was finished; ask again."
T = TypeVar("T")


class NotRecorded(StoreError):
    """What a request leaves in the database could not be written before its response: the platform
    gets a 503 (Slack delivers an event again; a click or an interaction shows that it failed)
    rather than an acknowledgement of something lost."""


def record(write: Callable[[], T], what: str, then: str) -> T:
    """write(), before the request is acknowledged. A database that cannot take it (down, refusing
    connections, an embedded start that failed) raises NotRecorded, one line saying what was lost
    and `then` (what happens next); a refusal of the request itself (another kind) passes through."""
    try:
        return write()
    except PgciteError as exc:
        if exc.kind != "unavailable":
            raise
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 -- psycopg's, or whatever a failed start raised: none was written
        reason = first_line(exc)
    raise NotRecorded(f"{what} was not recorded: the database did not take it ({reason}); {then}")


def for_chat(exc: BaseException) -> str:
    """A failure as a chat's user is told it: a database that is down is said without where it is
    (the server's log has that, for its operators)."""
    if isinstance(exc, PgciteError) and exc.kind == "unavailable":
        return "pgcite's database is not answering; try again in a moment"
    return first_line(exc)


def take(core: Pgcite, pending: chat_sql.Pending, then: str) -> chat_sql.Pending | None:
    """The delivery recorded as this server's before the platform has its response: it, held; None
    when it was taken before (a second delivery). NotRecorded when the database cannot take it."""

    def write() -> chat_sql.Pending | None:
        with core.writer() as store:
            return chat_sql.take(store, pending, LEASE)

    return record(write, "the question", then)


def problem(question: str, empty: str) -> str:
    """Why a question cannot be asked as it is, or "" (`empty`: the hint for no question at all)."""
    if not question:
        return empty
    if len(question) > MAX_QUESTION_CHARS:
        return (
            f"A question is at most {MAX_QUESTION_CHARS} characters (this one has {len(question)}); ask a shorter one."
        )
    try:
        check_text(question)
    except ValueError as exc:
        return f"The question cannot be read: {exc}."
    return ""


def answer(
    core: Pgcite, question: str, scope: Scope, origin: Origin, grow: Callable[[str], None], log: logging.Logger
) -> Answer | str:
    """Ask within the channel's sources, calling grow(text so far) as the answer is written: the
    finished (logged) answer, or one line saying why there is none (the log gets the details)."""
    written: list[str] = []
    try:
        for event in core.ask_stream(
            question, filters=SearchFilter(exclude_flagged=True, allowed_sources=scope.sources), origin=origin
        ):
            if isinstance(event, Delta):
                written.append(event.text)
                grow("".join(written))
            elif isinstance(event, Answer):
                return event
    except LeaseLost:
        raise
    except PgciteError as exc:
        log.info("%s: no answer in %s: %s", origin.channel, origin.key, first_line(exc))
        return for_chat(exc)
    except Exception as exc:  # the chat gets one line, the log the details
        log.exception("%s: answering in %s failed", origin.channel, origin.key)
        return f"pgcite could not answer ({exc.__class__.__name__}); the server log has the details"
    return STOPPED


class LeaseLost(Exception):
    """Another server took the delivery (this one's lease ran out while its answer waited or ran):
    that one answers it, and this one stops without a word to the chat."""


class Lease:
    """Renews a delivery's lease: called as the answer grows, once a third of it has passed, or at
    once with now=True. Raises LeaseLost when the delivery is no longer this server's."""

    def __init__(self, core: Pgcite, pending: chat_sql.Pending, seconds: float = LEASE) -> None:
        self.core, self.pending, self.seconds = core, pending, seconds
        self._renewed = time.monotonic()

    def __call__(self, now: bool = False) -> None:
        if now or time.monotonic() - self._renewed > self.seconds / 3:
            self._renewed = time.monotonic()
            with self.core.writer() as store:
                if not chat_sql.renew(store, self.pending, self.seconds):
                    raise LeaseLost(self.pending.event_id)


def finished(core: Pgcite, pending: chat_sql.Pending) -> None:
    with core.writer() as store:
        chat_sql.finish(store, pending)


class Sweeper:
    """A thread that, at start and then every `every` seconds, takes the platform's answers whose
    lease ran out (asked within `within`) and hands each to `resume`."""

    def __init__(
        self,
        core: Pgcite,
        platform: str,
        resume: Callable[[chat_sql.Pending], None],
        *,
        within: str,
        log: logging.Logger,
        every: float = SWEEP,
    ) -> None:
        self.core, self.platform, self.resume, self.within, self.every, self.log = (
            core,
            platform,
            resume,
            within,
            every,
            log,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pgcite-{platform}-sweep", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            try:
                with self.core.writer() as store:
                    stalled = chat_sql.take_stalled(store, self.platform, LEASE, self.within)
                for pending in stalled:
                    self.log.info("%s: finishing %s, left by a server that stopped", self.platform, pending.event_id)
                    self.resume(pending)
            except Exception as exc:  # noqa: BLE001 -- a sweep that fails is tried again
                self.log.warning("%s: a look for unfinished answers failed: %s", self.platform, first_line(exc))
            if self._stop.wait(self.every):
                return
