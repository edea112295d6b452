"""The bundled all-MiniLM-L6-v2 in numpy: the same BERT forward pass as sentence-transformers
(mean pooling, L2-normalised), from the package's own safetensors weights and tokenizer.json, so
embedding needs no torch import (about 9 s of a cold start here). tests/test_minilm.py checks
its vectors against sentence-transformers' (cosine >= 0.9999 per text)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

BATCH = 32  # texts per forward pass, after sorting by length (less padding)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to a relative error below 1.2e-7 (Numerical Recipes' erfc), without scipy's import."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _gelu_(x: np.ndarray, block: int = 65536) -> np.ndarray:
    """Exact (erf) GELU in place, a cache-sized block at a time: whole-array temporaries made it
    memory-bound and three times slower."""
    flat = x.reshape(-1)
    for start in range(0, flat.size, block):
        part = flat[start:start + block]
        part *= 0.5 * (1.0 + _erf(part * np.float32(0.7071067811865476)))
    return x


def _dense(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """x @ weight + bias over the last axis, as one 2-D matrix product (numpy's stacked products are slower)."""
    return (x.reshape(-1, x.shape[-1]) @ weight + bias).reshape(*x.shape[:-1], weight.shape[1])


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    def __init__(self, model_dir: Path) -> None:
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.max_tokens = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        w = load_file(str(model_dir / "model.safetensors"))
        # Weights as (in, out), so a layer is x @ W + b.
        self.w = {name: (value.T.copy() if name.endswith("dense.weight") or name.endswith(("query.weight", "key.weight",
                  "value.weight")) else value) for name, value in w.items()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text, in order."""
        if not texts:
            return np.zeros((0, self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            out[rows] = self._forward([ids[i] for i in rows])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        w, length = self.w, max(len(ids) for ids in batch)
        tokens = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, ids in enumerate(batch):
            tokens[row, :len(ids)], mask[row, :len(ids)] = ids, 1.0
        x = (w["embeddings.word_embeddings.weight"][tokens] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        hidden = x.shape[-1]
        size = hidden // self.heads
        blocked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # padding gets no attention
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def heads(name: str) -> np.ndarray:
                y = _dense(x, w[p + f"attention.self.{name}.weight"], w[p + f"attention.self.{name}.bias"])
                return np.ascontiguousarray(y.reshape(len(batch), length, self.heads, size).transpose(0, 2, 1, 3))

            q, k, v = heads("query"), heads("key"), heads("value")
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(len(batch), length, hidden)
            attended = _dense(context, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
            x = _layer_norm(x + attended, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            inner = _gelu_(_dense(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
            out = _dense(inner, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
            x = _layer_norm(x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
