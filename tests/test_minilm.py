"""The bundled model on ONNX Runtime gives sentence-transformers' vectors, its conversion is cached
and survives damage, and the query path never imports torch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgcite.embedding.models import LocalEmbedder, bundled_model_dir
from pgcite.errors import EmbeddingError
from pgcite.embedding.minilm import INT8_PARITY, PARITY, load
from tests.conftest import corpus


def _texts(limit: int = 400) -> list[str]:
    """Paragraphs of two shared corpora, short and long, and their questions."""
    texts: list[str] = []
    for name, pattern in (("marten-docs", "**/*.md"), ("anthropic-docs", "pages/**/*.md")):
        for path in sorted(corpus(name).glob(pattern))[:60]:
            paragraphs = [p.strip() for p in re.split(r"\n\s*\n", path.read_text(errors="replace")) if p.strip()]
            texts += paragraphs[:4] + ["\n\n".join(paragraphs[:12])]  # the last one runs past the window
    questions = corpus("anthropic-docs") / "questions-dev.jsonl"
    texts += [line for line in questions.read_text().splitlines()[:40]]
    return texts[:limit]


@pytest.mark.slow
def test_the_onnx_model_gives_the_reference_vectors(embedder: LocalEmbedder):
    pytest.importorskip("sentence_transformers", reason="the reference needs `make dev` (the reference extra)")
    from bench.reference import reference_vectors

    texts = _texts()
    ours = embedder.embed_documents(texts)
    reference = reference_vectors(texts)
    cosines = np.sum(ours * reference, axis=1) / np.linalg.norm(reference, axis=1)
    assert len(texts) >= 200 and cosines.min() >= PARITY, (cosines.min(), texts[int(cosines.argmin())][:200])


def test_a_question_is_embedded_without_importing_torch(tmp_path: Path):
    probe = ("import sys; from pathlib import Path; from pgcite.embedding.models import LocalEmbedder; "
             f"v = LocalEmbedder(model_cache=Path({str(tmp_path)!r})).embed_query('spin rate?'); "
             "assert v.shape == (384,) and abs(float((v * v).sum()) - 1) < 1e-5; "
             "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".onnx", ".weights"]  # converted once, no leftovers


def test_a_damaged_conversion_is_written_again(tmp_path: Path):
    model = load(bundled_model_dir(), tmp_path)
    expected = model.encode(["How do I rebuild a projection?"])
    graph = next(tmp_path.glob("*.onnx"))
    graph.write_bytes(graph.read_bytes()[:100])  # a full disk, an interrupted copy
    again = load(bundled_model_dir(), tmp_path)
    assert np.allclose(again.encode(["How do I rebuild a projection?"]), expected, atol=1e-6)


def test_an_unwritable_model_cache_is_one_clear_error(tmp_path: Path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(EmbeddingError, match=r"cannot write the model cache .*set PGCITE_MODEL_CACHE"):
        load(bundled_model_dir(), blocker / "cache")


def test_batches_sorted_by_length_keep_the_input_order(embedder: LocalEmbedder):
    texts = ["short", "a much longer text about event sourcing and projections " * 8, "mid length text here"]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_query(t) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_the_int8_variant_is_quantized_once_and_stays_close_to_fp32(embedder: LocalEmbedder, tmp_path: Path):
    int8 = LocalEmbedder(model_cache=tmp_path, model="all-MiniLM-L6-v2-int8")
    texts = _texts(200)
    cosines = np.sum(int8.embed_documents(texts) * embedder.embed_documents(texts), axis=1)
    assert cosines.min() >= INT8_PARITY and cosines.mean() >= 0.99, (cosines.min(), cosines.mean())
    assert sorted(p.name.split("-")[-2] for p in tmp_path.glob("*.onnx")) == ["int8", "v2"]  # fp32, then int8 from it
    graph = next(tmp_path.glob("*-int8-*.onnx"))
    graph.write_bytes(b"damaged")
    again = LocalEmbedder(model_cache=tmp_path, model="all-MiniLM-L6-v2-int8")
    assert np.allclose(again.embed_documents(texts[:3]), int8.embed_documents(texts[:3]), atol=1e-6)
