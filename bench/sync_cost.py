"""What a sync with nothing changed costs (issue 17), against listing the files, in one run.

The corpus (Marten's docs by default) is ingested into a scratch home, then timed, ROUNDS times
each, medians:

- listing: `os.walk` of the folder and a stat of every file, the least any sync can do;
- sync, nothing changed: `Pgcite.sync` in the process, the model loaded (as the server and
  `--watch` run it);
- sync, every file read: the same with the stored stamps cleared first, so that every file is read
  and hashed (what a sync did before stamps were kept) and restamped;
- statistics refresh: BM25's materialized views refreshed once (every ingest did it before, changed
  or not);
- `pgcite sync` as its own process, and `pgcite sources` (a command that only reads a table) as the
  cost of starting a process at all.

Then the same on the corpus copied COPIES times into one folder (its vectors come from the cache),
and what each costs per file more.

Usage: .venv/bin/python bench/sync_cost.py [CORPUS_DIR]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from pgcite.core import Pgcite
from pgcite.store import Store
from scratch import CORPORA, home_env, run_measured, scratch_settings

ROUNDS = 7
COPIES = 20


def median_seconds(work, before=lambda: None) -> float:
    times = []
    for _ in range(ROUNDS):
        before()
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def listing(folder: Path) -> int:
    files = 0
    for root, _, names in os.walk(folder):
        for name in names:
            os.stat(os.path.join(root, name))
            files += 1
    return files


def measure(app: Pgcite, settings, folder: Path, source: str) -> list[tuple[str, float]]:
    started = time.perf_counter()
    first = app.ingest(str(folder), source=source)
    print(f"{source}: first ingest {first.new} pages, {first.chunks_embedded} chunks embedded, {first.chunks_reused} "
          f"reused, in {time.perf_counter() - started:.0f} s; {listing(folder)} files in the folder")

    def sync() -> None:
        report = app.sync(source)
        assert report.new == report.changed == report.removed == 0, report.summary()

    def forget_stamps() -> None:
        with Store.open(settings) as store:
            store.conn.execute("UPDATE documents SET stamp = '' WHERE source = %s", (source,))

    def refresh() -> None:
        with Store.open(settings) as store:
            store.refresh_statistics()

    rows = [("listing (os.walk and stat)", median_seconds(lambda: listing(folder))),
            ("sync, nothing changed", median_seconds(sync)),
            ("sync, every file read (no stamps)", median_seconds(sync, forget_stamps)),
            ("statistics refresh", median_seconds(refresh))]
    process = [run_measured("pgcite", ["sync", source], home_env(settings.home))[1] for _ in range(3)]
    rows.append(("`pgcite sync` as a process", statistics.median(process)))
    baseline = [run_measured("pgcite", ["sources"], home_env(settings.home))[1] for _ in range(3)]
    rows.append(("`pgcite sources` as a process", statistics.median(baseline)))
    print(f"{'':38} {'median s':>9} {'x listing':>10}")
    for name, seconds in rows:
        print(f"{name:38} {seconds:9.3f} {seconds / rows[0][1]:10.1f}")
    print(f"before stamps, a sync read every file and refreshed the statistics: about "
          f"{rows[2][1] + rows[3][1]:.3f} s, {(rows[2][1] + rows[3][1]) / rows[1][1]:.1f} times today's\n")
    return rows


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPORA / "marten-docs"
    if not corpus.is_dir():
        print(f"skipped: {corpus} not found (the corpora live in ../shared/corpora beside the repo)")
        return 0
    with scratch_settings("pgcite-sync-cost-") as settings, Pgcite(settings) as app:
        one = measure(app, settings, corpus, "docs")
        # The same pages COPIES times over (their vectors come from the cache): what grows with the files.
        copies = settings.home / "copies"
        for n in range(COPIES):
            shutil.copytree(corpus, copies / f"copy{n:02}")
        many = measure(app, settings, copies, "copies")
        extra_files = listing(copies) - listing(corpus)
        for (name, small), (_, large) in zip(one[:3], many[:3]):
            print(f"{name:38} {(large - small) / extra_files * 1e6:9.1f} microseconds per file more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
