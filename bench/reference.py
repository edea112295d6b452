"""The reference implementation of the bundled model: sentence-transformers on torch, which pgcite
itself no longer needs. Installed by `make test` and `make bench` (the `reference` extra) for the
parity test and the benchmarks that compare against it.

`python bench/reference.py` rewrites src/pgcite/minilm_reference.json, the vectors each new
model conversion is checked against."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from pgcite.embedding.models import LocalEmbedder, bundled_model_dir

# A question, a code passage, and a text past the 256-token window (truncation must match too).
FIXED_TEXTS = [
    "How do I point pgcite at my own PostgreSQL server?",
    "```python\nstore = DocumentStore.For(opts => opts.Connection(connectionString));\n```\nRegister the store once.",
    " ".join(f"Section {n} explains how the daemon rebuilds projections after a schema change." for n in range(60)),
]


@lru_cache(maxsize=1)
def sentence_transformer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(bundled_model_dir()), device="cpu")


def reference_vectors(texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
    vectors = sentence_transformer().encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                            show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


class ReferenceEmbedder(LocalEmbedder):
    """The bundled model as pgcite embedded it before ONNX Runtime (today's path, in the benchmarks)."""

    def warm_up(self) -> None:
        sentence_transformer()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return reference_vectors(texts) if texts else np.zeros((0, self.dimension), np.float32)


if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "src" / "pgcite" / "minilm_reference.json"
    vectors = reference_vectors(FIXED_TEXTS)
    target.write_text(json.dumps({"model": "sentence-transformers/all-MiniLM-L6-v2 via sentence-transformers",
                                  "texts": FIXED_TEXTS,
                                  "vectors": [[round(float(v), 7) for v in row] for row in vectors]}) + "\n")
    print(f"wrote {target}")
