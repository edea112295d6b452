"""Ingest benchmark on the Marten docs (../shared/corpora/marten-docs), or another site given.

Prints, in one run:
  - raw embedding throughput of the bundled model on ONNX Runtime in fp32 and int8, and on
    sentence-transformers (the path before, bench/reference.py): median of 3 interleaved passes over
    the same sample of the corpus's chunks, in chunks a second and CPU seconds a chunk, their ratios,
    and how close int8's vectors are to fp32's;
  - end-to-end ingest throughput of `pgcite ingest` (read, clean, chunk, embed, COPY, index) as its
    own process with each precision, its ratio to the raw figure, and that process's peak RSS;
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

import numpy as np

from pgcite.ingest.chunking import chunk_by_headings
from pgcite.config import Settings
from pgcite.embedding.models import LOCAL_MODELS, LocalEmbedder
from pgcite.ingest.flow import chunk_budget
from pgcite.ingest.markdown import parse
from pgcite.ingest.locations import open_source
from pgcite.ingest.sources import Document
from pgcite.store import Store, server

from reference import ReferenceEmbedder
from scratch import home_env, run_measured

INT8 = next(name for name, precision in LOCAL_MODELS.items() if precision == "int8")
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
        for precision in ("fp32", "int8"):
            server.stop(work / f"home-{precision}")
        shutil.rmtree(work, ignore_errors=True)


def pgcite_ingest(docs_dir: Path, env: dict[str, str]) -> tuple[dict, float, float]:
    """`pgcite ingest --json` as a new process: its report, wall seconds and peak RSS (MB)."""
    out, wall, peak = run_measured("pgcite", ["ingest", str(docs_dir), "--source", "bench", "--json"], env)
    return json.loads(out), wall, peak


def edit_one_section(docs_dir: Path, settings: Settings) -> None:
    """Add a sentence under the first second-level heading of the first stored page that has one."""
    with Store.open(settings) as store:
        paths = [p for (p,) in store.conn.execute("SELECT path FROM documents ORDER BY path")]
    for page in (docs_dir / path for path in paths):
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        at = text.find("\n## ")
        if at >= 0:
            end = text.index("\n", at + 1) + 1 if "\n" in text[at + 1 :] else len(text)
            page.write_text(f"{text[:end]}\nFirst, read this.\n{text[end:]}", encoding="utf-8")
            return
    raise SystemExit(f"no page with a second-level heading under {docs_dir}")


def run(corpus: Path, work: Path) -> int:
    docs_dir = work / "docs"
    shutil.copytree(corpus, docs_dir)  # a private copy, so one section can be edited
    settings = Settings(home=work / "home-fp32")
    models = {"fp32": LocalEmbedder(), "int8": LocalEmbedder(model=INT8), "reference": ReferenceEmbedder()}

    texts = []
    for item in open_source(str(docs_dir)).scan():
        if isinstance(item, Document):
            parsed = parse(item.text, fallback_title=Path(item.path).stem)
            texts += [c.embed_text for c in chunk_by_headings(parsed, models["fp32"].count_tokens,
                                                              max_tokens=chunk_budget(settings, models["fp32"]))]
    sample = random.Random(0).sample(texts, min(SAMPLE, len(texts)))
    for model in models.values():
        model.embed_documents(sample[:8])  # load the model outside the timings

    rates: dict[str, list[float]] = {name: [] for name in models}
    cpu: dict[str, list[float]] = {name: [] for name in models}  # CPU seconds per chunk, every thread
    vectors = {}
    for _ in range(3):  # interleaved, so a noisy moment touches all
        for name, model in models.items():
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name] = model.embed_documents(sample)
            rates[name].append(len(sample) / (time.perf_counter() - t0))
            cpu[name].append((time.process_time() - c0) / len(sample))
    raw = {name: statistics.median(r) for name, r in rates.items()}
    cost = {name: statistics.median(c) for name, c in cpu.items()}
    cosines = np.sum(vectors["int8"] * vectors["fp32"], axis=1)

    runs = {}
    for name, model_env in (("fp32", {}), ("int8", {"PGCITE_EMBEDDING_MODEL": INT8})):
        home = work / f"home-{name}"
        env = {**home_env(home), **model_env}
        # Start the embedded server first: its initdb would otherwise count in the ingest's peak RSS.
        run_measured("pgcite", ["status"], env)
        runs[name] = (*pgcite_ingest(docs_dir, env), env)
    first, first_wall, first_rss, env = runs["fp32"]
    unchanged, unchanged_wall, _ = pgcite_ingest(docs_dir, env)
    edit_one_section(docs_dir, settings)
    edited, _, _ = pgcite_ingest(docs_dir, env)

    print(f"corpus: {corpus} ({first['new']} files, {len(texts)} chunks, {len(first['skipped'])} skipped); "
          f"{os.cpu_count()} cores")
    for name, label in (("fp32", "ONNX Runtime fp32"), ("int8", "ONNX Runtime int8"),
                        ("reference", "sentence-transformers")):
        print(f"raw embedding, {label:21s} {raw[name]:6.1f} chunks/s, {cost[name] * 1000:5.1f} CPU ms a chunk  "
              f"(median of 3 passes over {len(sample)} corpus chunks; passes {', '.join(f'{p:.1f}' for p in rates[name])})")
    print(f"ratio fp32 / sentence-transformers: {raw['fp32'] / raw['reference']:.2f}")
    print(f"ratio int8 / fp32: {raw['int8'] / raw['fp32']:.2f} chunks/s, {cost['fp32'] / cost['int8']:.2f} in CPU seconds; "
          f"cosine int8 to fp32: min {cosines.min():.4f}, median {np.median(cosines):.4f}")
    for name in ("fp32", "int8"):
        report, wall, rss, _ = runs[name]
        e2e = report["chunks_embedded"] / report["seconds"]
        print(f"end-to-end ingest, {name}: {e2e:6.1f} chunks/s  ({report['chunks_embedded']} chunks in "
              f"{report['seconds']:.1f} s; process {wall:.1f} s); ratio to raw {name}: {e2e / raw[name]:.2f}; "
              f"peak RSS {rss:.0f} MB (the pgcite process; PostgreSQL is another)")
    print(f"unchanged re-run:       {unchanged['seconds']:6.2f} s  (process {unchanged_wall:.2f} s; "
          f"{unchanged['unchanged']} unchanged, {unchanged['chunks_embedded']} embedded)")
    print(f"one section edited:     {edited['seconds']:6.2f} s  ({edited['changed']} changed file, "
          f"{edited['chunks_embedded']} embedded, {edited['chunks_reused']} reused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
