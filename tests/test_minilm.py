"""The numpy forward pass of the bundled model gives sentence-transformers' vectors, and the
query path never imports torch."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from pgcite.embedding import LocalEmbedder, bundled_model_dir
from pgcite.minilm import MiniLM
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
def test_the_numpy_pass_gives_the_reference_vectors(embedder: LocalEmbedder):
    texts = _texts()
    ours = MiniLM(bundled_model_dir()).encode(texts)
    reference = embedder._model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    cosines = np.sum(ours * reference, axis=1) / np.linalg.norm(reference, axis=1)
    assert len(texts) >= 200 and cosines.min() >= 0.9999, (cosines.min(), texts[int(cosines.argmin())][:200])


def test_a_question_is_embedded_without_importing_torch():
    probe = ("import sys; from pgcite.embedding import LocalEmbedder; v = LocalEmbedder().embed_query('spin rate?'); "
             "assert v.shape == (384,) and abs(float((v * v).sum()) - 1) < 1e-5; "
             "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
