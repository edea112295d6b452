"""Whether the database answers, as a long-running process (the server) learns it: the first failed
connection starts an outage, logged once; until a watcher thread connects again, every request fails
at once with 503 and Retry-After instead of waiting out the pool. On the embedded database the
watcher also starts PostgreSQL again when its process died."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.errors import StoreError, first_line
from pgcite.store import server

log = logging.getLogger("pgcite.store.health")

RETRY_AFTER = 2  # seconds a client is told to wait during an outage
PROBE_EVERY = 1.0  # seconds between the watcher's attempts


class DatabaseDown(StoreError):
    """Raised at once while an outage lasts."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.retry_after = RETRY_AFTER


class Health:
    def __init__(self, settings: Settings, dsn: str, password: str | None, on_back: Callable[[], object]) -> None:
        self._settings, self._dsn, self._password, self._on_back = settings, dsn, password, on_back
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self.reason = ""

    def check(self) -> None:
        """Fail now, without a connection attempt, while the database is known to be down."""
        if (since := self.down_since) is not None:
            raise DatabaseDown(
                f"database unavailable for {time.monotonic() - since:.0f} s ({self.reason}); retry in {RETRY_AFTER} s"
            )

    def failed(self, exc: BaseException) -> None:
        """A connection or query failed for the database's sake: the outage starts (once)."""
        with self._lock:
            if self.down_since is not None:
                return
            self.down_since, self.reason = time.monotonic(), first_line(exc)[:200]
        log.warning("database unavailable: %s; requests get 503 until it answers again", self.reason)
        threading.Thread(target=self._watch, name="pgcite-db-watch", daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(PROBE_EVERY)
            try:
                if not self._settings.database_url:  # the embedded server: start it again if it died
                    server.start(self._settings.home)
                psycopg.connect(make_conninfo(self._dsn, password=self._password), connect_timeout=2).close()
            except (psycopg.Error, StoreError, OSError):
                continue
            self._on_back()
            since = self.down_since or time.monotonic()
            self.down_since = None
            log.warning("database available again after %.0f s", time.monotonic() - since)
            return
