"""The retrieval half of `ask`: embed the question, find the nearest chunks."""

from __future__ import annotations

from .embedding import Embedder
from .errors import PgciteError
from .store import SearchHit, Store


def search(store: Store, embedder: Embedder, query: str, *, k: int = 5, source: str | None = None) -> list[SearchHit]:
    if not query.strip():
        raise PgciteError("the question is empty; ask something")
    if k < 1:
        raise PgciteError(f"-k must be at least 1 (got {k})")
    store.check_model(embedder.model)
    vector = embedder.embed_query(query)
    store.check_model(embedder.model, len(vector))
    return store.search_vector(vector, k, source)
