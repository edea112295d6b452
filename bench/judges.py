"""The reader's two judges nobody tunes on, WikiQA and ClapNQ dev, beside the bundled model's
cosine, in one run.

    .venv/bin/python bench/judges.py                         # the reader at the app's precision (fp32 if off)
    PGCITE_READER=fp32 .venv/bin/python bench/judges.py --json
    .venv/bin/python bench/judges.py --limit 50 --no-title --precision int8

WikiQA (Yang, Yih and Meek, 2015; ../shared/data/wikiqa, see its SOURCE.txt) is for EVALUATION
ONLY: its licence (Microsoft Research Data License Agreement) is not an open one, so no model that
ships is trained or tuned on it, train split included. Each Bing query comes with the sentences of
one Wikipedia summary, each labelled 1 if it answers the query. Every sentence is scored with (a)
the reader (a logit, load_reader as the app loads it, from the same model cache) and (b) the cosine
of the query's and the sentence's all-MiniLM-L6-v2 vectors. The sentence is read as pgcite reads a
section, after its heading breadcrumb: "DocumentTitle\\nsentence", where the split has a title (the
test split; --no-title for the sentence alone). Questions are grouped by their text: the train
file's QuestionID numbers rows, not questions. Rows whose column count differs from the header's
(13 in train: a tab inside the sentence) are skipped and counted. Printed: MAP and MRR over the
queries with an answering sentence (the standard protocol; a tie keeps the file's order), and the
AUC of each query's best score, answered queries over unanswered ones (ties count half).

ClapNQ dev (Rosenthal et al., 2024; ../shared/data/clapnq-dev): 600 search queries people typed,
each with one passage of the page the query led to; 300 are not answered by it (the docs failure:
on the topic, not the answer). Each passage is scored as a whole ("title\\ntext") and by its best
sentence, by cosine and by the reader; and by the reader as pgcite reads a section (its best window
of sentences, where the reader reads windows). Printed: the AUC of each score, answerable over
unanswerable; and for the answerable queries, how often the best sentence is one the annotator
selected. ClapNQ is Apache-2.0 (the passages CC BY-SA 3.0).

Each scorer's CPU seconds (time.process_time, every thread, the models' loading excluded) are
printed too. The targets (issue 61): reader MRR on WikiQA at least 0.82, ClapNQ AUC at least
0.93; verdicts are printed, not asserted. --json prints one JSON object. No database is started."""

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

from scratch import auc  # noqa: E402

from pgcite.config import LOCAL_MODEL, load_settings  # noqa: E402
from pgcite.embedding.models import LOCAL_MODELS, LocalEmbedder, bundled_model_dir  # noqa: E402
from pgcite.embedding.reader import READER_PRECISIONS, load_reader, reads_windows, windows  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SPLITS = {"test": ("WikiQA-test.tsv",), "train": ("WikiQA-train.tsv",), "all": ("WikiQA-test.tsv", "WikiQA-train.tsv")}
TARGET_MRR = 0.82  # WikiQA, the reader's (cosine .760)
TARGET_CLAPNQ_AUC = 0.93  # ClapNQ, answerable over unanswerable (cosine of the passage .880)


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


@dataclass
class Passage:
    query: str
    title: str
    text: str
    sentences: list[str]
    selected: set[int]  # the sentences the annotator selected (answerable rows)
    answerable: bool


def read_clapnq(folder: Path) -> list[Passage]:
    out = []
    for name, answerable in (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False)):
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            passage = row["passages"][0]
            sentences = [s.strip() for s in passage["sentences"] if s.strip()]
            chosen = {s.strip() for o in row["output"] for s in o.get("selected_sentences") or []}
            out.append(
                Passage(
                    row["input"],
                    passage["title"],
                    passage["text"],
                    sentences,
                    {i for i, s in enumerate(sentences) if s in chosen},
                    answerable,
                )
            )
    return out


def clapnq_scores(passages: Sequence[Passage], score: Callable[[str, list[str]], np.ndarray]) -> dict[str, list]:
    """Per passage: its score as a whole, each sentence's, and (for the reader) each window's."""
    out: dict[str, list] = {"passage": [], "sentences": [], "windows": []}
    for p in passages:
        texts = [f"{p.title}\n{p.text}"] + [f"{p.title}\n{s}" for s in p.sentences]
        texts += [f"{p.title}\n{w}" for w in windows(p.sentences)]
        scores = score(p.query, texts)
        out["passage"].append(float(scores[0]))
        out["sentences"].append(scores[1 : 1 + len(p.sentences)])
        out["windows"].append(float(scores[1 + len(p.sentences) :].max()))
    return out


