"""The answer log: every answer, with what it was built from, written to PostgreSQL by one
background thread on a connection of its own. An answer never fails with the log: when the queue is
full or the database refuses, the row is counted as dropped instead. Only the answer's id waits for
its row (a moment, at most WAIT_SECONDS), so that no answer gives an id that nothing can reopen."""

from __future__ import annotations

import hashlib
import logging
import queue
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pgcite.answer.flow import Answer
from pgcite.config import Settings
from pgcite.errors import PgciteError, first_line
from pgcite.store import Store, log_rows
from pgcite.store.log_rows import LogEntry
from pgcite.vocabulary import SearchFilter, SearchHit, wording_key

log = logging.getLogger("pgcite.log")


@dataclass(frozen=True)
class Origin:
    """Who asked: through which channel, with which API key (by name)."""

    channel: str
    key: str | None = None


def _section(hit: SearchHit, number: int | None, cited: bool, reason: str = "") -> dict:
    return {
        "number": number,
        "cited": cited,
        "id": hit.id,
        "source": hit.source,
        "path": hit.path,
        "heading": hit.heading,
        "breadcrumb": hit.breadcrumb,
        "url": hit.url,
        # Its text as cited: a later ingest that changes it marks the answer stale (log_rows.mark_stale).
        "content_md5": hashlib.md5(hit.content.encode(), usedforsecurity=False).hexdigest(),
        "score": round(hit.score, 4),
        "reason": reason,
    }


def _row(
    question: str, origin: Origin, filters: SearchFilter, seconds: float, retrieved: list[dict], **answer
) -> LogEntry:
    scope = (filters.source,) if filters.source else filters.allowed_sources
    return LogEntry(
        id=str(uuid.uuid4()),
        asked_at=datetime.now(UTC),
        channel=origin.channel,
        key_name=origin.key,
        scope=scope,
        question=question,
        source=filters.source,
        path=filters.path_prefix,
        version=filters.version,
        retrieved=retrieved,
        latency_ms=round(seconds * 1000),
        **answer,
    )


def entry_of(answer: Answer, origin: Origin, filters: SearchFilter, seconds: float) -> LogEntry:
    """The log row of a finished answer, with a new id (the answer's once the row is written)."""
    cited = set(answer.citations)
    retrieved = [_section(p.hit, p.number, p.number in cited) for p in answer.sources] + [
        _section(d.hit, None, False, d.reason) for d in answer.dropped
    ]
    entry = _row(
        answer.question,
        origin,
        filters,
        seconds,
        retrieved,
        answer=answer.text,
        refused=answer.refused,
        checks=answer.checks.as_json(),
        generator=answer.generator,
        note=answer.note,
    )
    return entry


SEARCH = "search"  # the generator column of a logged search: sections returned, no answer written


def search_entry(
    question: str, hits: Sequence[SearchHit], origin: Origin, filters: SearchFilter, seconds: float
) -> LogEntry:
    """The log row of a search (an agent's search_docs): what it returned, nothing refused."""
    retrieved = [_section(h, i, False) for i, h in enumerate(hits, 1)]
    return _row(
        question,
        origin,
        filters,
        seconds,
        retrieved,
        answer="",
        refused=False,
        checks={},
        generator=SEARCH,
        note=f"{len(hits)} sections returned",
    )


@dataclass
class _Awaited:
    settled: threading.Event = field(default_factory=threading.Event)
    written: bool = False


