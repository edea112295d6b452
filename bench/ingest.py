"""Ingest benchmark on the Marten docs (../shared/corpora/marten-docs).

Prints, in one run and one process:
  - raw embedding throughput of the model (median of 3 passes over a sample of the corpus's chunks),
  - end-to-end ingest throughput (read, clean, chunk, embed, COPY, index) and its ratio to the raw one,
  - the time of an unchanged re-run and of a re-run after editing one section,
  - peak resident memory of this process (the model included; the PostgreSQL server is another process).

Usage: .venv/bin/python bench/ingest.py [CORPUS_DIR]
"""

from __future__ import annotations

import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pgcite.chunking import chunk_by_headings
from pgcite.config import Settings
from pgcite.embedding import LocalEmbedder
from pgcite.ingest import chunk_budget, ingest, open_location
from pgcite.markdown import parse
from pgcite.sources import Document, open_source
from pgcite.store import Store, server

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


def run(corpus: Path, work: Path) -> int:
    docs_dir = work / "docs"
    shutil.copytree(corpus, docs_dir)  # a private copy, so one section can be edited
    settings = Settings(home=work / "home")
    embedder = LocalEmbedder()

    texts = []
    for item in open_source(str(docs_dir)).scan():
        if isinstance(item, Document):
            parsed = parse(item.text, fallback_title=Path(item.path).stem)
            texts += [c.embed_text for c in chunk_by_headings(parsed, embedder.count_tokens,
                                                              max_tokens=chunk_budget(settings, embedder))]
    sample = random.Random(0).sample(texts, min(SAMPLE, len(texts)))
    embedder.embed_documents(sample[:8])  # load the model outside the timings

    passes = []
    for _ in range(3):
        t0 = time.perf_counter()
        embedder.embed_documents(sample)
        passes.append(len(sample) / (time.perf_counter() - t0))
    raw = statistics.median(passes)

    with Store.open(settings) as store:
        def run_ingest():
            return ingest(open_location(str(docs_dir), settings), source_name="marten",
                          base_url="https://martendb.io/", settings=settings, store=store, embedder=embedder)

        first = run_ingest()
        e2e = first.chunks_embedded / first.seconds
        unchanged = run_ingest()
        target = docs_dir / "documents" / "pgvector.md"
        target.write_text(target.read_text().replace("## Installation\n", "## Installation\n\nFirst, read this.\n", 1))
        edited = run_ingest()

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"corpus: {corpus} ({first.new} files, {len(texts)} chunks, {len(first.skipped)} skipped)")
    print(f"raw embedding:        {raw:7.1f} chunks/s  (median of 3 passes over {len(sample)} corpus chunks; "
          f"passes {', '.join(f'{p:.1f}' for p in passes)})")
    print(f"end-to-end ingest:    {e2e:7.1f} chunks/s  ({first.chunks_embedded} chunks in {first.seconds:.1f} s)")
    print(f"ratio end-to-end/raw: {e2e / raw:7.2f}")
    print(f"unchanged re-run:     {unchanged.seconds:7.2f} s  ({unchanged.unchanged} unchanged, "
          f"{unchanged.chunks_embedded} embedded)")
    print(f"one section edited:   {edited.seconds:7.2f} s  ({edited.changed} changed file, "
          f"{edited.chunks_embedded} embedded, {edited.chunks_reused} reused)")
    print(f"peak memory (RSS):    {peak_mb:7.0f} MB  (this process, model included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
