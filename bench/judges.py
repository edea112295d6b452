"""How pgcite's reader judges WikiQA's sentences, beside the bundled model's cosine, in one run.

    .venv/bin/python bench/wikiqa.py                        # the test split, the reader at the app's precision
    PGCITE_READER=fp32 .venv/bin/python bench/wikiqa.py --split all --json
    .venv/bin/python bench/wikiqa.py --limit 50 --no-title --precision int8

WikiQA (Yang, Yih and Meek, 2015; ../shared/data/wikiqa, see its SOURCE.txt) is for EVALUATION
ONLY: its licence (Microsoft Research Data License Agreement) is not an open one, so no model that
ships is trained or tuned on it, train split included. Each Bing query comes with the sentences of
one Wikipedia summary, each labelled 1 if it answers the query. Every sentence is scored with (a)
the reader (a logit, load_reader as the app loads it, from the same model cache) and (b) the cosine
of the query's and the sentence's all-MiniLM-L6-v2 vectors. The sentence is read as pgcite reads a
section, after its heading breadcrumb: "DocumentTitle\\nsentence", where the split has a title (the
test split; --no-title for the sentence alone). Questions are grouped by their text: the train
file's QuestionID numbers rows, not questions. Rows whose column count differs from the header's
(13 in train: a tab inside the sentence) are skipped and counted.

Printed per scorer: MAP and MRR over the queries with an answering sentence (the standard WikiQA
protocol; a tie keeps the file's order); the AUC of each query's best score, answered queries over
unanswered ones (ties count half); and the CPU seconds its scoring took (time.process_time, every
thread of the process, the models' loading excluded). The project's target is a reader MRR at least
0.10 above cosine's and an AUC of at least 0.80; the verdict is printed, not asserted. --json prints
one JSON object instead of the table. No database is started."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from pgcite.config import LOCAL_MODEL, load_settings  # noqa: E402
from pgcite.embedding.models import LOCAL_MODELS, LocalEmbedder, bundled_model_dir  # noqa: E402
from pgcite.embedding.reader import READER_PRECISIONS, load_reader  # noqa: E402
from scratch import auc  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "wikiqa"
SPLITS = {"test": ("WikiQA-test.tsv",), "train": ("WikiQA-train.tsv",), "all": ("WikiQA-test.tsv", "WikiQA-train.tsv")}
TARGET_MRR_GAIN = 0.10  # the reader's MRR over cosine's
TARGET_AUC = 0.80


@dataclass
class Query:
    question: str
    texts: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)


def read_split(path: Path, title: bool) -> tuple[list[Query], int, bool]:
    """The file's queries in file order, how many rows were skipped for a wrong column count, and
    whether the sentences carry their title."""
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].rstrip("\r").split("\t")
    column = {name: i for i, name in enumerate(header)}
    with_title = title and "DocumentTitle" in column
    queries: dict[str, Query] = {}
    skipped = 0
    for line in lines[1:]:
        if not line.strip():
            continue
        row = line.rstrip("\r").split("\t")
        if len(row) != len(header):
            skipped += 1
            continue
        question, sentence = row[column["Question"]], row[column["Sentence"]]
        query = queries.setdefault(question, Query(question))
        query.texts.append(f"{row[column['DocumentTitle']]}\n{sentence}" if with_title else sentence)
        query.labels.append(int(row[column["Label"]]))
    return list(queries.values()), skipped, with_title


def ranked_labels(scores: np.ndarray, labels: Sequence[int]) -> np.ndarray:
    """The labels in the order of the scores, best first; a tie keeps the given order."""
    return np.asarray(labels)[np.argsort(-np.asarray(scores), kind="stable")]


def average_precision(scores: np.ndarray, labels: Sequence[int]) -> float:
    hits = ranked_labels(scores, labels)
    found = np.cumsum(hits)
    return float((found / np.arange(1, len(hits) + 1))[hits == 1].sum() / max(1, hits.sum()))


def reciprocal_rank(scores: np.ndarray, labels: Sequence[int]) -> float:
    hits = np.flatnonzero(ranked_labels(scores, labels) == 1)
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0


def judge(queries: Sequence[Query], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """MAP and MRR over the answered queries, and the AUC of the best score, answered over unanswered."""
    answered = [(s, q.labels) for q, s in zip(queries, scores, strict=True) if any(q.labels)]
    best = [(float(np.max(s)), any(q.labels)) for q, s in zip(queries, scores, strict=True) if len(s)]
    return {
        "map": float(np.mean([average_precision(s, y) for s, y in answered])) if answered else float("nan"),
        "mrr": float(np.mean([reciprocal_rank(s, y) for s, y in answered])) if answered else float("nan"),
        "auc": auc([b for b, a in best if a], [b for b, a in best if not a]),
    }


def timed(score: Callable[[], list[np.ndarray]]) -> tuple[list[np.ndarray], float, float]:
    started, started_cpu = time.perf_counter(), time.process_time()
    out = score()
    return out, time.process_time() - started_cpu, time.perf_counter() - started


def cosines(embedder: LocalEmbedder, queries: Sequence[Query]) -> list[np.ndarray]:
    """Each query's cosine with each of its sentences (the vectors are unit length)."""
    vectors = embedder.embed_queries([q.question for q in queries])
    texts = embedder.embed_documents([t for q in queries for t in q.texts])
    out, start = [], 0
    for query, vector in zip(queries, vectors, strict=True):
        out.append(texts[start : start + len(query.texts)] @ vector)
        start += len(query.texts)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"the WikiQA folder (default {DATA})")
    parser.add_argument("--split", choices=tuple(SPLITS), default="test")
    parser.add_argument("--limit", type=int, help="the first N queries only (a quick run)")
    parser.add_argument("--no-title", dest="title", action="store_false", help="the sentence without its title")
    parser.add_argument("--precision", choices=READER_PRECISIONS, help="default: PGCITE_READER, or fp32 if off")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()

    files = [args.data / name for name in SPLITS[args.split]]
    if missing := [f for f in files if not f.is_file()]:
        print(
            f"skipped: {missing[0]} not found (WikiQA lives in ../shared/data/wikiqa beside the repo, or give --data)"
        )
        return 0
    queries: list[Query] = []
    skipped: dict[str, int] = {}
    titled = False
    for path in files:
        read, skipped[path.name], with_title = read_split(path, args.title)
        queries, titled = queries + read, titled or with_title
    queries = queries[: args.limit] if args.limit else queries

    settings = load_settings()
    precision = args.precision or (settings.reader if settings.reader in READER_PRECISIONS else "fp32")
    model = settings.embedding_model if settings.embedding_model in LOCAL_MODELS else LOCAL_MODEL
    embedder = LocalEmbedder(model_cache=settings.model_cache, model=model)
    embedder.warm_up()
    reader = load_reader(bundled_model_dir(), settings.model_cache, precision)

    results = {}
    for name, score in (
        ("reader", lambda: [reader.scores(q.question, q.texts) for q in queries]),
        ("cosine", lambda: cosines(embedder, queries)),
    ):
        scores, cpu, wall = timed(score)
        results[name] = judge(queries, scores) | {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}

    answered = sum(any(q.labels) for q in queries)
    gain = results["reader"]["mrr"] - results["cosine"]["mrr"]
    meets = bool(gain >= TARGET_MRR_GAIN and results["reader"]["auc"] >= TARGET_AUC)
    summary = {
        "split": args.split,
        "data": str(args.data),
        "title": titled,
        "reader_precision": precision,
        "cosine_model": model,
        "queries": len(queries),
        "answered": answered,
        "unanswered": len(queries) - answered,
        "pairs": sum(len(q.texts) for q in queries),
        "skipped_rows": skipped,
        "scorers": {
            n: {k: round(v, 4) if k in ("map", "mrr", "auc") else v for k, v in r.items()} for n, r in results.items()
        },
        "mrr_gain": round(gain, 4),
        "meets_target": meets,
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(
        f"WikiQA {args.split}{f' (first {args.limit})' if args.limit else ''}: {summary['queries']} queries "
        f"({answered} answered, {summary['unanswered']} unanswered), {summary['pairs']} pairs; "
        f"rows skipped {', '.join(f'{k} {v}' for k, v in skipped.items())}; "
        f"candidate {'title + sentence' if titled else 'sentence'}"
    )
    labels = {"reader": f"reader ({precision})", "cosine": f"cosine ({model})"}
    width = max(len(s) for s in labels.values())
    print(f"{'scorer':<{width}}  {'MAP':>6}  {'MRR':>6}  {'AUC':>6}  {'CPU s':>7}")
    for name, r in results.items():
        print(f"{labels[name]:<{width}}  {r['map']:>6.3f}  {r['mrr']:>6.3f}  {r['auc']:>6.3f}  {r['cpu_s']:>7.1f}")
    print(
        f"target (reader MRR >= cosine's + {TARGET_MRR_GAIN:.2f}, AUC >= {TARGET_AUC:.2f}): "
        f"{'met' if meets else 'not met'} (MRR {gain:+.3f} over cosine, AUC {results['reader']['auc']:.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
