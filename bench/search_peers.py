"""Search latency side by side: pgcite, txtai (hybrid) and LlamaIndex (vector + BM25, fused) on the
same chunks, the same vectors and the same model, in one run.

The Marten docs are ingested by pgcite into a throw-away home (bundled model, fp32). Its chunks are
then given to the peers exactly as pgcite embedded them (breadcrumb and text, with pgcite's stored
vectors), and every question embeds its query with the same bundled model in each system:
  - pgcite in process (`Pgcite.search`, its default hybrid search, one PostgreSQL round trip);
  - pgcite over HTTP (`pgcite serve` as its own process, GET /v1/search on a kept-alive connection);
  - txtai 9 `Embeddings(hybrid=True)`, vectors given through `method="external"`;
  - LlamaIndex 0.14: a `VectorStoreIndex` retriever and a `BM25Retriever`, fused by
    `QueryFusionRetriever` (reciprocal rank, one query: no LLM).
Each question is asked once of each, in turn (so a noisy moment touches all), after a warm-up on
other texts; no system sees a question twice, so no cache of query vectors helps. Prints medians,
p90 and ratios to the fastest peer, and where pgcite's time goes (the query's embedding alone).

Usage: make bench-peers   (a venv of its own, .venv-peers: the peers' dependencies are not pgcite's)
       .venv-peers/bin/python bench/search_peers.py [CORPUS_DIR]
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.embedding.models import LocalEmbedder
from pgcite.evaluation.questions import load_questions
from pgcite.store import server
from pgcite.vocabulary import SearchFilter

K = 5
SOURCE = "marten"
HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parents[1] / "shared" / "corpora" / "marten-docs"
# Marten's questions: its regression set and both held-out halves (only their wording is used).
QUESTIONS = [HERE.parent / "eval" / "marten.jsonl", *sorted((HERE.parent / "eval" / "heldout").glob("marten.*.jsonl"))]
WARM_UP = ["How do I start?", "What is an event store?", "Configure the connection string", "projections"]

Search = Callable[[str], list]


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    if not corpus.is_dir():
        print(f"skipped: corpus not found at {corpus} (it lives in ../shared/corpora beside the repo)")
        return 0
    missing = [m for m in ("txtai", "llama_index.core", "llama_index.retrievers.bm25") if not _importable(m)]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed; run `make bench-peers` (it installs the peers extra)")
        return 0
    home = Path(tempfile.mkdtemp(prefix="pgcite-peers-"))
    try:
        return run(corpus, home)
    finally:
        server.stop(home)
        shutil.rmtree(home, ignore_errors=True)


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run(corpus: Path, home: Path) -> int:
    settings = Settings(home=home)
    questions = list(dict.fromkeys(q.question for q in load_questions(*map(str, QUESTIONS))))
    embedder = LocalEmbedder()  # the peers' query embedding: the same model, called directly
    with Pgcite(settings) as app:
        report = app.ingest(str(corpus), source=SOURCE, base_url="https://martendb.io/")
        app.warm_up()
        with app.reader() as store:
            rows = store.conn.execute(
                "SELECT id, breadcrumb, content, embedding::real[] FROM chunks WHERE source = %s ORDER BY id",
                (SOURCE,),
            ).fetchall()
        ids = [r[0] for r in rows]
        texts = [f"{r[1]}\n\n{r[2]}" if r[1] else r[2] for r in rows]
        vectors = np.array([r[3] for r in rows], dtype=np.float32)
        systems: dict[str, Search] = {
            "pgcite": lambda q: app.search(q, k=K, filters=SearchFilter(source=SOURCE)),
            "txtai": txtai_search(ids, texts, vectors, embedder),
            "llamaindex": llamaindex_search(ids, texts, vectors, embedder),
        }
        with served(home) as http_search:
            systems["pgcite over HTTP"] = http_search
            systems["query embedding alone"] = embedder.embed_query
            for text in WARM_UP:
                for search in systems.values():
                    search(text)
            times: dict[str, list[float]] = {name: [] for name in systems}
            for question in questions:
                for name, search in systems.items():
                    started = time.perf_counter()
                    search(question)
                    times[name].append(time.perf_counter() - started)

    print(f"corpus: {corpus} ({len(ids)} chunks, {report.chunks_embedded} embedded); {len(questions)} questions "
          f"from {', '.join(q.name for q in QUESTIONS)}, each asked once of each system, k={K}; {os.cpu_count()} cores")
    peers = ("txtai", "llamaindex")
    fastest = min(peers, key=lambda name: statistics.median(times[name]))
    base = statistics.median(times[fastest])
    for name, spent in times.items():
        median, p90 = statistics.median(spent), statistics.quantiles(spent, n=10)[-1]
        ratio = "" if name == "query embedding alone" else f"  {median / base:5.2f}x {fastest}"
        print(f"{name:22s} median {median * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms{ratio}")
    embed = statistics.median(times["query embedding alone"])
    print(f"pgcite beyond the query's embedding: {(statistics.median(times['pgcite']) - embed) * 1000:.1f} ms "
          f"(median search minus median embedding)")
    return 0


def txtai_search(ids: list[str], texts: list[str], vectors: np.ndarray, embedder: LocalEmbedder) -> Search:
    """txtai's hybrid index (its BM25 and a dense index, scores combined), pgcite's vectors given to it."""
    from txtai import Embeddings

    known = {text: vector for text, vector in zip(texts, vectors, strict=True)}

    def transform(inputs: list[str]) -> np.ndarray:
        return np.stack([known[t] if t in known else embedder.embed_query(t) for t in inputs])

    embeddings = Embeddings(method="external", transform=transform, hybrid=True)
    embeddings.index(list(zip(ids, texts, [None] * len(ids), strict=True)))
    return lambda q: embeddings.search(q, K)


def llamaindex_search(ids: list[str], texts: list[str], vectors: np.ndarray, embedder: LocalEmbedder) -> Search:
    """LlamaIndex's in-memory vector retriever and its BM25 retriever, fused by reciprocal rank."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    class Bundled(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.embed_query(query).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.embed_query(text).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    nodes = [TextNode(id_=i, text=t, embedding=v.tolist()) for i, t, v in zip(ids, texts, vectors, strict=True)]
    index = VectorStoreIndex(nodes, embed_model=Bundled())
    fused = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=K), BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)],
        similarity_top_k=K,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )
    return fused.retrieve


class served:
    """`pgcite serve` on a free loopback port as its own process; a search over one kept-alive connection."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def __enter__(self) -> Search:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        pgcite = Path(sys.executable).with_name("pgcite")
        env = {**os.environ, "PGCITE_HOME": str(self.home)}
        self.process = subprocess.Popen([str(pgcite), "serve", "--port", str(port)], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.connection.request("GET", "/readyz")
                response = self.connection.getresponse()
                response.read()
                if response.status == 200:
                    break
            except OSError:
                self.connection.close()
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"pgcite serve did not start: {self.process.stderr.read().decode()[-500:]}")
            time.sleep(0.2)

        def search(question: str) -> list:
            query = urllib.parse.urlencode({"q": question, "k": K, "source": SOURCE})
            self.connection.request("GET", f"/v1/search?{query}")
            response = self.connection.getresponse()
            body = json.loads(response.read())
            if response.status != 200:
                raise SystemExit(f"/v1/search answered {response.status}: {body}")
            return body["results"]

        return search

    def __exit__(self, *exc) -> None:
        self.connection.close()
        self.process.terminate()
        self.process.wait(30)


if __name__ == "__main__":
    sys.exit(main())
