"""The questions the docs could not answer, grouped so that one need asked ten ways counts once.

Every two questions in a group are close in meaning (cosine distance of their embeddings <= THRESHOLD)
or share rare words (word similarity >= WORDS: cosine of their content words weighted by IDF over the
batch, so the product's name in every question counts for nothing, "okta" or "helm" a lot). Complete
linkage builds the groups; METHOD, THRESHOLD and WORDS come from bench/gaps.py."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from pgcite.vocabulary import wording_key

METHOD = "complete"  # linkage: two groups merge only if every pair of their questions is close
THRESHOLD = 0.60  # cosine distance at which groups are cut (bench/gaps.py)
WORDS = 0.45  # word similarity at which two questions count as close whatever their embeddings
EXAMPLES = 3  # distinct wordings shown per group
MAX_QUESTIONS = 2000  # the newest unanswered questions grouped at once (the distance matrix is n x n)
TYPO_RATIO = 0.85  # difflib ratio at which a word of 5+ letters one typo from another is that word
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for from with without into over under about as via per is are was
    were be been being am do does did done have has had can could will would shall should may might must i me
    my we us our you your it its they them their he she his her this that these those there here what which
    who whom whose when where why how whats any some all every each much many more most not no yes so than
    then too very just only also instead other else own same one up out get set make use using used work works
    run running need want like way possible available supported support please help thanks hi hello ok""".split()
)


@dataclass(frozen=True)
class Asked:
    """One logged question the docs did not answer."""

    id: str
    question: str
    asked_at: datetime  # timezone-aware
    reason: str  # "refused" | "unsupported" | "down"
    stale: bool = False  # an answer whose cited sections have changed since: the change may have fixed it


@dataclass
class Gap:
    """One need, however many ways it was asked."""

    count: int  # how many times it was asked
    last_asked: datetime
    examples: list[str]  # up to 3 distinct wordings, most recent first
    reasons: dict[str, int]  # reason -> count
    ids: list[str]  # the log rows in the group, most recent first
    stale: int = 0  # answers in it that cited sections changed since
    closest: list = field(default_factory=list)  # filled in by the caller (sections the docs do have)


def _stem(word: str) -> str:
    """Light stemming: "prices", "pricing" and "price" all become "pric"."""
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix, shortest in (("ing", 6), ("ed", 5), ("e", 5)):  # in turn: "pricing" -> "pric"
        if word.endswith(suffix) and len(word) >= shortest:
            word = word[: -len(suffix)]
    return word


def content_words(questions: Sequence[str]) -> list[set[str]]:
    """Each question's content words: lower-cased, stopwords dropped, a misspelling of a word used more
    often in the batch ("windwos") spelled as that word, then stemmed."""
    words = [[w for w in re.findall(r"[a-z0-9]+", q.lower()) if len(w) > 1 and w not in STOPWORDS] for q in questions]
    counts = Counter(w for ws in words for w in set(ws))
    spelling: dict[str, str] = {}
    kept: dict[str, list[str]] = {}  # a kept spelling, and each with one letter deleted -> the spelling
    for word in sorted((w for w in counts if len(w) >= 5), key=lambda w: (-counts[w], w)):  # commoner first
        variants = {word} | {word[:i] + word[i + 1 :] for i in range(len(word))}  # one typo apart share one
        near = [
            k
            for k in dict.fromkeys(k for v in variants for k in kept.get(v, []))
            if difflib.SequenceMatcher(None, word, k).ratio() >= TYPO_RATIO
        ]
        spelling[word] = min(near, key=lambda k: (-counts[k], k)) if near else word
        for v in () if near else variants:
            kept.setdefault(v, []).append(word)
    return [{_stem(spelling.get(w, w)) for w in ws} for ws in words]


def word_similarity(questions: Sequence[str]) -> np.ndarray:
    """Cosine between the questions' content-word sets, each word weighted by log(n / questions with it)
    over this batch: shared rare words count, a word in every question counts for nothing."""
    terms = content_words(questions)
    vocabulary = {w: i for i, w in enumerate(sorted(set().union(*terms)))}
    x = np.zeros((len(terms), len(vocabulary)))
    for row, ws in enumerate(terms):
        x[row, [vocabulary[w] for w in ws]] = 1.0
    x *= np.log(len(terms) / np.maximum(x.sum(axis=0), 1.0))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x /= np.where(norms == 0, 1.0, norms)
    return x @ x.T


def distances(questions: Sequence[str], vectors: np.ndarray, words: float | None = WORDS) -> np.ndarray:
    """The square matrix the clustering cuts: the cosine distance, or 0 where the word similarity is at
    least `words` (None: the embeddings alone)."""
    v = np.asarray(vectors, dtype=np.float64)
    d = np.clip(1.0 - v @ v.T, 0.0, 2.0)
    if words is not None:
        d[word_similarity(questions) >= words] = 0.0
    np.fill_diagonal(d, 0.0)
    return d


def gap_of(members: list[Asked]) -> Gap:
    """One group's Gap, from its questions."""
    members = sorted(members, key=lambda a: a.asked_at, reverse=True)  # stable: ties keep log order
    examples: dict[str, str] = {}
    for asked in members:
        examples.setdefault(wording_key(asked.question), asked.question.strip())
    return Gap(
        count=len(members),
        last_asked=members[0].asked_at,
        examples=list(examples.values())[:EXAMPLES],
        reasons=dict(Counter(a.reason for a in members).most_common()),
        ids=[a.id for a in members],
        stale=sum(a.stale for a in members),
    )


def group_questions(
    asked: Sequence[Asked],
    vectors: np.ndarray,
    threshold: float = THRESHOLD,
    *,
    method: str = METHOD,
    words: float | None = WORDS,
) -> list[Gap]:
    """vectors: one L2-normalised row per asked question (same order). Groups sorted by count, then
    most recent. words=None clusters on the embeddings alone."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or len(vectors) != len(asked):
        raise ValueError(f"{len(asked)} questions but vectors of shape {vectors.shape}")
    if not asked:
        return []
    # Cluster distinct wordings, so that identical ones cannot be split (each keeps its first vector).
    first: dict[str, int] = {}
    for row, a in enumerate(asked):
        first.setdefault(wording_key(a.question), row)
    rows = list(first.values())
    labels = np.zeros(len(rows), dtype=int)
    if len(rows) > 1:
        from scipy.cluster.hierarchy import fcluster, linkage
        from scipy.spatial.distance import squareform

        d = distances([asked[r].question for r in rows], vectors[rows], words)
        labels = fcluster(linkage(squareform(d, checks=False), method=method), t=threshold, criterion="distance")
    label_of = dict(zip(first, labels, strict=True))
    groups: dict[int, list[Asked]] = {}
    for a in asked:
        groups.setdefault(int(label_of[wording_key(a.question)]), []).append(a)
    gaps = [gap_of(members) for members in groups.values()]
    gaps.sort(key=lambda g: (g.count, g.last_asked), reverse=True)
    return gaps
