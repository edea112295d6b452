"""How well each score pgcite has tells an on-topic unanswerable question from an answerable one,
on the held-out TUNE halves (eval/heldout/*.tune.jsonl; the sealed halves are never read here).

    PGCITE_HOME=... .venv/bin/python bench/refusal_signals.py      # the sites as eval/heldout.py ingested them

For each answerable and unanswerable question that passes the relevance bar: the top section's
cosine in units of its source's calibration (z: 0 at the off-topic median, 1 at the headings'
median), the best z of all candidates, the question's word weight held by the top section and by any
candidate, by the fed sections (the offline generator's coverage), and the offline generator's best
unit (relevance, cosine, word overlap). Prints, per signal, the share of unanswerable questions a
refusal below it would catch when set to refuse only 3% of the answerable ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from pgcite.retrieval.calibration import Calibration  # noqa: E402
from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.evaluation.questions import load_questions  # noqa: E402
from pgcite.answer.extractive import ExtractiveGenerator  # noqa: E402
from pgcite.retrieval.search import retrieve, select_context  # noqa: E402
from pgcite.vocabulary import SearchFilter  # noqa: E402

SIGNALS = ("z", "best_z", "top_coverage", "best_coverage", "fed_coverage", "unit_relevance", "unit_cosine",
           "unit_overlap")
FALSE_REFUSALS = 0.03


def signals(app: Pgcite, store, site: str, question: str, calibration: Calibration) -> dict | None:
    filters = SearchFilter(source=site, exclude_flagged=True)
    hits = retrieve(store, app.embedder, question, filters=filters)
    if not hits:
        return None
    context = select_context(hits, context=5, token_budget=3000, count_tokens=app.embedder.count_tokens)
    units = ExtractiveGenerator(app.embedder).rank(question, context.passages)
    z = [(h.score - calibration.offtopic_median) / calibration.gap for h in hits]
    _, coverage = ExtractiveGenerator(app.embedder)._score(question, context.passages)
    return {"z": z[0], "best_z": max(z), "top_coverage": hits[0].coverage,
            "best_coverage": max(h.coverage for h in hits), "fed_coverage": coverage,
            "unit_relevance": max((u.relevance for u in units), default=0.0),
            "unit_cosine": max((u.cosine for u in units), default=0.0),
            "unit_overlap": max((u.overlap for u in units), default=0.0)}


def main() -> None:
    sites = [s["name"] for s in json.loads((HERE.parent / "eval" / "heldout" / "sites.json").read_text())]
    rows = []
    with Pgcite(load_settings()) as app, app.reader() as store:
        for site in sites:
            calibration = Calibration.from_json(store.load_calibration(site))
            if calibration is None:
                print(f"skipped {site}: not ingested here (run eval/heldout.py first)", file=sys.stderr)
                continue
            for q in load_questions(HERE.parent / "eval" / "heldout" / f"{site}.tune.jsonl"):
                found = signals(app, store, site, q.question, calibration)
                if found is not None:
                    rows.append((q.answerable, found))
    answerable = [s for a, s in rows if a]
    unanswerable = [s for a, s in rows if not a]
    print(f"{len(answerable)} answerable and {len(unanswerable)} unanswerable tune questions pass the bar")
    print(f"| signal | bar refusing {FALSE_REFUSALS:.0%} of answerable | unanswerable refused by it |")
    print("|---|---|---|")
    for name in SIGNALS:
        values = sorted(s[name] for s in answerable)
        bar = values[int(FALSE_REFUSALS * len(values))]
        caught = sum(1 for s in unanswerable if s[name] < bar)
        print(f"| {name} | {bar:.3f} | {caught} of {len(unanswerable)} ({caught / max(len(unanswerable), 1):.2f}) |")


if __name__ == "__main__":
    main()
