"""Vectors at a million (issue 16): HNSW build time and size for `vector` and `halfvec`, search
latency and recall@10 against exact search at several `hnsw.ef_search` values, and filtered
searches that must still return a full k.

The vectors are derived from the real chunk vectors of the four shared corpora (the base home of
bench/scale_corpus.py), as that script derives its synthetic chunks' vectors: each is the weighted
mean of a real chunk's vector and 1 to 3 of its 8 nearest neighbours, plus noise, so they cluster
by topic as a docs site's do. Only about 8,400 real vectors stand behind a million derived ones, so
each sits among a hundred or so near-copies: a harder case for the graph than a million distinct
texts, where recall is concerned. Two sources of 1% of the rows each are filtered on:
- `random`: rows chosen at random, unrelated to topic;
- `topical`: rows derived from Marten's chunks only, asked the questions of the other corpora (the
  hard case: the nearest matching rows are far down the graph).
Every other row is in source `rest`. The queries are the eval questions of the four corpora,
embedded with the bundled model; exact answers come from NumPy over all rows in float32.

Each search is the vector side of pgcite's own: `ORDER BY embedding <=> q LIMIT 10` with
`hnsw.iterative_scan = relaxed_order`, planned for its own values as pgcite's are (the plan is
printed), one warm-up round, then timed. Besides recall@10 it prints how much further the 10th row
found is than the true 10th: among near-ties a miss costs recall but hardly any distance. The
baseline in the same run is exact search (no index) on a few questions.

The tables (bench_vectors_vector, bench_vectors_halfvec) stay in the base home; a run with another
row count, or --rebuild, loads them again, and an index is built again when its m or
ef_construction differs from the last build's. Build figures are kept beside them.

Usage: .venv/bin/python bench/vector_scale.py [--rows N] [--rebuild] [--types vector,halfvec]
           [--m 16] [--ef-construction 64] [--workers 1] [--memory 4GB]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from psycopg import sql

from pgcite.embedding.models import LocalEmbedder
from pgcite.evaluation.questions import load_questions
from pgcite.store import Store
from scale_corpus import BASE_HOME, base_settings, ensure_base, nearest, with_noise
from scratch import ANTHROPIC

ROOT = Path(__file__).resolve().parents[1]
QUESTION_SETS = {"anthropic": ANTHROPIC / "questions-dev.jsonl", "marten": ROOT / "eval" / "marten.jsonl",
                 "fastapi": ROOT / "eval" / "fastapi.jsonl", "docusaurus": ROOT / "eval" / "docusaurus.jsonl"}
TYPES = ("vector", "halfvec")
EF_SEARCH = (40, 100, 200, 400, 800, 1000)  # pgvector allows up to 1000
K = 10
FILTERED = 0.01  # each filtered source's share of the rows
EXACT_QUESTIONS = 10  # the baseline's sample: an exact scan of a million rows takes seconds


def derive(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`rows` unit vectors derived from the real ones, and the source name of each."""
    with Store.open(base_settings()) as store:
        found = store.conn.execute("SELECT source, embedding::real[] FROM chunks WHERE source <> 'scale' "
                                   "ORDER BY id").fetchall()
    real = np.asarray([r[1] for r in found], dtype=np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    real_source = np.asarray([r[0] for r in found])
    neighbours = nearest(real)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(len(real), size=rows)
    out = np.empty((rows, real.shape[1]), dtype=np.float32)
    for start in range(0, rows, 100_000):
        part = seeds[start:start + 100_000]
        # 1 to 3 of the NEIGHBOURS nearest, at random, each weighted as a share of text would be
        picked = neighbours[part[:, None], rng.permuted(np.tile(np.arange(neighbours.shape[1]), (len(part), 1)),
                                                        axis=1)[:, :3]]
        weights = rng.uniform(0.2, 1.0, (len(part), 4)).astype(np.float32)
        weights[:, 1:] *= np.arange(3) < rng.integers(1, 4, (len(part), 1))
        means = weights[:, :1] * real[part] + np.einsum("rn,rnd->rd", weights[:, 1:], real[picked])
        means /= np.linalg.norm(means, axis=1, keepdims=True)
        out[start:start + len(part)] = with_noise(means, rng)
    sources = np.full(rows, "rest", dtype=object)
    share = int(rows * FILTERED)
    sources[rng.choice(np.flatnonzero(real_source[seeds] == "marten"), share, replace=False)] = "topical"
    sources[rng.choice(np.flatnonzero(sources == "rest"), share, replace=False)] = "random"
    return out, sources


def table(kind: str) -> sql.Identifier:
    return sql.Identifier(f"bench_vectors_{kind}")


def load(conn, vectors: np.ndarray, sources: np.ndarray) -> float:
    """Both tables, with a B-tree index on source as pgcite's chunks table has; returns seconds."""
    dim = vectors.shape[1]
    for kind in TYPES:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table(kind)))
        conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, source text NOT NULL, embedding {}({}) NOT NULL)")
                     .format(table(kind), sql.SQL(kind), sql.Literal(dim)))
    started = time.perf_counter()
    with conn.cursor().copy(sql.SQL("COPY {} (id, source, embedding) FROM STDIN WITH (FORMAT BINARY)")
                            .format(table("vector"))) as copy:
        copy.set_types(["int4", "text", "vector"])
        for i, (vector, source) in enumerate(zip(vectors, sources)):
            copy.write_row((i, source, vector))
    conn.execute(sql.SQL("INSERT INTO {} SELECT id, source, embedding::halfvec FROM {}")
                 .format(table("halfvec"), table("vector")))
    seconds = time.perf_counter() - started
    for kind in TYPES:
        conn.execute(sql.SQL("CREATE INDEX ON {} (source)").format(table(kind)))
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table(kind)))
    return seconds


