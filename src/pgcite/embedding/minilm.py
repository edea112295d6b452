"""The bundled all-MiniLM-L6-v2 on ONNX Runtime, with no torch: the package's safetensors weights
are written once as an ONNX graph (the BERT encoder, mean pooling, L2 norm) into the model cache,
checked against vectors sentence-transformers computed for fixed texts, and loaded from there with
its weights memory-mapped (about 0.1 s; `load`). tests/test_minilm.py checks parity over the corpora."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from pgcite.embedding.graph import (
    encoder_graph,
    length_batches,
    move_into_place,
    quantize_int8,
    save_with_weights,
    session,
    work_folder,
)
from pgcite.errors import EmbeddingError

GRAPH_VERSION = 1  # bump when build_graph changes, so cached files are rebuilt
REFERENCE = Path(__file__).with_name("minilm_reference.json")  # sentence-transformers' vectors (bench/reference.py)
PARITY = 0.9999  # least cosine to the reference vector, per text
# int8 (ONNX Runtime's dynamic quantization, weights per output channel): a sanity bar that catches a
# broken quantization; its quality is measured on the question sets (docs/model.md).
INT8_PARITY = 0.97
PRECISIONS = ("fp32", "int8")
# Padded tokens per forward pass. On 2 cores 512 embedded 1.25x the texts a second of 32-text batches
# (activations stay in cache) in 55% of the memory; docs/model.md.
BATCH_TOKENS = 512


def build_graph(model_dir: Path):
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    return encoder_graph(load_file(str(model_dir / "model.safetensors")), config, "all-MiniLM-L6-v2")


def _cache_key(model_dir: Path) -> str:
    weights = model_dir / "model.safetensors"
    stamp = f"{GRAPH_VERSION}:{weights.stat().st_size}:{(model_dir / 'config.json').read_text()}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:16]


def load(model_dir: Path, cache: Path, precision: str = "fp32") -> MiniLM:
    """The model from its conversion in the cache, converting (again, if the file is damaged) as needed;
    int8 is quantized from the fp32 conversion."""
    target = cache / f"all-MiniLM-L6-v2-{_cache_key(model_dir)}.onnx"
    if precision == "int8":
        quantized = target.with_name(f"all-MiniLM-L6-v2-int8-{_cache_key(model_dir)}.onnx")
        if quantized.is_file():
            try:
                return MiniLM(quantized, model_dir)
            except EmbeddingError:
                pass
        quantize_int8(load(model_dir, cache).path, quantized, lambda f: verify(MiniLM(f, model_dir), INT8_PARITY))
        return MiniLM(quantized, model_dir)
    if target.is_file() and target.with_suffix(".weights").is_file():
        try:
            return MiniLM(target, model_dir)
        except EmbeddingError:
            pass  # a damaged or partial file (a full disk, an old build): write it again
    _convert(model_dir, target)
    return MiniLM(target, model_dir)


def _convert(model_dir: Path, target: Path) -> None:
    with work_folder(target) as work:
        verify(MiniLM(save_with_weights(build_graph(model_dir), work, target), model_dir))
        move_into_place(work, target)


def verify(model: MiniLM, parity: float = PARITY) -> None:
    reference = json.loads(REFERENCE.read_text())
    ours = model.encode(reference["texts"])
    cosines = np.sum(ours * np.array(reference["vectors"], dtype=np.float32), axis=1)
    if cosines.min() < parity:
        raise EmbeddingError(
            f"the converted bundled model gives other vectors than the reference (cosine "
            f"{cosines.min():.5f}); reinstall pgcite and report this as a bug"
        )


class MiniLM:
    def __init__(self, onnx_file: Path, model_dir: Path) -> None:
        self.path = onnx_file
        self.session = session(onnx_file, "the bundled model")
        self.dimension = self.session.get_outputs()[0].shape[1]
        max_tokens = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text, in order; batched by length so little is padding."""
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        for rows in length_batches([len(i) for i in ids], BATCH_TOKENS):
            length = len(ids[rows[-1]])
            tokens = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for row, i in enumerate(rows):
                tokens[row, : len(ids[i])], mask[row, : len(ids[i])] = ids[i], 1
            out[rows] = self.session.run(None, {"input_ids": tokens, "attention_mask": mask})[0]
        return out
