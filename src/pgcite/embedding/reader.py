"""pgcite's reader: a cross-encoder that reads a question together with a section and scores whether
the section answers it (a logit; above 0 it more likely answers than not). Trained by pgcite
(train/reader/, docs/reader.md) from the bundled all-MiniLM-L6-v2, it ships as the weights training
changed (src/pgcite/data/reader.safetensors, fp16); the word embeddings are MiniLM's own, from the
package pgcite already installs. Like the embedding model it is written once as an ONNX graph into
the model cache, checked against scores the training code gave for fixed pairs, and run on ONNX
Runtime with no torch and no download."""

from __future__ import annotations

import functools
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

DATA = Path(__file__).resolve().parent.parent / "data"
WEIGHTS = DATA / "reader.safetensors"
CARD = DATA / "reader.json"
GRAPH_VERSION = 1  # bump when the graph changes, so cached files are rebuilt
PARITY = 0.02  # most a converted fp32 score may differ from the reference (a logit)
# int8: a sanity bar for a broken quantization (dynamic quantization moves scores by up to 0.8; docs/reader.md).
INT8_PARITY = 1.0
READER_PRECISIONS = ("fp32", "int8")
BATCH_TOKENS = 1024  # padded tokens per forward pass


def reads_windows() -> bool:
    """Whether this reader was trained on units of a sentence or two (reader.json's `unit`), and so
    reads a section as windows of its sentences, scoring it by its best."""
    return reader_card().get("unit") == "sentences"


def windows(units: Sequence[str], most_words: int = 0, most: int = 0) -> list[str]:
    """Consecutive units (sentences, list items, rows) packed into windows of at most `most_words`
    words (the card's, by default; a longer unit is a window alone), the first `most` of them."""
    most_words = most_words or int(reader_card().get("window_words", 40))
    most = most or int(reader_card().get("windows", 12))
    out: list[str] = []
    current: list[str] = []
    count = 0
    for unit in units:
        n = len(unit.split())
        if current and count + n > most_words:
            out.append(" ".join(current))
            current, count = [], 0
        current.append(unit)
        count += n
    if current:
        out.append(" ".join(current))
    return out[:most]


def available() -> bool:
    return WEIGHTS.is_file() and CARD.is_file()


def reader_id() -> str:
    """Which reader this is: a measurement made with another is made again."""
    return hashlib.sha256(CARD.read_bytes()).hexdigest()[:16] if CARD.is_file() else ""


@functools.cache
def reader_card() -> dict:
    """What the reader's making recorded (reader.json): its sequence length, its refusal bar, its figures."""
    return json.loads(CARD.read_text()) if CARD.is_file() else {}


def _cache_key(model_dir: Path) -> str:
    stamp = f"{GRAPH_VERSION}:{WEIGHTS.stat().st_size}:{CARD.read_text()}:{(model_dir / 'config.json').read_text()}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:16]


def build_graph(model_dir: Path):
    """MiniLM's word embeddings and the reader's own weights, as one graph."""
    from safetensors.numpy import load_file

    card = json.loads(CARD.read_text())
    words = load_file(str(model_dir / "model.safetensors"))["embeddings.word_embeddings.weight"]
    if hashlib.sha256(np.ascontiguousarray(words).tobytes()).hexdigest() != card["words_sha256"]:
        raise EmbeddingError(
            "the reader was trained on other word embeddings than the installed all-MiniLM-L6-v2's; "
            "reinstall pgcite (make install), or turn the reader off with PGCITE_READER=off"
        )
    weights = {k: v.astype(np.float32) for k, v in load_file(str(WEIGHTS)).items()}
    weights["embeddings.word_embeddings.weight"] = words
    config = json.loads((model_dir / "config.json").read_text())
    return encoder_graph(weights, config, "pgcite-reader", pair=True)


def load_reader(model_dir: Path, cache: Path, precision: str = "int8") -> BundledReader:
    """The reader from its conversion in the cache, converting (again, if the file is damaged) as
    needed; int8 is quantized from the fp32 conversion."""
    if not available():
        raise EmbeddingError(
            "this pgcite has no reader (src/pgcite/data/reader.*); reinstall it or set PGCITE_READER=off"
        )
    key = _cache_key(model_dir)
    target = cache / f"pgcite-reader-{key}.onnx"
    if precision == "int8":
        quantized = cache / f"pgcite-reader-int8-{key}.onnx"
        if quantized.is_file():
            try:
                return BundledReader(quantized, model_dir)
            except EmbeddingError:
                pass
        fp32 = load_reader(model_dir, cache, "fp32").path
        quantize_int8(fp32, quantized, lambda f: verify(BundledReader(f, model_dir), INT8_PARITY))
        return BundledReader(quantized, model_dir)
    if target.is_file() and target.with_suffix(".weights").is_file():
        try:
            return BundledReader(target, model_dir)
        except EmbeddingError:
            pass  # a damaged or partial file: write it again
    with work_folder(target) as work:
        verify(BundledReader(save_with_weights(build_graph(model_dir), work, target), model_dir))
        move_into_place(work, target)
    return BundledReader(target, model_dir)


def verify(reader: BundledReader, parity: float = PARITY) -> None:
    reference = json.loads(CARD.read_text())["reference"]
    ours = np.array([reader.scores(r["question"], [r["text"]])[0] for r in reference])
    gap = float(np.abs(ours - np.array([r["score"] for r in reference])).max())
    if gap > parity:
        raise EmbeddingError(
            f"the converted reader gives other scores than its reference (by {gap:.3f}); "
            "reinstall pgcite and report this as a bug"
        )


class BundledReader:
    """Scores (question, section) pairs; higher: the section more likely answers the question."""

    def __init__(self, onnx_file: Path, model_dir: Path) -> None:
        self.path = onnx_file
        self.session = session(onnx_file, "pgcite's reader")
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(json.loads(CARD.read_text())["max_tokens"], strategy="only_second")

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """One logit per text, in order; batched by length so little is padding."""
        encoded = self.tokenizer.encode_batch([(question, t) for t in texts])
        out = np.empty(len(encoded), dtype=np.float32)
        for rows in length_batches([len(e.ids) for e in encoded], BATCH_TOKENS):
            length = len(encoded[rows[-1]].ids)
            names = ("input_ids", "token_type_ids", "attention_mask")
            arrays = {name: np.zeros((len(rows), length), dtype=np.int64) for name in names}
            for row, i in enumerate(rows):
                n = len(encoded[i].ids)
                arrays["input_ids"][row, :n] = encoded[i].ids
                arrays["token_type_ids"][row, :n] = encoded[i].type_ids
                arrays["attention_mask"][row, :n] = 1
            out[rows] = self.session.run(None, arrays)[0]
        return out
