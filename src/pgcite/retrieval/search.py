"""Retrieve widely, feed narrowly.

`retrieve` gathers every chunk within the relevance bar (not a fixed k); `select_context` drops
near-duplicates and hands the generator only the best few within a token budget, saying why each
other candidate was left out."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pgcite.config import DEFAULT_SEARCH_MODE
from pgcite.embedding.models import Embedder
from pgcite.errors import PgciteError
from pgcite.retrieval.languages import resolve_languages
from pgcite.retrieval.rerank import Reranker
from pgcite.safety import check_text
from pgcite.store import Store, WordMatch
from pgcite.vocabulary import Dropped, Passage, SearchFilter, SearchHit

# A question about a release names one, or asks what changed, when, or since which version.
_RELEASE_QUESTION = re.compile(
    r"\b(?:v?\d+\.\d+(?:\.\d+)?|releases?|released|release notes?|change ?logs?|changed|changes|version|versions"
    r"|deprecated|deprecation|removed|introduced|added in|new in|since when|what'?s new|upgrad\w*|breaking"
    r"|when (?:did|was|were|will)|what date|which date|on what day|generally available|launch\w*|announc\w*)\b",
    re.IGNORECASE,
)


def is_release_question(question: str) -> bool:
    return _RELEASE_QUESTION.search(question) is not None


# Cosine distance a chunk must be within to count as relevant (score = 1 - distance >= 0.42) in a
# source that has not been calibrated yet (calibration.py measures each source's own at ingest).
DEFAULT_MAX_DISTANCE = 0.58
# Further than this, nothing at all is close: the bundled model's median best score of an off-topic
# question is about 0.2 (calibration.py measures each source's own).
DEFAULT_FLOOR = 0.8
# In text and hybrid modes a chunk may be further away the more of the question's word weight
# (IDF) it holds: up to WORD_MATCH_SLACK beyond the bar, reached at WORD_MATCH_COVERAGE. A question
# worded unlike its answer ("keep a drafts folder out of the index" for the section on --exclude)
# is still close in words. Calibration: docs/answering.md ("Passing on words"), bench/relevance_bar.py.
WORD_MATCH_COVERAGE = 0.55
WORD_MATCH_SLACK = 0.17
# How many candidates "widely" may mean at most: beyond a few dozen, a chunk is never fed.
MAX_CANDIDATES = 50
MAX_K = 100  # the most results one search returns (CLI and HTTP alike)
# Word 3-shingle Jaccard similarity above which two chunks count as the same passage.
NEAR_DUPLICATE = 0.6


def _check_query(query: str, filters: SearchFilter = SearchFilter()) -> None:
    if not query.strip():
        raise PgciteError("the question is empty; ask something")
    # PostgreSQL text cannot hold NUL, nor UTF-8 a lone surrogate (JSON's \\ud800): said of the value, not
    # as a database fault (a NUL read "check the server", a surrogate was a 500).
    for what, value in (
        ("question", query),
        ("source", filters.source),
        ("path", filters.path_prefix),
        ("version", filters.version),
    ):
        try:
            check_text(value or "")
        except ValueError as exc:
            raise PgciteError(f"the {what}: {exc}; remove it") from None


def _embed_question(store: Store, embedder: Embedder, query: str, filters: SearchFilter = SearchFilter()):
    _check_query(query, filters)
    store.check_model(embedder.model)
    vector = embedder.embed_query(query)
    store.check_model(embedder.model, len(vector))
    return vector


def search(
    store: Store,
    embedder: Embedder,
    query: str,
    *,
    k: int = 5,
    mode: str = DEFAULT_SEARCH_MODE,
    filters: SearchFilter = SearchFilter(),
    reranker: Reranker | None = None,
) -> list[SearchHit]:
    """The k best chunks, best first (what `pgcite search` shows); with a reranker, the k best of
    its order of the first stage's best candidates."""
    if not 1 <= k <= MAX_K:
        raise PgciteError(f"k is from 1 to {MAX_K} (got {k})")
    vector = _embed_question(store, embedder, query, filters)
    filters = resolve_languages(store, query, filters)
    hits = store.search(
        vector,
        query,
        max(k, reranker.candidates) if reranker else k,
        mode=mode,
        filters=filters,
        demote_changelogs=not is_release_question(query),
    )
    return reranker.rerank(query, hits)[:k] if reranker else hits


