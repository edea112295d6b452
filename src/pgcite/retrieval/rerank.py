"""Second ranking stages over the first stage's best candidates: pgcite's own reader (a bundled
cross-encoder, embedding/reader.py), a re-ranking server (a cross-encoder of the user's) that reads
the question with each candidate and scores it again, or, with a chat model configured and
`rerank_with_chat`, the chat model naming the candidates that answer.

It speaks the `/rerank` protocol that vLLM, Jina and Cohere serve (`{"model", "query",
"documents", "top_n"}` answered by `{"results": [{"index", "relevance_score"}]}`); a
text-embeddings-inference server's answer (`[{"index", "score"}]`, to `"texts"`) is read too.
Configured by `rerank_url` (PGCITE_RERANK_URL); off when it is empty."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pgcite.config import Settings
from pgcite.embedding.reader import BundledReader, reader_id
from pgcite.errors import PgciteError
from pgcite.vocabulary import SearchHit


class RerankError(PgciteError):
    """The re-ranking server failed: one line, what to do."""

    kind = "unavailable"


class Reranker(Protocol):
    candidates: int  # how many of the first stage's best it reads

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The hits in the second stage's order."""
        ...


class ScoringReranker:
    """A second stage that scores each candidate with the question: its order is by those scores."""

    candidates: int

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        raise NotImplementedError

    def score_hits(self, query: str, hits: Sequence[SearchHit]) -> list[float]:
        """Each hit read as its breadcrumb and text."""
        return self.scores(query, [f"{h.breadcrumb}\n{h.content}" if h.breadcrumb else h.content for h in hits])

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The first `candidates` hits in the scores' order (their rank_score the score), then the rest."""
        head, tail = list(hits[: self.candidates]), list(hits[self.candidates :])
        if not head:
            return list(hits)
        scores = self.score_hits(query, head)
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        return [dataclasses.replace(head[i], rank_score=scores[i]) for i in order] + tail


class ReaderReranker(ScoringReranker):
    """pgcite's reader: its scores are logits (above 0, the section more likely answers than not).
    bar: the user's, under which no candidate answers (else the source's, answer/flow.py)."""

    def __init__(self, reader: Callable[[], BundledReader], candidates: int, bar: float | None = None) -> None:
        self._reader = reader  # loaded on first use
        self.candidates = candidates
        self.bar = bar
        self.identity = reader_id()

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in self._reader().scores(query, texts)]


class RerankServer(ScoringReranker):
    def __init__(self, settings: Settings) -> None:
        self.url = settings.rerank_url.rstrip("/")
        self.model = settings.rerank_model
        self.candidates = settings.rerank_candidates
        self.timeout = settings.rerank_timeout
        self._headers = {"Content-Type": "application/json"}
        if settings.rerank_api_key:
            self._headers["Authorization"] = f"Bearer {settings.rerank_api_key}"

    def _post(self, body: dict) -> Any:  # the JSON it answers
        request = urllib.request.Request(f"{self.url}/rerank", json.dumps(body).encode(), self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RerankError(
                f"the re-ranking server at {self.url} answered HTTP {exc.code} to /rerank; "
                "check PGCITE_RERANK_URL (usually ending in /v1) and PGCITE_RERANK_MODEL"
            ) from None
        except TimeoutError:
            raise RerankError(
                f"the re-ranking server at {self.url} did not answer within {self.timeout:g} s; "
                "raise PGCITE_RERANK_TIMEOUT or check the server"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RerankError(
                f"cannot reach the re-ranking server at {self.url} ({reason}); start it or fix PGCITE_RERANK_URL"
            ) from None
        except ValueError:
            raise RerankError(f"the re-ranking server at {self.url} answered /rerank with something not JSON") from None

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, higher is more relevant."""
        data = self._post(
            {
                "model": self.model,
                "query": query,
                "documents": list(texts),
                "texts": list(texts),
                "top_n": len(texts),
                "return_documents": False,
            }
        )
        try:
            results = data["results"] if isinstance(data, dict) else data
            scored = {
                int(r["index"]): float(r["relevance_score"] if "relevance_score" in r else r["score"]) for r in results
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            raise RerankError(
                f"the re-ranking server at {self.url} answered /rerank in a shape pgcite does not "
                "read (expected results with index and relevance_score)"
            ) from None
        if set(scored) != set(range(len(texts))):
            raise RerankError(f"the re-ranking server at {self.url} scored {len(scored)} of {len(texts)} texts")
        return [scored[i] for i in range(len(texts))]


# Given the question and the candidates, the positions of those that answer it, best first.
Choose = Callable[[str, Sequence[SearchHit]], list[int]]


class ChatChooser:
    """The chat model reads the candidates' openings and names those that answer the question,
    best first (generation.ChatGenerator.choose); they lead, the others follow in the first
    stage's order. It only orders: whether to refuse is still the answer's to say."""

    def __init__(self, choose: Choose, candidates: int) -> None:
        self.choose = choose
        self.candidates = candidates

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        head, tail = list(hits[: self.candidates]), list(hits[self.candidates :])
        if len(head) < 2:
            return list(hits)
        chosen = list(dict.fromkeys(i for i in self.choose(query, head) if 0 <= i < len(head)))
        order = chosen + [i for i in range(len(head)) if i not in chosen]
        return [head[i] for i in order] + tail
