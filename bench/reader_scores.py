"""What the reader's scores say on the held-out sites: how its order compares with the first stage's,
and how well its best score tells an on-topic unanswerable question from an answerable one.

    PGCITE_HOME=... .venv/bin/python bench/reader_scores.py            # tune halves, per site and pooled
    PGCITE_HOME=... .venv/bin/python bench/reader_scores.py --half sealed   # totals only

Each question is retrieved as `ask` does (every chunk within the relevance bar), then the reader
reads the first `reader_candidates`. Printed per half: the gold section in the first stage's top 3
and in the reader's; the AUC of the best reader score (answerable above unanswerable); and for bars
at the answerable questions' 1st-10th percentiles, how many unanswerable ones a refusal below the
bar catches. Questions that no section passes the relevance bar for are refused already and counted
apart. The sealed half prints totals only, as eval/heldout.py does."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.evaluation.metrics import distinct_sections, matches  # noqa: E402
from pgcite.evaluation.questions import load_questions  # noqa: E402
from pgcite.retrieval.calibration import measure_reader  # noqa: E402
from pgcite.retrieval.search import retrieve  # noqa: E402
from pgcite.vocabulary import SearchFilter  # noqa: E402
from scratch import auc  # noqa: E402

FUSIONS = (0.5, 1.0, 2.0, 4.0)


def gold_in_top(question, hits, count: int = 3) -> bool:
    return any(matches(g, s) for s in distinct_sections(hits, count) for g in question.gold)


def measure(app: Pgcite, site: str, half: str) -> list[dict]:
    rows = []
    reranker = app.reranker
    for q in load_questions(HERE.parent / "eval" / "heldout" / f"{site}.{half}.jsonl"):
        with app.reader() as store:
            hits = retrieve(store, app.embedder, q.question, filters=SearchFilter(source=site, exclude_flagged=True))
        row = {"site": site, "id": q.id, "answerable": q.answerable, "passed_bar": bool(hits)}
        if hits:
            read = reranker.rerank(q.question, hits)
            # The reader's own order (its rank_score), whatever order the reranker feeds (a rank prior).
            read = sorted(read[: reranker.candidates], key=lambda h: -h.rank_score) + read[reranker.candidates :]
            row |= {
                "best": read[0].rank_score,
                "closest": -min(h.distance for h in hits),  # the first stage's own signal: higher, closer
                "first_top3": gold_in_top(q, hits),
                "reader_top3": gold_in_top(q, read),
            }
            # The reader's score plus a prior for the first stage's rank (1 for its best, 0 past the candidates).
            position = {h.id: i for i, h in enumerate(hits)}
            for weight in FUSIONS:
                fused = sorted(
                    read[: reranker.candidates],
                    key=lambda h: -(h.rank_score + weight * (1 - position[h.id] / reranker.candidates)),
                )
                row[f"fused{weight}_top3"] = gold_in_top(q, fused + read[reranker.candidates :])
            # Reciprocal rank fusion (k = 60, its usual constant): no weight to choose.
            reader_rank = {h.id: i for i, h in enumerate(read)}
            rrf = sorted(
                read[: reranker.candidates], key=lambda h: -(1 / (61 + position[h.id]) + 1 / (61 + reader_rank[h.id]))
            )
            row["rrf_top3"] = gold_in_top(q, rrf + read[reranker.candidates :])
        rows.append(row)
    return rows


def _rank_mean(a: list[float], b: list[float]) -> np.ndarray:
    ranks = [np.argsort(np.argsort(np.asarray(x, dtype=float))) for x in (a, b)]
    return (ranks[0] + ranks[1]) / 2.0


def report(rows: list[dict], label: str) -> str:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    pos = np.array([r["best"] for r in answerable if r["passed_bar"]])
    neg = np.array([r["best"] for r in unanswerable if r["passed_bar"]])
    judged = [r for r in answerable if r["passed_bar"]]
    lines = [
        f"{label}: {len(answerable)} answerable ({len(judged)} pass the bar), "
        f"{len(unanswerable)} unanswerable ({len(neg)} pass the bar)",
        f"  gold in top 3 (of all answerable): "
        f"first stage {sum(r['first_top3'] for r in judged) / len(answerable):.3f}, "
        f"reader {sum(r['reader_top3'] for r in judged) / len(answerable):.3f}, "
        + ", ".join(
            f"reader + {w} x rank prior {sum(r[f'fused{w}_top3'] for r in judged) / len(answerable):.3f}"
            for w in FUSIONS
        )
        + f", reciprocal rank fusion {sum(r['rrf_top3'] for r in judged) / len(answerable):.3f}",
    ]
    if len(pos) and len(neg):
        passed = [r for r in unanswerable if r["passed_bar"]]
        closest = [r["closest"] for r in judged], [r["closest"] for r in passed]
        # Both signals together with no weight to fit: the mean of each one's rank among these questions.
        both = _rank_mean([r["best"] for r in judged + passed], [r["closest"] for r in judged + passed])
        lines.append(
            f"  AUC answerable over unanswerable: the best reader score {auc(pos, neg):.3f}, the first stage's "
            f"closest distance {auc(*closest):.3f}, both (mean rank) {auc(both[: len(pos)], both[len(pos) :]):.3f}"
        )
        for pct in (1, 3, 5, 10):
            bar = float(np.percentile(pos, pct))
            caught = int((neg < bar).sum()) + len(unanswerable) - len(neg)
            lines.append(
                f"  bar at answerable's {pct:>2}th percentile ({bar:+.2f}): unanswerable refused "
                f"{caught}/{len(unanswerable)}"
            )
        for bar in (-4.0, -3.0, -2.0, -1.0, 0.0):
            caught = int((neg < bar).sum()) + len(unanswerable) - len(neg)
            lines.append(
                f"  bar {bar:+.1f}: answerable refused {int((pos < bar).sum()) + len(answerable) - len(pos)}"
                f"/{len(answerable)}, unanswerable refused {caught}/{len(unanswerable)}"
            )
    return "\n".join(lines)


def calibration_line(app: Pgcite, site: str) -> str:
    """The source's own heading questions, read with and without their section (calibration.measure_reader)."""
    with app.reader() as store:
        scores = measure_reader(store, app.embedder, app.reranker, site)
    a, u = np.array(scores.answered), np.array(scores.unanswered)
    return (
        f"  headings: answered p10 {np.percentile(a, 10):+.2f} median {np.median(a):+.2f}; "
        f"answer taken out median {np.median(u):+.2f} p90 {np.percentile(u, 90):+.2f} ({len(a)}/{len(u)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "sealed"), default="tune")
    parser.add_argument("--sites", help="comma-separated subset")
    args = parser.parse_args()
    sites = [s["name"] for s in json.loads((HERE.parent / "eval" / "heldout" / "sites.json").read_text())]
    if args.sites:
        sites = [s for s in sites if s in args.sites.split(",")]
    everything = []
    with Pgcite(load_settings()) as app:
        for site in sites:
            rows = measure(app, site, args.half)
            everything += rows
            if args.half == "tune":
                print(report(rows, site), flush=True)
                print(calibration_line(app, site), flush=True)
    print(report(everything, f"pooled {args.half}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
