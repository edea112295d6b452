"""Ingest benchmark on the Marten docs (../shared/corpora/marten-docs).

Prints, in one run:
  - raw embedding throughput of the bundled model on ONNX Runtime and on sentence-transformers
    (today's path before it, bench/reference.py): median of 3 interleaved passes over the same
    sample of the corpus's chunks, and their ratio;
  - end-to-end ingest throughput of `pgcite ingest` (read, clean, chunk, embed, COPY, index) as its
    own process, its ratio to the raw ONNX Runtime figure, and that process's peak RSS;
  - the time of an unchanged re-run and of a re-run after editing one section.

Usage: .venv/bin/python bench/ingest.py [CORPUS_DIR]
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pgcite.ingest.chunking import chunk_by_headings
from pgcite.config import Settings
from pgcite.embedding.models import LocalEmbedder
from pgcite.ingest.flow import chunk_budget
from pgcite.ingest.markdown import parse
from pgcite.ingest.locations import open_source
from pgcite.ingest.sources import Document
from pgcite.store import server

from reference import ReferenceEmbedder
from scratch import home_env, run_measured

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "marten-docs"
SAMPLE = 256


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    if not corpus.is_dir():
        print(f"skipped: corpus not found at {corpus} (it lives in ../shared/corpora beside the repo)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="pgcite-bench-"))
    try:
        return run(corpus, work)
    finally:
        server.stop(work / "home")
        shutil.rmtree(work, ignore_errors=True)


def pgcite_ingest(docs_dir: Path, home: Path) -> tuple[dict, float, float]:
    """`pgcite ingest --json` as a new process: its report, wall seconds and peak RSS (MB)."""
    out, wall, peak = run_measured("pgcite", ["ingest", str(docs_dir), "--source", "marten",
                                              "--base-url", "https://martendb.io/", "--json"], home_env(home))
    return json.loads(out), wall, peak


def run(corpus: Path, work: Path) -> int:
    docs_dir = work / "docs"
    shutil.copytree(corpus, docs_dir)  # a private copy, so one section can be edited
    settings = Settings(home=work / "home")
    embedder, reference = LocalEmbedder(), ReferenceEmbedder()

    texts = []
    for item in open_source(str(docs_dir)).scan():
        if isinstance(item, Document):
            parsed = parse(item.text, fallback_title=Path(item.path).stem)
            texts += [c.embed_text for c in chunk_by_headings(parsed, embedder.count_tokens,
                                                              max_tokens=chunk_budget(settings, embedder))]
    sample = random.Random(0).sample(texts, min(SAMPLE, len(texts)))
    for model in (embedder, reference):
        model.embed_documents(sample[:8])  # load the model outside the timings

    passes: dict[str, list[float]] = {"onnx": [], "reference": []}
    for _ in range(3):  # interleaved, so a noisy moment touches both
        for name, model in (("onnx", embedder), ("reference", reference)):
            t0 = time.perf_counter()
            model.embed_documents(sample)
            passes[name].append(len(sample) / (time.perf_counter() - t0))
    raw = {name: statistics.median(rates) for name, rates in passes.items()}

    # Start the embedded server first: its initdb would otherwise count in the ingest's peak RSS.
    run_measured("pgcite", ["status"], home_env(settings.home))
    first, first_wall, first_rss = pgcite_ingest(docs_dir, settings.home)
    e2e = first["chunks_embedded"] / first["seconds"]
    unchanged, unchanged_wall, _ = pgcite_ingest(docs_dir, settings.home)
    target = docs_dir / "documents" / "pgvector.md"
    target.write_text(target.read_text().replace("## Installation\n", "## Installation\n\nFirst, read this.\n", 1))
    edited, _, _ = pgcite_ingest(docs_dir, settings.home)

    print(f"corpus: {corpus} ({first['new']} files, {len(texts)} chunks, {len(first['skipped'])} skipped); "
          f"{os.cpu_count()} cores")
    for name, label in (("onnx", "ONNX Runtime"), ("reference", "sentence-transformers")):
        print(f"raw embedding, {label:21s} {raw[name]:6.1f} chunks/s  (median of 3 passes over {len(sample)} "
              f"corpus chunks; passes {', '.join(f'{p:.1f}' for p in passes[name])})")
    print(f"ratio ONNX Runtime / sentence-transformers: {raw['onnx'] / raw['reference']:.2f}")
    print(f"end-to-end ingest:      {e2e:6.1f} chunks/s  ({first['chunks_embedded']} chunks in {first['seconds']:.1f} s; "
          f"process {first_wall:.1f} s)")
    print(f"ratio end-to-end / raw ONNX Runtime: {e2e / raw['onnx']:.2f}")
    print(f"peak RSS of the ingest: {first_rss:6.0f} MB  (the pgcite process; PostgreSQL is another)")
    print(f"unchanged re-run:       {unchanged['seconds']:6.2f} s  (process {unchanged_wall:.2f} s; "
          f"{unchanged['unchanged']} unchanged, {unchanged['chunks_embedded']} embedded)")
    print(f"one section edited:     {edited['seconds']:6.2f} s  ({edited['changed']} changed file, "
          f"{edited['chunks_embedded']} embedded, {edited['chunks_reused']} reused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
