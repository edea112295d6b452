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
from pgcite.embedding.reader import BundledReader, reader_card, reader_id, reads_windows, windows
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

    def read(self, query: str, hits: Sequence[SearchHit]) -> list[tuple[float, str]]:
        """Each hit's score, and the part of it that scored (empty: the hit as a whole)."""
        return [(s, "") for s in self.score_hits(query, hits)]

    def score_hits(self, query: str, hits: Sequence[SearchHit]) -> list[float]:
        """Each hit read as its breadcrumb and text."""
        return self.scores(query, [f"{h.breadcrumb}\n{h.content}" if h.breadcrumb else h.content for h in hits])

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The first `candidates` hits in the scores' order (their rank_score the score), then the rest."""
        head, tail = list(hits[: self.candidates]), list(hits[self.candidates :])
        if not head:
            return list(hits)
        read = self.read(query, head)
        order = sorted(range(len(head)), key=lambda i: (-read[i][0], i))
        return [dataclasses.replace(head[i], rank_score=read[i][0], reader_quote=read[i][1]) for i in order] + tail


# A section's Markdown cut into its quotable units in order (sentences, list items, rows, code).
Units = Callable[[str], list[str]]


class ReaderReranker(ScoringReranker):
    """pgcite's reader: its scores are logits (above 0, the section more likely answers than not).
    bar: the user's, under which no candidate answers (else the source's, answer/flow.py).
    units: where the reader reads sentences (reader.json), how a section is cut into them; each
    section is then read as windows of a sentence or a few, after its breadcrumb, and scores as its
    best window, which the offline answer quotes first."""

    def __init__(
        self, reader: Callable[[], BundledReader], candidates: int, bar: float | None = None, units: Units | None = None
    ) -> None:
        self._reader = reader  # loaded on first use
        self.candidates = candidates
        self.bar = bar
        self.units = units if reads_windows() else None
        self.identity = reader_id()

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in self._reader().scores(query, texts)]

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """In the reader's order, or where its making measured that the first stage's order still
        helps (reader.json's `rank_prior`), by its score plus that weight x a prior for the first
        stage's rank (1 for its best, falling to 0 past the candidates). rank_score stays the
        reader's own score, which a refusal bar applies to."""
        read = super().rerank(query, hits)
        weight = float(reader_card().get("rank_prior", 0.0))
        if not weight:
            return read
        head, tail = read[: self.candidates], read[self.candidates :]
        first = {h.id: i for i, h in enumerate(hits)}
        head.sort(key=lambda h: -(h.rank_score + weight * (1 - first[h.id] / self.candidates)))
        return head + tail

    def score_hits(self, query: str, hits: Sequence[SearchHit]) -> list[float]:
        if self.units is None:  # a whole-section reader: the base reads each hit once
            return super().score_hits(query, hits)
        return [score for score, _ in self.read(query, hits)]

    def read(self, query: str, hits: Sequence[SearchHit]) -> list[tuple[float, str]]:
        if self.units is None:
            return super().read(query, hits)
        read = [windows(self.units(h.content)) or [h.content] for h in hits]
        texts = [f"{h.breadcrumb}\n{w}" if h.breadcrumb else w for h, ws in zip(hits, read, strict=True) for w in ws]
        scores, out, start = self.scores(query, texts), [], 0
        for ws in read:
            best = max(range(len(ws)), key=lambda i: scores[start + i])
            out.append((scores[start + best], ws[best]))
            start += len(ws)
        return out


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