def judge_clapnq(passages: Sequence[Passage], scored: dict[str, list], windowed: bool) -> dict[str, float]:
    answerable = [p.answerable for p in passages]

    def separation(values: Sequence[float]) -> float:
        return auc(
            [v for v, a in zip(values, answerable, strict=True) if a],
            [v for v, a in zip(values, answerable, strict=True) if not a],
        )

    best = [float(s.max()) for s in scored["sentences"]]
    chosen = [
        int(np.argmax(s)) in p.selected
        for p, s in zip(passages, scored["sentences"], strict=True)
        if p.answerable and p.selected
    ]
    out = {
        "auc_passage": separation(scored["passage"]),
        "auc_best_sentence": separation(best),
        "selected_first": float(np.mean(chosen)) if chosen else float("nan"),
    }
    if windowed:
        out["auc_section"] = separation(scored["windows"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DATA, help=f"the folder of wikiqa/ and clapnq-dev/ (default {DATA})"
    )
    parser.add_argument("--split", choices=tuple(SPLITS), default="test", help="WikiQA's")
    parser.add_argument("--limit", type=int, help="the first N queries of each judge only (a quick run)")
    parser.add_argument("--no-title", dest="title", action="store_false", help="WikiQA's sentence without its title")
    parser.add_argument("--precision", choices=READER_PRECISIONS, help="default: PGCITE_READER, or fp32 if off")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    args = parser.parse_args()

    files = [args.data / "wikiqa" / name for name in SPLITS[args.split]]
    clapnq = args.data / "clapnq-dev"
    if missing := [f for f in [*files, clapnq] if not f.exists()]:
        print(f"skipped: {missing[0]} not found (the judges live in ../shared/data beside the repo, or give --data)")
        return 0
    queries: list[Query] = []
    skipped: dict[str, int] = {}
    titled = False
    for path in files:
        read, skipped[path.name], with_title = read_split(path, args.title)
        queries, titled = queries + read, titled or with_title
    passages = read_clapnq(clapnq)
    if args.limit:  # as many answerable as unanswerable passages
        queries = queries[: args.limit]
        passages = [p for a in (True, False) for p in [p for p in passages if p.answerable == a][: args.limit // 2]]

    settings = load_settings()
    precision = args.precision or (settings.reader if settings.reader in READER_PRECISIONS else "fp32")
    model = settings.embedding_model if settings.embedding_model in LOCAL_MODELS else LOCAL_MODEL
    embedder = LocalEmbedder(model_cache=settings.model_cache, model=model)
    embedder.warm_up()
    reader = load_reader(bundled_model_dir(), settings.model_cache, precision)

    def cosine(query: str, texts: list[str]) -> np.ndarray:
        return embedder.embed_documents(texts) @ embedder.embed_queries([query])[0]

    wikiqa, clap = {}, {}
    for name, score in (("reader", reader.scores), ("cosine", cosine)):
        scores, cpu, wall = timed(lambda score=score: [score(q.question, q.texts) for q in queries])
        wikiqa[name] = judge(queries, scores) | {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}
        scored, cpu, wall = timed(lambda score=score: clapnq_scores(passages, score))
        windowed = name == "reader" and reads_windows()
        clap[name] = judge_clapnq(passages, scored, windowed) | {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}

    def rounded(results: dict) -> dict:
        return {n: {k: v if k.endswith("_s") else round(v, 4) for k, v in r.items()} for n, r in results.items()}

    reader_auc = max(v for k, v in clap["reader"].items() if k.startswith("auc"))
    summary = {
        "reader_precision": precision,
        "cosine_model": model,
        "wikiqa": {
            "split": args.split,
            "title": titled,
            "queries": len(queries),
            "answered": sum(any(q.labels) for q in queries),
            "pairs": sum(len(q.texts) for q in queries),
            "skipped_rows": skipped,
            "scorers": rounded(wikiqa),
            "meets_target": bool(wikiqa["reader"]["mrr"] >= TARGET_MRR),
        },
        "clapnq": {
            "passages": len(passages),
            "answerable": sum(p.answerable for p in passages),
            "scorers": rounded(clap),
            "meets_target": bool(reader_auc >= TARGET_CLAPNQ_AUC),
        },
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    w = summary["wikiqa"]
    print(
        f"WikiQA {args.split}{f' (first {args.limit})' if args.limit else ''}: {w['queries']} queries "
        f"({w['answered']} answered), {w['pairs']} pairs; rows skipped "
        f"{', '.join(f'{k} {v}' for k, v in skipped.items())}; candidate {'title + sentence' if titled else 'sentence'}"
    )
    labels = {"reader": f"reader ({precision})", "cosine": f"cosine ({model})"}
    width = max(len(s) for s in labels.values())
    print(f"{'scorer':<{width}}  {'MAP':>6}  {'MRR':>6}  {'AUC':>6}  {'CPU s':>7}")
    for name, r in wikiqa.items():
        print(f"{labels[name]:<{width}}  {r['map']:>6.3f}  {r['mrr']:>6.3f}  {r['auc']:>6.3f}  {r['cpu_s']:>7.1f}")
    print(f"target (reader MRR >= {TARGET_MRR:.2f}): {'met' if w['meets_target'] else 'not met'}")
    c = summary["clapnq"]
    print(f"\nClapNQ dev: {c['passages']} passages ({c['answerable']} answerable); AUC answerable over unanswerable")
    print(
        f"{'scorer':<{width}}  {'passage':>7}  {'best sentence':>13}  {'section':>7}  "
        f"{'selected first':>14}  {'CPU s':>7}"
    )
    for name, r in clap.items():
        section = f"{r['auc_section']:>7.3f}" if "auc_section" in r else f"{'-':>7}"
        print(
            f"{labels[name]:<{width}}  {r['auc_passage']:>7.3f}  {r['auc_best_sentence']:>13.3f}  {section}  "
            f"{r['selected_first']:>14.3f}  {r['cpu_s']:>7.1f}"
        )
    print(f"target (reader AUC >= {TARGET_CLAPNQ_AUC:.2f}): {'met' if c['meets_target'] else 'not met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
