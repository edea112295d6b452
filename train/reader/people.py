"""Pairs from questions people wrote: SQuAD 2.0 (crowd workers' questions on Wikipedia paragraphs,
about half of them unanswerable from the very paragraph they were written on).

    .venv/bin/python train/reader/people.py --work /work/reader-work \
        --squad ../shared/data/squad2-dev-half/dev-v2.0.json --squad squad_2.0_dev_complete_11873.xlsx

Several --squad files may be given, the official JSON or the spreadsheet that repackages the whole dev
set (manifest.json says where); an article already taken from an earlier file is skipped, so the
halves join without a question twice.

Written to WORK/pairs/squad-ARTICLE.jsonl in build_data.py's shape (question, text, label), so
train.py reads them beside the docs sites' pairs (and holds DEV_ARTICLES out, as it holds docs
sites out). Each paragraph is cut into windows about the length of a pgcite section, because a whole
SQuAD paragraph is longer than the reader reads:
- an answerable question: the window holding its answer (label 1), and the windows of the article's
  other paragraphs that share the most words with it (label 0: on the same topic, not the answer);
- an unanswerable question: the window holding its "plausible answer", the span a careless reader
  would pick (label 0, read alone): the passage that talks about the question without answering it.
SQuAD 2.0 is CC BY-SA 4.0; the model card says so."""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
from pathlib import Path

SEED = 41
WINDOW = 700  # characters: about 160 of MiniLM's tokens, a pgcite section's length
NEGATIVES = 2  # other paragraphs per answerable question (the reader is trained on a few thousand)
WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom whose "
    "when where why how did do does that this these those it its as than not no".split()
)


def sentences(text: str) -> list[tuple[int, int]]:
    """Start and end offsets of each sentence (a full stop, question or exclamation mark and a space)."""
    spans, start = [], 0
    for m in re.finditer(r"[.!?][\"')\]]?\s+", text):
        spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def window(text: str, at: int | None, rng: random.Random) -> str:
    """Whole sentences around offset `at` (a random place when None), at most about WINDOW characters."""
    if len(text) <= WINDOW:
        return text
    spans = sentences(text)
    if at is None:
        at = spans[rng.randrange(len(spans))][0]
    centre = next((i for i, (s, e) in enumerate(spans) if s <= at < e), len(spans) - 1)
    lo = hi = centre
    while True:
        grown = False
        for lo2, hi2 in ((lo - 1, hi), (lo, hi + 1)):
            if lo2 >= 0 and hi2 < len(spans) and spans[hi2][1] - spans[lo2][0] <= WINDOW:
                lo, hi, grown = lo2, hi2, True
        if not grown:
            break
    return text[spans[lo][0] : spans[hi][1]].strip()


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP}


def article_pairs(article: dict, rng: random.Random) -> list[dict]:
    title = article["title"].replace("_", " ")
    paragraphs = [p["context"] for p in article["paragraphs"]]
    bags = [words(p) for p in paragraphs]
    rows = []
    for i, paragraph in enumerate(article["paragraphs"]):
        for qa in paragraph["qas"]:
            question = qa["question"].strip()
            if qa.get("is_impossible"):
                plausible = qa.get("plausible_answers") or [{}]
                text = window(paragraph["context"], plausible[0].get("answer_start"), rng)
                rows.append({"question": question, "text": f"{title}\n{text}", "label": 0, "kind": "unanswerable"})
                continue
            answer = qa["answers"][0]
            rows.append(
                {
                    "question": question,
                    "text": f"{title}\n{window(paragraph['context'], answer['answer_start'], rng)}",
                    "label": 1,
                    "kind": "answer",
                }
            )
            asked = words(question)
            others = sorted((j for j in range(len(paragraphs)) if j != i), key=lambda j: (-len(asked & bags[j]), j))
            # A paragraph holding the answer's words may answer it too: not a safe negative.
            answer_text = answer["text"].lower()
            others = [j for j in others if answer_text not in paragraphs[j].lower()][:NEGATIVES]
            rows += [
                {
                    "question": question,
                    "text": f"{title}\n{window(paragraphs[j], None, rng)}",
                    "label": 0,
                    "kind": "topic",
                }
                for j in others
            ]
    return rows


def cell_list(cell: object) -> list:
    """A cell written as a Python list; a bare value (the sheet writes some that way) as one item, "--" as none."""
    if cell is None or str(cell).strip() in ("", "--"):
        return []
    try:
        value = ast.literal_eval(str(cell))
    except (ValueError, SyntaxError):
        return [cell]
    return value if isinstance(value, list) else [value]


def spreadsheet_articles(path: Path) -> list[dict]:
    """SQuAD-shaped articles from the spreadsheet (one row a question; context, answers and their
    offsets written as Python lists)."""
    import openpyxl  # the train extra

    rows = openpyxl.load_workbook(path, read_only=True).active.iter_rows(values_only=True)
    header = [str(c) for c in next(rows)]
    articles: dict[str, dict[str, list]] = {}
    for values in rows:
        row = dict(zip(header, values, strict=True))
        impossible = str(row["is_impossible"]) == "True"
        context = cell_list(row["context"])[0]
        spans = ("plausible_answers", "plausible_answers_start") if impossible else ("answers", "answer_start")
        answers = [
            {"text": str(t), "answer_start": int(a)}
            for t, a in zip(cell_list(row[spans[0]]), cell_list(row[spans[1]]), strict=False)
        ]
        if not answers and not impossible:
            continue  # an answer the sheet lost: neither a safe positive nor a negative
        qa = {"question": row["question"], "is_impossible": impossible}
        qa |= {"plausible_answers": answers, "answers": []} if impossible else {"answers": answers}
        articles.setdefault(row["title"], {}).setdefault(context, []).append(qa)
    return [
        {"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}
        for title, paragraphs in articles.items()
    ]


def load_articles(path: Path) -> list[dict]:
    return spreadsheet_articles(path) if path.suffix == ".xlsx" else json.loads(path.read_text())["data"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--squad", type=Path, action="append", required=True, help="a SQuAD 2.0 file (.json or .xlsx); repeatable"
    )
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    data, titles = [], set()
    for path in args.squad:
        data += [a for a in load_articles(path) if a["title"] not in titles]
        titles = {a["title"] for a in data}
    rng = random.Random(SEED)
    out = args.work / "pairs"
    out.mkdir(parents=True, exist_ok=True)
    total = {"answer": 0, "unanswerable": 0, "topic": 0}
    for article in data:
        rows = article_pairs(article, rng)
        name = "squad-" + re.sub(r"[^a-z0-9]+", "-", article["title"].lower()).strip("-")
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        for r in rows:
            total[r["kind"]] += 1
    print(f"{len(data)} articles: {json.dumps(total)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
