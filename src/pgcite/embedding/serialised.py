"""An embedder shared by threads: one call into the model at a time."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from pgcite.embedding.models import Embedder


class Serialised:  # an Embedder
    """An embedder used by one thread at a time: a tokenizer raises "Already borrowed" when two
    threads use it at once, and two cores gain nothing from parallel calls into one model."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # model, dimension, window, prefixes: read-only attributes
        return getattr(self._inner, name)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return self._inner.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._inner.embed_queries(texts)
