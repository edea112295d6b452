"""A corpus for scale that behaves like real docs (issue 16), built without the model.

The base: the four shared corpora (Anthropic, Marten, FastAPI, Docusaurus) ingested once with the
bundled model into a home kept under build/scale-base (about 10,500 chunks; 8 minutes the first
time, seconds after). `grow` then fills source `scale` to a given number of chunks:

- the Anthropic chunks as they are (real text, real vectors, original paths), so the Anthropic dev
  questions keep their gold sections in the index;
- synthetic chunks, each recombined from the paragraphs and sentences of one real chunk and 1 to 3
  of its 8 nearest real neighbours (any corpus), shuffled, about as long as the first one. Their
  words are real docs' words in real proportions; no two are copies. Its vector is the normalised
  mean of the vectors of the chunks its text came from, weighted by how much text each gave, plus
  Gaussian noise (cosine about 0.94 to that mean), so synthetic chunks sit among the real ones of
  their topic as near neighbours do, not on top of each other.

    .venv/bin/python bench/scale_corpus.py CHUNKS   (builds and reports; search_scale.py uses grow)
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pgcite.config import Settings
from pgcite.embedding.models import LocalEmbedder
from pgcite.ingest.flow import ingest, open_location
from pgcite.store import Store
from scratch import CORPORA

ROOT = Path(__file__).resolve().parents[1]
BASE_HOME = ROOT / "build" / "scale-base"
# (source, folder, site) as .ci/run ingests them
BASE_SOURCES = [
    ("anthropic", CORPORA / "anthropic-docs" / "pages", None),
    ("marten", CORPORA / "marten-docs", "vitepress"),
    ("fastapi", CORPORA / "fastapi-docs" / "docs" / "en", None),
    ("docusaurus", CORPORA / "docusaurus-docs" / "website", None),
]
SOURCE = "scale"
NEIGHBOURS = 8
NOISE = 0.35  # |noise| relative to the unit mean: cosine 1 / sqrt(1 + 0.35^2) = 0.94
CHUNKS_PER_DOCUMENT = 10
_PIECES = re.compile(r"\n\s*\n|(?<=[.!?])\s+(?=[A-Z])")


def base_settings() -> Settings:
    BASE_HOME.mkdir(parents=True, exist_ok=True)
    BASE_HOME.chmod(0o755)  # the embedded server may run as another user
    return Settings(home=BASE_HOME)


def ensure_base(settings: Settings) -> None:
    """Ingest the shared corpora into the base home (unchanged files are skipped on a rerun)."""
    missing = [folder for _, folder, _ in BASE_SOURCES if not folder.is_dir()]
    if missing:
        raise SystemExit(f"skipped: {missing[0]} not found (the corpora live in ../shared/corpora beside the repo)")
    embedder = LocalEmbedder()
    with Store.open(settings) as store:
        for name, folder, site in BASE_SOURCES:
            report = ingest(open_location(str(folder), settings), source_name=name, base_url="", settings=settings,
                            store=store, embedder=embedder, site=site)
            print(f"base {name}: {report.new + report.changed + report.unchanged} files, "
                  f"{report.chunks_embedded} chunks embedded ({report.seconds:.0f} s)", flush=True)


@dataclass
class _Real:
    ids: list[str]
    titles: list[str]
    headings: list[str]
    tokens: np.ndarray
    lengths: np.ndarray
    pieces: list[list[str]]
    vectors: np.ndarray  # normalised, one row per chunk
    neighbours: np.ndarray  # the NEIGHBOURS nearest other chunks of each


def _load_real(store: Store) -> _Real:
    rows = store.conn.execute(
        "SELECT c.id, d.title, c.heading, c.tokens, c.content, c.embedding::real[] FROM chunks c "
        "JOIN documents d ON d.id = c.document_id WHERE c.source <> %s ORDER BY c.id", (SOURCE,)).fetchall()
    vectors = np.asarray([r[5] for r in rows], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return _Real(
        ids=[r[0] for r in rows], titles=[r[1] for r in rows], headings=[r[2] for r in rows],
        tokens=np.asarray([r[3] for r in rows]), lengths=np.asarray([len(r[4]) for r in rows]),
        pieces=[[p.strip() for p in _PIECES.split(r[4]) if len(p.split()) >= 3] or [r[4]] for r in rows],
        vectors=vectors, neighbours=nearest(vectors))


def nearest(vectors: np.ndarray) -> np.ndarray:
    """The NEIGHBOURS nearest other rows of each row of unit vectors."""
    neighbours = np.empty((len(vectors), NEIGHBOURS), dtype=np.int64)
    for start in range(0, len(vectors), 1024):  # in blocks: the full similarity matrix is 10,500 squared
        sims = vectors[start:start + 1024] @ vectors.T
        for i in range(sims.shape[0]):
            sims[i, start + i] = -2  # not its own neighbour
        neighbours[start:start + 1024] = np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
    return neighbours


def with_noise(means: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit rows near the given unit means (cosine about 0.94), so derived vectors sit among those of
    their topic as near neighbours do, not on top of each other."""
    noisy = means + rng.normal(0, NOISE / np.sqrt(means.shape[1]), means.shape).astype(np.float32)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def _synthetic(real: _Real, rng: np.random.Generator) -> tuple[str, str, str, int, np.ndarray]:
    """One recombined chunk: title, heading, content, tokens, vector."""
    seed = int(rng.integers(len(real.ids)))
    group = [seed, *rng.choice(real.neighbours[seed], size=int(rng.integers(1, 4)), replace=False)]
    pieces = [(p, c) for c in group for p in real.pieces[c]]
    order = rng.permutation(len(pieces))
    target = real.lengths[seed] * rng.uniform(0.7, 1.3)
    taken: list[tuple[str, int]] = []
    length = 0
    for i in order:
        taken.append(pieces[i])
        length += len(pieces[i][0]) + 2
        if length >= target:
            break
    content = "\n\n".join(p for p, _ in taken)
    weights = np.zeros(len(real.ids), dtype=np.float32)
    for p, c in taken:
        weights[c] += len(p)
    used = np.nonzero(weights)[0]
    mean = weights[used] @ real.vectors[used]
    mean /= np.linalg.norm(mean)
    vector = with_noise(mean[None, :], rng)[0]
    tokens = max(1, round(int(real.tokens[seed]) * len(content) / max(1, int(real.lengths[seed]))))
    return real.titles[seed], real.headings[seed], content, tokens, vector


