"""Each source's calibration as measured now (calibration.py), with the time it takes.

    PGCITE_HOME=... .venv/bin/python bench/calibration.py [--save] [SOURCE ...]

Prints, per source: chunks, the off-topic questions' best scores (median, OFFTOPIC_QUANTILE), the
heading questions' (10th percentile, median), the bar as a cosine distance, the vector scale, and
the seconds it took (embedding included; the off-topic vectors are embedded once per process).
--save stores what it measured as the sources' calibration (as an ingest that finds it stale does)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pgcite.retrieval.calibration import measure  # noqa: E402
from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402


def main() -> None:
    save = "--save" in sys.argv
    with Pgcite(load_settings()) as app, app.writer() as store:
        names = [a for a in sys.argv[1:] if a != "--save"] or [s.name for s in store.list_sources()]
        print("| source | chunks | off-topic median | off-topic high | answered p10 | answered median "
              "| bar (distance) | vector scale | seconds |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name in names:
            started = time.perf_counter()
            cal = measure(store, app.embedder, name)
            seconds = time.perf_counter() - started
            if save:
                store.save_calibration(name, cal.to_json() if cal else None)
            if cal is None:
                print(f"| {name} | 0 | - | - | - | - | - | - | - |")
                continue
            print(f"| {name} | {cal.chunks} | {cal.offtopic_median:.3f} | {cal.offtopic_high:.3f} | "
                  f"{cal.answered_low:.3f} | {cal.answered_median:.3f} | {cal.bar:.3f} | {cal.vector_scale:.2f} | "
                  f"{seconds:.1f} |")


if __name__ == "__main__":
    main()
