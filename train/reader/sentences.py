"""Sentence pairs from questions people wrote: SQuAD 1.1 train (87,599 crowd workers' questions on
18,896 Wikipedia paragraphs; every answer's text occurs word for word in its paragraph, so the
sentence that answers is known).

    .venv/bin/python train/reader/sentences.py --work /work/reader-work \
        --squad ../shared/data/squad11-train/train-v1.1.json

Written to WORK/pairs/sent-ARTICLE.jsonl in build_data.py's shape (question, text, label), so
train.py reads them as it reads the other pairs (`--only sent`). Each question's group:
- the sentence holding its answer (label 1), the breadcrumb-like title in front;
- the sentence of its own paragraph that shares the most words with it (label 0: the same passage,
  not the answer);
- the sentences of the article's other paragraphs that share the most words with it (label 0: the
  same topic, not the answer), from the paragraphs nearest the question.
A unit is sometimes a window of two sentences (the answer's with a neighbour, and so for the
negatives alike), since pgcite reads a section as windows of one to three sentences. A sentence that
holds the answer's text is never a negative. Articles that the judges beside the data also use
(JUDGED, from its SOURCE.txt) are left out, so that a judge never scores what the reader learnt.
SQuAD 1.1 is CC BY-SA 4.0; the model card says so."""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from people import sentences, words

SEED = 41
SAME_PARAGRAPH = 1  # negatives from the answer's own paragraph
OTHER_PARAGRAPHS = 2  # negatives from the article's other paragraphs
NEAREST = 4  # of the article's paragraphs, those sharing the most words with the question
PAIRED = 0.3  # a share of groups whose units are two sentences
# Articles clapnq-dev or WikiQA's test file also draw on (squad11-train/SOURCE.txt).
JUDGED = frozenset(
    t.lower()
    for t in (
        "American Idol", "Military history of the United States", "Modern history", "PlayStation 3",
        "Political party", "Space Race", "The Bronx", "Time", "Beer", "Central Intelligence Agency",
        "Culture", "Elizabeth II", "Gramophone record", "Korean War", "Muslim world",
        "Nonprofit organization", "Qing dynasty", "United States dollar",
    )
)  # fmt: skip


def split(text: str) -> list[str]:
    return [s for s in (text[a:b].strip() for a, b in sentences(text)) if s]


def unit(sents: list[str], i: int, paired: bool) -> str:
    """Sentence i alone, or with its next sentence (the previous one at the paragraph's end)."""
    if not paired or len(sents) < 2:
        return sents[i]
    return " ".join(sents[i : i + 2]) if i + 1 < len(sents) else " ".join(sents[i - 1 : i + 1])


def answer_sentence(sents: list[str], answer: str) -> int | None:
    """The sentence holding the answer's text (the first, if several do); None if it spans two."""
    for folded in (False, True):
        for i, s in enumerate(sents):
            if (answer.lower() in s.lower()) if folded else (answer in s):
                return i
    return None


def most_shared(
    asked: set[str], paragraphs: list[list[str]], candidates: list[tuple[int, int]], n: int, rng: random.Random
) -> list[tuple[int, int]]:
    """The n (paragraph, sentence) candidates sharing the most words with the question; ties by chance."""
    keyed = [(-len(asked & words(paragraphs[p][s])), rng.random(), (p, s)) for p, s in candidates]
    return [c for *_, c in sorted(keyed)[:n]]


def article_groups(article: dict, rng: random.Random) -> list[dict]:
    title = article["title"].replace("_", " ")
    paragraphs = [split(p["context"]) for p in article["paragraphs"]]
    bags = [words(p["context"]) for p in article["paragraphs"]]
    rows = []
    for i, paragraph in enumerate(article["paragraphs"]):
        sents = paragraphs[i]
        for qa in paragraph["qas"]:
            question = qa["question"].strip()
            answer = qa["answers"][0].strip()
            at = answer_sentence(sents, answer) if answer else None
            if at is None:
                continue  # an answer across sentences: its unit is not one sentence
            asked = words(question)
            paired = rng.random() < PAIRED
            # A unit holding the answer's text may answer too: never a negative.
            own = [
                (i, s) for s in range(len(sents)) if s != at and answer.lower() not in unit(sents, s, paired).lower()
            ]
            near = sorted((j for j in range(len(paragraphs)) if j != i), key=lambda j: (-len(asked & bags[j]), j))
            other = [
                (j, s)
                for j in near[:NEAREST]
                for s in range(len(paragraphs[j]))
                if answer.lower() not in unit(paragraphs[j], s, paired).lower()
            ]
            negatives = most_shared(asked, paragraphs, own, SAME_PARAGRAPH, rng)
            negatives += most_shared(asked, paragraphs, other, OTHER_PARAGRAPHS, rng)
            rows.append({"question": question, "text": f"{title}\n{unit(sents, at, paired)}", "label": 1})
            rows += [
                {"question": question, "text": f"{title}\n{unit(paragraphs[p], s, paired)}", "label": 0}
                for p, s in negatives
            ]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squad", type=Path, required=True, help="SQuAD 1.1's train-v1.1.json")
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    data = json.loads(args.squad.read_text())["data"]
    rng = random.Random(SEED)
    out = args.work / "pairs"
    out.mkdir(parents=True, exist_ok=True)
    articles = questions = pairs = left_out = 0
    for article in data:
        if article["title"].replace("_", " ").lower() in JUDGED:
            left_out += 1
            continue
        rows = article_groups(article, rng)
        name = "sent-" + re.sub(r"[^a-z0-9]+", "-", article["title"].lower()).strip("-")
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        articles += 1
        questions += sum(r["label"] for r in rows)
        pairs += len(rows)
    print(f"{articles} articles ({left_out} left out for the judges), {questions} questions, {pairs} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
