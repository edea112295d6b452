"""The SQL of syncs (migration 11): when each source was last synced, how long it took and what
changed, and how often the server syncs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from typing import Protocol

from psycopg.types.json import Jsonb

from pgcite.store.database import Store

PATHS_KEPT = 50  # changed paths recorded per kind; the counts are always whole


class PassReport(Protocol):
    """What a pass's record reads of its report (the ingest's IngestReport), so the store needs
    nothing of the ingest. Read-only, so that any report with these fields fits."""

    @property
    def new(self) -> int: ...
    @property
    def changed(self) -> int: ...
    @property
    def removed(self) -> int: ...
    @property
    def unchanged(self) -> int: ...
    @property
    def rerouted(self) -> int: ...
    @property
    def skipped(self) -> Sized: ...
    @property
    def paths(self) -> Mapping[str, Sequence[str]]: ...


def record(
    store: Store, name: str, *, trigger: str, seconds: float, report: PassReport | None = None, error: str = ""
) -> None:
    """The outcome of a pass over source `name` (a failed one has `error` and no report)."""
    last: dict = {"trigger": trigger, "seconds": round(seconds, 3), "error": error}
    if report is not None:
        last |= {
            "new": report.new,
            "changed": report.changed,
            "removed": report.removed,
            "unchanged": report.unchanged,
            "rerouted": report.rerouted,
            "skipped": len(report.skipped),
            "paths": {kind: paths[:PATHS_KEPT] for kind, paths in report.paths.items()},
        }
    store.conn.execute("UPDATE sources SET synced_at = now(), last_sync = %s WHERE name = %s", (Jsonb(last), name))


def set_interval(store: Store, name: str, seconds: int | None) -> bool:
    """Sync source `name` every `seconds` in the server (None: never); False if there is no such source."""
    return (
        store.conn.execute(
            "UPDATE sources SET sync_interval = make_interval(secs => %s) WHERE name = %s", (seconds, name)
        ).rowcount
        > 0
    )


def due(store: Store) -> list[str]:
    """The scheduled sources whose interval has passed since their last sync and that no sync waits
    for or runs on (on any server), the longest waiting first."""
    rows = store.conn.execute(
        "SELECT name FROM sources WHERE sync_interval IS NOT NULL AND (synced_at IS NULL OR synced_at + sync_interval "
        "<= now()) AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.source = sources.name AND jobs.kind = 'sync' "
        "AND jobs.state IN ('queued', 'running')) ORDER BY synced_at NULLS FIRST"
    )
    return [name for (name,) in rows]