def build_index(conn, kind: str, m: int, ef_construction: int, workers: int, memory: str) -> dict:
    """Build one HNSW index; its seconds, size, and pgvector's notices (it says when the graph
    outgrows maintenance_work_mem and the build slows)."""
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
    name = f"bench_vectors_{kind}_hnsw"
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
    notices: list[str] = []
    handler = lambda diagnostic: notices.append(diagnostic.message_primary or "")  # noqa: E731
    conn.add_notice_handler(handler)
    started = time.perf_counter()
    conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})").format(
        sql.Identifier(name), table(kind), sql.SQL(f"{kind}_cosine_ops"), sql.Literal(m), sql.Literal(ef_construction)))
    conn.remove_notice_handler(handler)
    figures = {"m": m, "ef_construction": ef_construction, "workers": workers, "maintenance_work_mem": memory,
               "build_s": time.perf_counter() - started, "notices": notices,
               "index_bytes": conn.execute("SELECT pg_relation_size(%s)", (name,)).fetchone()[0],
               "table_bytes": conn.execute("SELECT pg_table_size(%s)", (f"bench_vectors_{kind}",)).fetchone()[0]}
    print(f"built {kind}: {figures['build_s']:.0f} s, index {figures['index_bytes'] / 2**20:.0f} MB", flush=True)
    return figures


def exact(vectors: np.ndarray, mask: np.ndarray | None, queries: np.ndarray) -> list[tuple[set[int], float]]:
    """For each query: the ids of its K nearest rows (within the mask) and the K-th one's distance."""
    rows = np.flatnonzero(mask) if mask is not None else np.arange(len(vectors))
    out = []
    for q in queries:
        sims = vectors[rows] @ q
        top = np.argpartition(-sims, K)[:K]
        out.append((set(rows[top].tolist()), 1 - float(sims[top].min())))
    return out


def _query(kind: str, source: str | None) -> sql.Composed:
    where = sql.SQL("WHERE source = {} ").format(sql.Literal(source)) if source else sql.SQL("")
    return sql.SQL("SELECT id FROM {} {}ORDER BY embedding <=> %s::{} LIMIT {}").format(
        table(kind), where, sql.SQL(kind), sql.Literal(K))


def plan(conn, kind: str, source: str | None, query: np.ndarray) -> str:
    """How PostgreSQL runs the search: through the HNSW index, or exactly over the filter's rows."""
    text = " ".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + _query(kind, source), (query,)))
    return "HNSW" if "hnsw" in text else "exact"


