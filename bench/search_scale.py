"""Search time as the index grows, on the corpus for scale (bench/scale_corpus.py): the Anthropic
chunks plus recombined ones, at each size given (default 10,000 and 100,000 chunks).

At each size it asks the 50 Anthropic dev questions, filtered to the source, in vector and in
hybrid mode (k = 10; each question embedded once, up front, so the timings are the search alone),
and prints p50 and p95 seconds per search, page@3 (a gold page among the top 3), and against the
snapshot saved by an earlier run (build/scale-base/top10-*.json; the first run writes it, `--save`
overwrites it): how many questions' top 10 are the same list, and the share of the snapshot's top
10 found again (overlap@10). A change to search is checked that way for identical results.

Usage: .venv/bin/python bench/search_scale.py [--save] [CHUNKS ...]
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
import time

from pgcite.embedding.models import LocalEmbedder
from pgcite.evaluation.questions import load_questions
from pgcite.retrieval.search import search
from pgcite.store import SearchFilter, Store
from scale_corpus import BASE_HOME, SOURCE, base_settings, ensure_base, grow
from scratch import ANTHROPIC

K = 10
SIZES = (10_000, 100_000)
ROUNDS = 3  # each question this many times; the first round warms the caches and is not counted


def measure(store: Store, embedder: LocalEmbedder, questions: list, mode: str) -> tuple[list[float], list[list[str]]]:
    times, tops = [], []
    for round_ in range(ROUNDS):
        for q in questions:
            started = time.perf_counter()
            hits = search(store, embedder, q.question, k=K, mode=mode, filters=SearchFilter(source=SOURCE))
            if round_:
                times.append(time.perf_counter() - started)
            else:
                tops.append([h.id for h in hits])
    return times, tops


def page_at_3(questions: list, tops: list[list[str]]) -> float:
    def gold(q, chunk_id: str) -> bool:
        path, _, _ = chunk_id.removeprefix(f"{SOURCE}:").rpartition("#")
        return any(g.path == path for g in q.gold)
    return sum(any(gold(q, c) for c in top[:3]) for q, top in zip(questions, tops)) / len(questions)


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[-1]


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--save"]
    save = "--save" in sys.argv[1:]
    if not all(a.isdigit() for a in args):
        print(__doc__)
        return 2
    questions = load_questions(ANTHROPIC / "questions-dev.jsonl")
    settings = base_settings()
    ensure_base(settings)
    embedder = LocalEmbedder()
    embedder.embed_query = functools.lru_cache(maxsize=None)(embedder.embed_query)
    for q in questions:
        embedder.embed_query(q.question)
    print(f"\n{len(questions)} questions, k = {K}, seconds per search over {ROUNDS - 1} rounds (a warm-up round "
          "first); 'same top 10': questions whose top 10 equals the snapshot's\n")
    print(f"{'chunks':>8} {'grown s':>8} {'mode':>7} {'p50':>7} {'p95':>7} {'page@3':>6} {'same top 10':>12} "
          f"{'overlap@10':>11}")
    with Store.open(settings) as store:
        for size in sorted(int(a) for a in args) or SIZES:
            grown = grow(store, size)
            chunks = store.conn.execute("SELECT count(*) FROM chunks WHERE source = %s", (SOURCE,)).fetchone()[0]
            for mode in ("vector", "hybrid"):
                times, tops = measure(store, embedder, questions, mode)
                snapshot = BASE_HOME / f"top10-{chunks}-{mode}.json"
                if save or not snapshot.exists():
                    snapshot.write_text(json.dumps(tops))
                    same = overlap = "saved"
                else:
                    before = json.loads(snapshot.read_text())
                    same = f"{sum(a == b for a, b in zip(before, tops))}/{len(tops)}"
                    overlap = f"{statistics.mean(len(set(a) & set(b)) / K for a, b in zip(before, tops)):.3f}"
                print(f"{chunks:>8} {grown:>8.0f} {mode:>7} {statistics.median(times):7.3f} {p95(times):7.3f} "
                      f"{page_at_3(questions, tops):6.2f} {same:>12} {overlap:>11}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