def retrieve(
    store: Store,
    embedder: Embedder,
    question: str,
    *,
    max_distance: float | None = None,
    mode: str = DEFAULT_SEARCH_MODE,
    filters: SearchFilter = SearchFilter(exclude_flagged=True),
    loose: bool = False,
    reranker: Reranker | None = None,
) -> list[SearchHit]:
    """Every chunk within the relevance bar (up to MAX_CANDIDATES), best first. The bar is
    `max_distance` when given, else each source's own, measured for its model (calibration.py);
    `loose`: its floor instead, where nothing is closer than a typical off-topic question."""
    if max_distance is not None and not 0 < max_distance <= 2:
        raise PgciteError(f"the threshold is a cosine distance between 0 and 2 (got {max_distance})")
    vector = _embed_question(store, embedder, question, filters)
    filters = resolve_languages(store, question, filters)
    hits = store.search(
        vector,
        question,
        MAX_CANDIDATES,
        mode=mode,
        filters=filters,
        max_distance=max_distance,
        calibrated=True,
        bar_key="floor" if loose else "bar",
        default_bar=DEFAULT_FLOOR if loose else DEFAULT_MAX_DISTANCE,
        word_match=WordMatch(WORD_MATCH_COVERAGE, WORD_MATCH_SLACK),
        demote_changelogs=not is_release_question(question),
    )
    return reranker.rerank(question, hits) if reranker else hits


# A name in a question: inline code, or a word after the first of its sentence that is capitalised
# ("Terraform", "LINQPad") or joins letters and digits ("IPv6", "S3"). Not file names or hosts:
# those are the asker's own ("my tsconfig.json", "acme.github.io").
_TERM = re.compile(r"`([^`]+)`|([A-Za-z0-9]+(?:[.+#-][A-Za-z0-9+#]+)*)")
_PART = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")


def names_in(question: str) -> list[str]:
    """What the question names: products, settings, identifiers (see _TERM)."""
    out: list[str] = []
    sentence_start = True
    for match in _TERM.finditer(question):
        code, word = match.groups()
        first, sentence_start = sentence_start, question[match.end() : match.end() + 1] in (".", "?", "!")
        if code:
            out.append(code)
        elif not first and len(word) > 1 and (word[0].isupper() or re.search(r"[a-z][A-Z]|[A-Za-z]\d", word)):
            out.append(word)
    return list(dict.fromkeys(out))


def unknown_names(store: Store, question: str, filters: SearchFilter = SearchFilter()) -> list[str]:
    """The names of the question that no document of the source uses, or one of whose parts
    ("Idempotency" of "Idempotency-Key") none does: the documents cannot say anything about them
    ("Is there a Terraform provider?" of docs that never mention Terraform)."""
    names = names_in(question)
    parts = {name: [name, *(_PART.findall(name) if re.search(r"[^A-Za-z0-9]", name) else [])] for name in names}
    unknown = set(store.unknown_terms(list(dict.fromkeys(p for ps in parts.values() for p in ps)), filters))
    return [name for name in names if any(p in unknown for p in parts[name])]


# A name the docs never use is what the question is about when leaving it out moves the question's
# vector by at least this much (1 - cosine, times the source's vector scale, so in the bundled
# model's units): "How do I deploy to Netlify?" turns on Netlify, "...on my phone over the LAN?" does
# not turn on LAN. Chosen on the held-out tune halves (docs/answering.md, "Held-out sites").
NAME_SHIFT = 0.08


def names_asked_about(embedder: Embedder, question: str, names: Sequence[str], vector_scale: float = 1.0) -> list[str]:
    """Those of `names` that the question turns on: without one of them it asks something else.
    A generic term the docs spell otherwise ("Ubuntu" where they say "Linux") is context."""
    if not names:
        return []
    rests = [" ".join(re.sub(r"`?" + re.escape(name) + r"`?", " ", question).split()) for name in names]
    vectors = embedder.embed_queries([question, *rests])
    return [
        name
        for name, vector in zip(names, vectors[1:], strict=True)
        if (1.0 - float(vectors[0] @ vector)) * vector_scale >= NAME_SHIFT
    ]


@dataclass(frozen=True)
class Context:
    passages: list[Passage]  # fed to the generator, numbered from 1
    dropped: list[Dropped]  # passed the bar but not fed, with why


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def _similarity(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def select_context(
    hits: Sequence[SearchHit], *, context: int, token_budget: int, count_tokens: Callable[[str], int]
) -> Context:
    """The best `context` hits that are not near-duplicates and fit `token_budget` together."""
    if context < 1:
        raise PgciteError(f"context must be at least 1 section (got {context})")
    fed: list[tuple[SearchHit, set]] = []
    dropped: list[Dropped] = []
    used = 0
    for hit in hits:
        shingles = _shingles(hit.content)
        twin = next((i for i, (_, s) in enumerate(fed, 1) if _similarity(shingles, s) >= NEAR_DUPLICATE), None)
        if twin is not None:
            dropped.append(Dropped(hit, f"near-duplicate of [{twin}]"))
            continue
        if len(fed) >= context:
            dropped.append(Dropped(hit, f"beyond the {context} best"))
            continue
        tokens = count_tokens(f"{hit.breadcrumb}\n{hit.content}")
        if fed and used + tokens > token_budget:
            dropped.append(Dropped(hit, f"over the {token_budget}-token context budget ({tokens} tokens)"))
            continue
        fed.append((hit, shingles))
        used += tokens
    return Context([Passage(n, hit) for n, (hit, _) in enumerate(fed, 1)], dropped)