def timed(conn, kind: str, queries: np.ndarray, source: str | None, rounds: int = 2) -> tuple[list[float], list[list[int]]]:
    """Seconds per search (after a warm-up round) and the ids each found. Never prepared: planned
    for each question's values, as pgcite's searches are (plan_cache_mode = force_custom_plan)."""
    query = _query(kind, source)
    times, found = [], []
    for round_ in range(rounds):
        for q in queries:
            started = time.perf_counter()
            ids = [r[0] for r in conn.execute(query, (q,), prepare=False).fetchall()]
            if round_:
                times.append(time.perf_counter() - started)
            else:
                found.append(ids)
    return times, found


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--workers", type=int, default=1, help="max_parallel_maintenance_workers for the build")
    parser.add_argument("--memory", default="4GB", help="maintenance_work_mem for the build")
    parser.add_argument("--m", type=int, default=16, help="HNSW m (pgvector's default 16)")
    parser.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction (default 64)")
    parser.add_argument("--types", default=",".join(TYPES), help="vector, halfvec or both")
    args = parser.parse_args()
    types = [t for t in args.types.split(",") if t in TYPES]
    settings = base_settings()
    ensure_base(settings)
    questions = [q for path in QUESTION_SETS.values() for q in load_questions(path)]
    asked_of = [name for name, path in QUESTION_SETS.items() for _ in load_questions(path)]
    embedder = LocalEmbedder()
    queries = np.asarray([embedder.embed_query(q.question) for q in questions], dtype=np.float32)
    print(f"deriving {args.rows:,} vectors ...", flush=True)
    vectors, sources = derive(args.rows)
    figures_file = BASE_HOME / "vector-scale-build.json"
    with Store.open(settings) as store:
        conn = store.conn
        figures = json.loads(figures_file.read_text()) if figures_file.exists() else {}
        loaded = all(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"bench_vectors_{kind}",)).fetchone()[0]
                     for kind in TYPES)
        if args.rebuild or not loaded or figures.get("rows") != args.rows:
            figures = {"rows": args.rows, "load_s": load(conn, vectors, sources)}
        for kind in types:
            wanted = {"m": args.m, "ef_construction": args.ef_construction}
            if args.rebuild or any(figures.get(kind, {}).get(key) != value for key, value in wanted.items()):
                figures[kind] = build_index(conn, kind, args.m, args.ef_construction, args.workers, args.memory)
            figures_file.write_text(json.dumps(figures, indent=1))
        print(f"\n{args.rows:,} x {vectors.shape[1]}, loaded in {figures['load_s']:.0f} s")
        print(f"{'type':>8} {'m':>3} {'ef_constr':>9} {'workers':>7} {'memory':>7} {'build s':>8} {'index MB':>9} "
              f"{'table MB':>9}  notices")
        for kind in types:
            f = figures[kind]
            print(f"{kind:>8} {f['m']:>3} {f['ef_construction']:>9} {f['workers']:>7} {f['maintenance_work_mem']:>7} "
                  f"{f['build_s']:8.0f} {f['index_bytes'] / 2**20:9.0f} {f['table_bytes'] / 2**20:9.0f}  "
                  f"{'; '.join(f['notices']) or '-'}")

        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        off_topic = np.asarray([name != "marten" for name in asked_of])
        cases = [("all", None, queries, exact(vectors, None, queries)),
                 ("random", "random", queries, exact(vectors, sources == "random", queries)),
                 ("topical", "topical", queries[off_topic], exact(vectors, sources == "topical", queries[off_topic]))]
        conn.execute("SET enable_indexscan = off")
        base_times, _ = timed(conn, "vector", queries[:EXACT_QUESTIONS], None)
        conn.execute("RESET enable_indexscan")
        base = statistics.median(base_times)
        print(f"\nexact search (no index, {EXACT_QUESTIONS} questions): p50 {base:.3f} s\n")
        print(f"{len(queries)} questions ({int(off_topic.sum())} off-topic for `topical`), k = {K}; seconds per "
              "search; recall@10 against exact; 10th dist: how much further the 10th row found is than the true 10th "
              "(mean); full k: searches that returned all 10; plan: through the HNSW index, or exact (the filter's rows "
              "through the source index, sorted by distance), as PostgreSQL chose at that ef_search\n")
        print(f"{'filter':>8} {'type':>8} {'ef_search':>9} {'p50':>7} {'p95':>7} {'exact/p50':>9} {'recall@10':>9} "
              f"{'10th dist':>9} {'full k':>8}  plan")
        for name, source, asked, truth in cases:
            for kind in types:
                for ef in EF_SEARCH:
                    conn.execute(f"SET hnsw.ef_search = {ef}")
                    times, found = timed(conn, kind, asked, source)
                    recall = statistics.mean(len(truth[i][0] & set(ids)) / K for i, ids in enumerate(found))
                    # how much further the K-th row found is than the true K-th: near-ties cost recall, not this
                    further = statistics.mean(
                        (1 - float((vectors[ids] @ asked[i]).min())) / truth[i][1] - 1 for i, ids in enumerate(found) if ids)
                    full = sum(len(ids) == K for ids in found)
                    print(f"{name:>8} {kind:>8} {ef:>9} {statistics.median(times):7.4f} {p95(times):7.4f} "
                          f"{base / statistics.median(times):9.0f} {recall:9.3f} {further:+9.2%} {full:>4}/{len(found)}"
                          f"  {plan(conn, kind, source, asked[0])}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
