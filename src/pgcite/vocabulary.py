"""The words every stage shares: what a search returns, what a generator is fed, and the events
an answer streams as. Below every module that uses them, so no stage imports another for them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pgcite.errors import PgciteError

REFUSAL = "Not in the documents."
MAX_QUESTION_CHARS = 4000  # a question's length limit, on every channel that takes one


# Names of sources and keys: they appear in URLs (/SOURCE/llms.txt), chat models (pgcite:SOURCE) and
# logs, so they are plain: no markup, no control or direction characters, no separators.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_name(name: str, what: str) -> str:
    """`name`, when it is 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit)."""
    if not _NAME.match(name):
        raise PgciteError(
            f"{what} is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (got {name[:80]!r})"
        )
    return name


def wording_key(question: str) -> str:
    """A question with case and whitespace folded: wordings equal under it are the same wording."""
    return " ".join(question.split()).casefold()


@dataclass(frozen=True)
class SearchHit:
    id: str
    source: str
    path: str
    url: str
    title: str
    heading: str
    breadcrumb: str
    content: str
    distance: float  # cosine distance to the question: the relevance bar applies to it
    flags: tuple[str, ...] = ()  # injection-style text found at ingest
    rank_score: float = 0.0  # what the results are ordered by (1 - distance, BM25, or both fused)
    coverage: float = 0.0  # share of the question's word weight (IDF) in the chunk; 0 in vector mode
    # The units of the chunk that pgcite's reader scored best (its best window), where it reads windows.
    reader_quote: str = ""

    @property
    def score(self) -> float:
        """Cosine similarity to the question, whatever the search mode."""
        return 1.0 - self.distance


@dataclass(frozen=True)
class SearchFilter:
    source: str | None = None
    path_prefix: str | None = None  # e.g. "guide/": only documents under it
    # A version label (a site's own, or the one given at ingest with --version); None: each
    # source's default version, so an answer never mixes versions.
    version: str | None = None
    # A language tag ("fr", "pt-br"); None: the question's own where a source has it, else the
    # source's default language, so an answer never mixes languages (retrieval/languages.py).
    language: str | None = None
    # (source, language) pairs that language resolves to, for the sources with languages; set by
    # retrieval before the store is asked. None: no source is narrowed to a language.
    languages: tuple[tuple[str, str], ...] | None = None
    exclude_flagged: bool = False  # leave out chunks flagged as instructions to an AI
    # The sources a caller may read (an API key's scope); None: all of them.
    allowed_sources: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as fed to the generator, numbered from 1 in the prompt and citations."""

    number: int
    hit: SearchHit


@dataclass(frozen=True)
class Dropped:
    """A chunk that passed the relevance bar but was not fed, and why."""

    hit: SearchHit
    reason: str


@dataclass
class Usage:
    """Filled in by the generator while it streams, where the server reports it."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


# The events of an answer, in order: Sources once, Delta any number of times, then the checked
# Answer (answer.py).


@dataclass(frozen=True)
class Sources:
    passages: list[Passage]  # what the generator is given, numbered from 1
    dropped: list[Dropped]  # passed the bar but not fed (on a refusal: the closest matches)


@dataclass(frozen=True)
class Delta:
    text: str