class AnswerLog:
    QUEUE_SIZE = 1000  # answers waiting to be written; more are dropped (and counted)
    BATCH = 100
    PRUNE_EVERY = 3600.0  # seconds between deletions of rows past the retention
    WAIT_SECONDS = 2.0  # the longest an answer waits for its row before it goes without an id

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._queue: queue.Queue[LogEntry | None] = queue.Queue(self.QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0  # answers not logged: the queue was full or the database failed
        self.last_error = ""
        self._awaited: dict[str, _Awaited] = {}  # rows an answer waits for, by id

    def record(self, entry: LogEntry) -> None:
        """Queue a row to be written, and go on."""
        self._put(entry)

    def written(self, entry: LogEntry) -> str:
        """Queue a row and wait for it: "" once it is written, else why it was not (the database
        failed, the queue was full, or it took longer than WAIT_SECONDS; the row may still come)."""
        awaited = _Awaited()
        with self._lock:
            self._awaited[entry.id] = awaited
        try:
            if not self._put(entry):
                return self.last_error
            if not awaited.settled.wait(self.WAIT_SECONDS):
                return f"the answer log did not write it within {self.WAIT_SECONDS:g} s"
            return "" if awaited.written else self.last_error
        finally:
            with self._lock:
                self._awaited.pop(entry.id, None)

    def record_answer(self, answer: Answer, entry: LogEntry) -> None:
        """Write an answer's row: the answer gets its id once it is written, else a note of why not."""
        if why := self.written(entry):
            note = f"not logged, so it has no id ({why})"
            answer.note = f"{answer.note}; {note}" if answer.note else note
        else:
            answer.id = entry.id

    def _put(self, entry: LogEntry) -> bool:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pgcite-answer-log", daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(entry)
            return True
        except queue.Full:
            self._drop(1, "more answers waiting than the queue holds")
            return False

    def _settle(self, entries: list[LogEntry], written: bool) -> None:
        with self._lock:
            for entry in entries:
                if awaited := self._awaited.get(entry.id):
                    awaited.written = written
                    awaited.settled.set()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every recorded answer is written (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        self.flush(timeout)
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
        self._thread = None

    def _drop(self, count: int, why: str) -> None:
        with self._lock:
            self.dropped += count
            self.last_error = why
        log.warning("answer log: %d answers not logged: %s", count, why)

    def _run(self) -> None:
        store: Store | None = None
        next_prune = 0.0
        stopping = False
        while not stopping:
            batch = [self._queue.get()]
            while len(batch) < self.BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stopping = None in batch
            entries = [e for e in batch if e is not None]
            try:
                if entries:
                    store = store or Store.open(self._settings)
                    if time.monotonic() >= next_prune:
                        log_rows.prune(store, self._settings.answer_log_days)
                        next_prune = time.monotonic() + self.PRUNE_EVERY
                    log_rows.insert(store, entries)
                self._settle(entries, True)
            except Exception as exc:  # noqa: BLE001 -- the log must never take the server down with it
                self._drop(len(entries), first_line(exc))
                self._settle(entries, False)
                if store is not None:
                    store.close()
                store = None
            finally:
                for _ in batch:
                    self._queue.task_done()
        if store is not None:
            store.close()


_SINCE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """`7d`, `12h`, `30m`, `2w`, or a date or time in ISO form (UTC unless it says)."""
    if text is None or not text.strip():
        return None
    now = now or datetime.now(UTC)
    try:
        if match := _SINCE.match(text):
            return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        when = datetime.fromisoformat(text.strip())
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # OverflowError: a span past the calendar (99999999999d)
        raise PgciteError(
            f"--since takes a span such as 7d, 12h, 30m or 2w, or a date such as 2026-11-01 (got {text[:40]!r})"
        ) from None


# A thumbs-down whose comment says this marks a question the docs do not answer.
NOT_IN_DOCS = re.compile(
    r"\bnot (?:in|covered (?:in|by)|found in) the (?:docs|documentation|documents)\b"
    r"|\bnot documented\b|\bundocumented\b",
    re.I,
)


def eval_rows(entries: Sequence[LogEntry]) -> list[dict]:
    """Rows `pgcite eval` reads, from logged answers (newest first; a question asked again counts
    once, by its newest verdict): an answer marked up, gold the sections it cited; a refusal the
    team confirmed, or an answer marked down as not in the docs, unanswerable."""
    rows, seen = [], set()
    for e in entries:
        key = wording_key(e.question)
        if key in seen:
            continue
        row: dict[str, object]
        if e.rating == "up" and not e.refused and e.stale_at is None:  # a stale answer's sections changed
            gold = [
                {"path": s["path"], **({"heading": s["heading"]} if s["heading"] else {})}
                for s in e.retrieved
                if s["cited"]
            ]
            if not gold:
                continue
            row = {
                "id": f"log-{e.id[:8]}",
                "question": e.question,
                "gold": list({repr(g): g for g in gold}.values()),
                "answer": e.answer,
            }
        elif (e.refused and e.confirmed) or (e.rating == "down" and NOT_IN_DOCS.search(e.comment or "")):
            row = {"id": f"log-{e.id[:8]}", "question": e.question, "answerable": False}
        else:
            continue
        seen.add(key)
        rows.append(row)
    return rows
