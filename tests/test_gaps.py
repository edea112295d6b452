"""Grouping unanswered questions by need (src/pgcite/learn/gaps.py): the bookkeeping and the word channel on
hand-made vectors, and the chosen METHOD/THRESHOLD/WORDS on a held-out set of paraphrases with the real
model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import combinations

import numpy as np
import pytest

from pgcite.learn.gaps import THRESHOLD, WORDS, Asked, content_words, distances, group_questions, word_similarity

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def no_scipy(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("scipy called")

    monkeypatch.setattr("scipy.cluster.hierarchy.linkage", boom)


def test_no_questions_no_gaps(monkeypatch):
    no_scipy(monkeypatch)
    assert group_questions([], np.zeros((0, 3), dtype=np.float32)) == []


def test_one_question_is_one_gap(monkeypatch):
    no_scipy(monkeypatch)
    [gap] = group_questions([Asked("a", " Is there a Helm chart? ", at(0), "refused")], unit(1, 0, 0)[None, :])
    assert (gap.count, gap.last_asked, gap.examples, gap.reasons, gap.ids, gap.closest) == (
        1, at(0), ["Is there a Helm chart?"], {"refused": 1}, ["a"], [])


def test_vectors_must_match_the_questions():
    with pytest.raises(ValueError):
        group_questions([Asked("a", "q", at(0), "down")], np.zeros((2, 3), dtype=np.float32))


def test_identical_wordings_share_a_group_whatever_their_vectors(monkeypatch):
    asked = [Asked("a", "How do I set up SSO?", at(0), "refused"),
             Asked("b", "  how do i   SET UP sso? ", at(5), "down")]
    vectors = np.stack([unit(1, 0, 0), unit(0, 1, 0)])  # orthogonal: cosine distance 1
    no_scipy(monkeypatch)  # one distinct wording: nothing to cluster
    [gap] = group_questions(asked, vectors)
    assert gap.count == 2 and gap.ids == ["b", "a"]
    assert gap.examples == ["how do i   SET UP sso?"]  # one wording, the most recent spelling of it
    assert gap.reasons == {"refused": 1, "down": 1}


def test_identical_wordings_stay_together_among_others():
    asked = [Asked("1", "Pricing?", at(0), "refused"), Asked("2", "Windows support", at(1), "refused"),
             Asked("3", "pricing?", at(2), "refused")]
    vectors = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)])
    gaps = group_questions(asked, vectors)
    assert [g.ids for g in gaps] == [["3", "1"], ["2"]]


def test_the_threshold_is_a_cosine_distance():
    asked = [Asked("a", "one", at(0), "refused"), Asked("b", "two", at(1), "refused")]
    vectors = np.stack([unit(1, 0), unit(np.cos(0.5), np.sin(0.5))])  # distance 1 - cos(0.5) = 0.12
    assert len(group_questions(asked, vectors, threshold=0.2)) == 1
    assert len(group_questions(asked, vectors, threshold=0.1)) == 2


def test_counts_examples_reasons_ids_and_order():
    x, y, z = unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)
    near_x = unit(1, 0.1, 0)
    rows = [  # id, wording, minutes, reason, vector
        ("x1", "Is there a Helm chart?", 0, "refused", x),
        ("x2", "helm chart for kubernetes", 10, "unsupported", near_x),
        ("x3", "Is there a  HELM chart?", 20, "refused", x),
        ("x4", "k8s helm install", 30, "down", near_x),
        ("x5", "helm repo url?", 40, "refused", x),
        ("y1", "Does it run on Windows?", 5, "refused", y),
        ("y2", "windows support", 50, "refused", y),
        ("z1", "Okta SSO", 15, "down", z),
        ("z2", "okta sso", 45, "down", z),
    ]
    asked = [Asked(i, q, at(m), r) for i, q, m, r, _ in rows]
    gaps = group_questions(asked, np.stack([v for *_, v in rows]))
    assert [g.count for g in gaps] == [5, 2, 2]
    helm, windows, okta = gaps  # equal counts: the most recently asked first (50 > 45 minutes)
    assert helm.ids == ["x5", "x4", "x3", "x2", "x1"]
    assert helm.last_asked == at(40)
    assert helm.examples == ["helm repo url?", "k8s helm install", "Is there a  HELM chart?"]
    assert helm.reasons == {"refused": 3, "unsupported": 1, "down": 1}
    assert windows.ids == ["y2", "y1"] and windows.last_asked == at(50)
    assert windows.examples == ["windows support", "Does it run on Windows?"]
    assert okta.ids == ["z2", "z1"] and okta.examples == ["okta sso"]  # the same wording twice
    assert okta.reasons == {"down": 2}
    for gap in gaps:
        keys = [" ".join(e.split()).casefold() for e in gap.examples]
        assert len(gap.examples) <= 3 and len(set(keys)) == len(keys)


def orthogonal(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)


def test_shared_rare_words_group_questions_whose_embeddings_disagree():
    questions = ["Is there a Helm chart?", "helm chart repo", "Does it run on Windows?", "Okta SSO"]
    asked = [Asked(str(n), q, at(n), "refused") for n, q in enumerate(questions)]
    groups = group_questions(asked, orthogonal(4))  # every pair at cosine distance 1
    assert sorted(sorted(g.ids) for g in groups) == [["0", "1"], ["2"], ["3"]]
    assert word_similarity(questions)[0, 1] >= WORDS


def test_words_none_is_the_embedding_alone():
    questions = ["Is there a Helm chart?", "helm chart repo", "Does it run on Windows?", "Okta SSO"]
    asked = [Asked(str(n), q, at(n), "refused") for n, q in enumerate(questions)]
    assert len(group_questions(asked, orthogonal(4), words=None)) == 4


def test_a_word_in_every_question_counts_for_nothing():
    questions = ["pgcite on windows?", "pgcite helm chart", "pgcite okta sso"]  # the product's name
    similarity = word_similarity(questions)
    assert np.allclose(similarity[~np.eye(3, dtype=bool)], 0.0)
    asked = [Asked(str(n), q, at(n), "refused") for n, q in enumerate(questions)]
    assert len(group_questions(asked, orthogonal(3))) == 3


def test_content_words_drop_stopwords_fold_plurals_and_typos():
    terms = content_words(["Does it run on Windows?", "windows 11 support", "how to run on windwos",
                           "What are the prices?", "pricing"])
    assert terms[0] == {"window"} and terms[2] == {"window"} and terms[1] == {"window", "11"}
    assert terms[3] == terms[4] == {"pric"}


def test_a_misspelling_needs_a_near_match_not_a_shared_stem():
    # "report" / "export" and "custom" / "customer" look alike but are different words.
    terms = content_words(["report a vulnerability", "export answers", "custom theme", "customer data"])
    assert terms == [{"report", "vulnerability"}, {"export", "answer"}, {"custom", "them"}, {"customer", "data"}]


def test_every_two_questions_in_a_group_are_close_in_meaning_or_in_words():
    """What a docs writer can check by hand: no pair in a group is there by averaging."""
    rng = np.random.default_rng(7)
    vocabulary = ["helm", "chart", "okta", "sso", "windows", "pricing", "csv", "export", "import", "slack"]
    questions = [" ".join(rng.choice(vocabulary, size=rng.integers(1, 4), replace=False)) + f" q{n}"
                 for n in range(40)]
    vectors = rng.normal(size=(40, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    asked = [Asked(str(n), q, at(n), "refused") for n, q in enumerate(questions)]
    groups = group_questions(asked, vectors)
    assert 1 < len(groups) < 40
    cosine, words = 1 - vectors @ vectors.T, word_similarity(questions)
    assert np.allclose(distances(questions, vectors), np.where(words >= WORDS, 0, np.clip(cosine, 0, 2)), atol=1e-6)
    for group in groups:
        for i, j in combinations(map(int, group.ids), 2):
            assert cosine[i, j] <= THRESHOLD + 1e-6 or words[i, j] >= WORDS