def grow(store: Store, chunks: int, seed: int = 0) -> float:
    """Fill source `scale` to `chunks` chunks (it starts as a copy of the Anthropic chunks; one
    larger than asked is built again); returns the seconds it took. Deterministic for a seed and
    the sizes asked for in turn."""
    started = time.perf_counter()
    conn = store.conn
    if conn.execute("SELECT count(*) FROM chunks WHERE source = %s", (SOURCE,)).fetchone()[0] > chunks:
        store.remove_source(SOURCE)
    if conn.execute("SELECT count(*) FROM sources WHERE name = %s", (SOURCE,)).fetchone()[0] == 0:
        with conn.transaction():
            conn.execute("INSERT INTO sources (name, location, site) VALUES (%s, 'bench/scale_corpus.py', 'plain')",
                         (SOURCE,))
            conn.execute("INSERT INTO documents (source, path, title, url, checksum, version) SELECT %s, path, title, "
                         "url, checksum, version FROM documents WHERE source = 'anthropic'", (SOURCE,))
            conn.execute(
                """INSERT INTO chunks (id, document_id, source, path, version, ord, heading, heading_path, breadcrumb,
                                       anchor, url, content, tokens, embed_hash, flags, embedding)
                   SELECT %(s)s || substr(c.id, length('anthropic') + 1), copy.id, %(s)s, c.path, c.version, c.ord,
                          c.heading, c.heading_path, c.breadcrumb, c.anchor, c.url, c.content, c.tokens,
                          c.embed_hash, c.flags, c.embedding
                   FROM chunks c JOIN documents copy ON copy.source = %(s)s AND copy.path = c.path
                   WHERE c.source = 'anthropic'""", {"s": SOURCE})
    have = conn.execute("SELECT count(*) FROM chunks WHERE source = %s", (SOURCE,)).fetchone()[0]
    if have >= chunks:
        return 0.0
    real = _load_real(store)
    rng = np.random.default_rng([seed, have])
    first_document = conn.execute("SELECT count(*) FROM documents WHERE source = %s AND path LIKE 'synthetic/%%'",
                                  (SOURCE,)).fetchone()[0]
    store.drop_vector_index()
    with conn.transaction():
        documents = -(-(chunks - have) // CHUNKS_PER_DOCUMENT)
        with conn.cursor().copy("COPY documents (source, path, title, checksum) FROM STDIN") as copy:
            for n in range(first_document, first_document + documents):
                copy.write_row((SOURCE, f"synthetic/{n:07d}.md", f"Synthetic {n}", f"synthetic-{n}"))
        ids = dict(conn.execute("SELECT path, id FROM documents WHERE source = %s AND path LIKE 'synthetic/%%'",
                                (SOURCE,)).fetchall())
        with conn.cursor().copy(
                "COPY chunks (id, document_id, source, path, ord, heading, heading_path, breadcrumb, content, tokens, "
                "embed_hash, embedding) FROM STDIN") as copy:
            for n in range(chunks - have):
                title, heading, content, tokens, vector = _synthetic(real, rng)
                path = f"synthetic/{first_document + n // CHUNKS_PER_DOCUMENT:07d}.md"
                ord_ = n % CHUNKS_PER_DOCUMENT
                breadcrumb = f"{title} > {heading}" if heading else title
                copy.write_row((f"{SOURCE}:{path}#{ord_}", ids[path], SOURCE, path, ord_, heading or title,
                                [title, heading] if heading else [title], breadcrumb, content, tokens,
                                hashlib.sha256(content.encode()).digest(),
                                "[" + ",".join(f"{x:.6f}" for x in vector) + "]"))
    # The page prior's vectors, as Store.replace_document keeps them (COPY bypasses it).
    conn.execute("UPDATE documents d SET page_embedding = p.mean FROM (SELECT document_id, avg(embedding) AS mean "
                 "FROM chunks WHERE source = %s GROUP BY document_id) p WHERE p.document_id = d.id", (SOURCE,))
    store.refresh_indexes()
    store.refresh_statistics()  # written with COPY here, not through the Store's writes that flag them stale
    conn.execute("VACUUM ANALYZE chunks")  # the rows of a larger size removed before are dead
    return time.perf_counter() - started


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print(__doc__)
        return 2
    settings = base_settings()
    ensure_base(settings)
    with Store.open(settings) as store:
        seconds = grow(store, int(sys.argv[1]))
        rows = store.conn.execute("SELECT count(*), count(DISTINCT embed_hash), avg(tokens) FROM chunks "
                                  "WHERE source = %s", (SOURCE,)).fetchone()
    print(f"{SOURCE}: {rows[0]} chunks ({rows[1]} distinct texts), {float(rows[2]):.0f} tokens on average; "
          f"grown in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
