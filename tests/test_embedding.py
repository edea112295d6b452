import threading
import time

import numpy as np
import pytest

from pgcite.config import Settings
from pgcite.embedding.models import LocalEmbedder, OpenAIEmbedder, make_embedder
from pgcite.embedding.serialised import Serialised
from pgcite.errors import EmbeddingError
from tests.fake_openai import FakeOpenAI, closed_port, fake_vector


def test_local_model_embeds_offline_normalised_and_meaningful(embedder: LocalEmbedder):
    passages = [
        "Install the package with pip and start the server.",
        "The cat sat on the warm windowsill all afternoon.",
    ]
    vectors = embedder.embed_documents(passages)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("how do I install it?")
    assert query @ vectors[0] > query @ vectors[1] + 0.1


def test_local_token_count_uses_the_model_tokenizer(embedder: LocalEmbedder):
    # WordPiece splits "pgvector" into several pieces; a whitespace count would say 1.
    assert embedder.count_tokens("pgvector") > 1
    assert embedder.count_tokens("") == 0


def test_openai_compatible_server_batches_and_prefixes():
    with FakeOpenAI(dimension=8) as fake:
        settings = Settings(embedding_url=fake.url, embedding_model=fake.model, embedding_batch_size=2,
                            document_prefix="passage: ", query_prefix="query: ", embedding_api_key="sk-test")
        embedder = make_embedder(settings)
        assert isinstance(embedder, OpenAIEmbedder)
        vectors = embedder.embed_documents(["a", "b", "c"])
        assert vectors.shape == (3, 8)
        expected = np.array(fake_vector("passage: c", 8), dtype=np.float32)
        assert np.allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-6)
        assert [len(r["body"]["input"]) for r in fake.requests] == [2, 1]
        assert fake.requests[0]["auth"] == "Bearer sk-test"
        embedder.embed_query("q")
        assert fake.requests[-1]["body"]["input"] == ["query: q"]
        assert embedder.dimension == 8


def test_openai_compatible_server_retries_transient_errors():
    with FakeOpenAI(fail_with=[503, 500]) as fake:
        embedder = OpenAIEmbedder(Settings(embedding_url=fake.url, embedding_model=fake.model, embedding_retries=3))
        assert embedder.embed_documents(["x"]).shape == (1, 8)
        assert len(fake.requests) == 3


def test_openai_compatible_server_errors_are_one_clear_line():
    with FakeOpenAI(fail_with=[500, 500, 500]) as fake:
        embedder = OpenAIEmbedder(Settings(embedding_url=fake.url, embedding_model=fake.model, embedding_retries=2))
        with pytest.raises(EmbeddingError, match=r"answered HTTP 500 after retries"):
            embedder.embed_documents(["x"])
    with FakeOpenAI() as fake:
        embedder = OpenAIEmbedder(Settings(embedding_url=fake.url, embedding_model="nope", embedding_retries=0))
        with pytest.raises(EmbeddingError, match=r"has no model 'nope'"):
            embedder.embed_documents(["x"])


def test_embedding_server_down_fails_fast_with_what_to_do():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    embedder = OpenAIEmbedder(Settings(embedding_url=url, embedding_model="m", embedding_retries=1))
    started = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["x"])
    assert time.monotonic() - started < 15
    assert "cannot reach the embedding server" in str(info.value) and "\n" not in str(info.value)


def test_unknown_local_model_is_refused():
    with pytest.raises(EmbeddingError, match="PGCITE_EMBEDDING_URL"):
        make_embedder(Settings(embedding_model="bge-large"))


def test_tokens_are_counted_while_a_batch_embeds(embedder: LocalEmbedder):
    """Ingest chunks the next files (counting their tokens) while the last batch embeds on a worker
    thread: counting must not wait for the model."""
    release = threading.Event()

    class Slow:
        def __getattr__(self, name):
            return getattr(embedder, name)

        def embed_documents(self, texts):
            release.wait(30)
            return embedder.embed_documents(texts)

    shared = Serialised(Slow())
    worker = threading.Thread(target=shared.embed_documents, args=(["a batch on its way"],))
    worker.start()
    try:
        started = time.monotonic()
        counts = [shared.count_tokens("How fast does the widget spin? " * n) for n in range(1, 50)]
        assert time.monotonic() - started < 10 and counts == sorted(counts) and counts[0] > 0
        assert worker.is_alive()  # the batch was still embedding all along
    finally:
        release.set()
        worker.join()
