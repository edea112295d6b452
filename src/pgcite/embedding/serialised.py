"""An embedder shared by threads: one call into the model at a time, and the vectors of texts it
embedded lately kept, so a sentence the offline generator weighs again is not embedded again."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pgcite.embedding.models import Embedder

# Vectors kept, the least recently used dropped first: about 12 MB with the bundled model. An answer
# embeds some 50 sentences of its sections; asking again (a review's second version, a popular
# question, a follow-up) finds most of them here.
CACHED_VECTORS = 8192


class Serialised:  # an Embedder
    """An embedder used by one thread at a time: the model's tokenizer raises "Already borrowed" when
    two threads use it at once, and two cores gain nothing from parallel calls into one model."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()

    def __getattr__(self, name: str) -> Any:  # model, dimension, window, prefixes: read-only attributes
        return getattr(self._inner, name)

    def count_tokens(self, text: str) -> int:
        # Not behind the model's lock: ingest counts the next files' tokens while a batch embeds. The
        # counting tokenizer is the embedder's own instance, set up once and only read after.
        return self._inner.count_tokens(text)

    def _cached(self, kind: str, texts: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> np.ndarray:
        """The vectors of `texts`, those not kept embedded in one call."""
        keys = [(kind, hashlib.blake2b(text.encode(), digest_size=16).digest()) for text in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
            if missing:
                first = {k: texts[keys.index(k)] for k in missing}
                for key, vector in zip(missing, np.asarray(embed([first[k] for k in missing])), strict=True):
                    self._cache[key] = vector
            for key in keys:
                self._cache.move_to_end(key)
            rows = [self._cache[k] for k in keys]
            while len(self._cache) > CACHED_VECTORS:
                self._cache.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, self._inner.dimension), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached("document", texts, self._inner.embed_documents)

    def embed_query(self, text: str) -> np.ndarray:
        return self._cached("query", [text], lambda texts: np.stack([self._inner.embed_query(t) for t in texts]))[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached("query", texts, self._inner.embed_queries)
