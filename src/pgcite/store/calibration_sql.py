"""What a source's calibration reads (calibration.py): its headings, and the best cosine score of
each of many questions against its chunks; and where the result is kept (sources.calibration)."""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from pgcite.store import search_sql
from pgcite.store.scalar import scalar

# What a source answers from by default: its default version, in its default language (a site with
# translations is calibrated on the pages most questions read).
_DEFAULT = (
    "{c}in_default_version AND {c}language = coalesce(nullif("
    "(SELECT s.default_language FROM sources s WHERE s.name = {c}source), ''), {c}language)"
)


def chunk_count(conn: psycopg.Connection, source: str) -> int:
    return scalar(conn, f"SELECT count(*) FROM chunks WHERE source = %s AND {_DEFAULT.format(c='')}", (source,))


def sample_headings(conn: psycopg.Connection, source: str, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` (page title, heading) pairs of the source's sections, in a stable order
    that spreads them over the pages (md5 of the section, not the first pages)."""
    rows = conn.execute(
        f"""SELECT title, heading FROM (
               SELECT DISTINCT ON (c.document_id, c.heading_path) d.title, c.heading,
                      md5(d.path || '#' || array_to_string(c.heading_path, '>')) AS key
               FROM chunks c JOIN documents d ON d.id = c.document_id
               WHERE c.source = %s AND {_DEFAULT.format(c="c.")}
                     AND c.heading <> '' AND c.heading <> d.title
               ORDER BY c.document_id, c.heading_path) s
           ORDER BY key LIMIT %s""",
        (source, limit),
    ).fetchall()
    return [(title, heading) for title, heading in rows]


def best_scores(conn: psycopg.Connection, vectors: np.ndarray, source: str) -> np.ndarray:
    """For each vector, the cosine similarity of the source's closest chunk (default version)."""
    search_sql.prepare(conn)  # iterative scans: a source that is 1% of the index still gets its rows
    scores = []
    # A statistic of hundreds of questions needs no search's recall: 100 candidates, not 800.
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET LOCAL hnsw.ef_search = 100")
        for vector in vectors:
            # The best of a few, as the search finds them (relaxed order is not quite sorted).
            cur.execute(
                f"""SELECT max(score) FROM (
                               SELECT 1 - (embedding <=> %(q)s) AS score FROM chunks
                               WHERE source = %(source)s AND {_DEFAULT.format(c="")}
                               ORDER BY embedding <=> %(q)s LIMIT 5) best""",
                {"q": np.asarray(vector, dtype=np.float32), "source": source},
            )
            row = cur.fetchone()
            scores.append(float(row[0]) if row and row[0] is not None else 0.0)
    return np.array(scores, dtype=np.float64)


def save(conn: psycopg.Connection, source: str, calibration: dict | None) -> None:
    conn.execute(
        "UPDATE sources SET calibration = %s WHERE name = %s", (Jsonb(calibration) if calibration else None, source)
    )


def load(conn: psycopg.Connection, source: str) -> dict | None:
    row = conn.execute("SELECT calibration FROM sources WHERE name = %s", (source,)).fetchone()
    return row[0] if row else None
