"""The bundled all-MiniLM-L6-v2 on ONNX Runtime, with no torch: the package's safetensors weights
are written once as an ONNX graph (the BERT encoder, mean pooling, L2 norm) into the model cache,
checked against vectors sentence-transformers computed for fixed texts, and loaded from there with
its weights memory-mapped (about 0.1 s; `load`). tests/test_minilm.py checks parity over the corpora."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

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
    """The encoder as ONNX Runtime's fused CPU operators (Attention, SkipLayerNormalization, Gelu)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    w = load_file(str(model_dir / "model.safetensors"))
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=value.dtype), name))
        return name

    def op(kind: str, inputs: list[str], domain: str = "", output: str | None = None, **attributes) -> str:
        output = output or f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [output], domain=domain, **attributes))
        return output

    ms = "com.microsoft"
    e = "embeddings."
    # Single-segment input: the token type is always 0, so its row joins the position table.
    positions = weight("positions", w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0])
    zero = weight("zero", np.array([0], np.int64))
    length = op("Shape", ["input_ids"], start=1, end=2)
    x = op(
        "Add",
        [
            op("Gather", [weight("words", w[e + "word_embeddings.weight"]), "input_ids"]),
            op("Slice", [positions, zero, length, zero]),
        ],
    )
    x = op(
        "LayerNormalization",
        [x, weight("ln", w[e + "LayerNorm.weight"]), weight("lnb", w[e + "LayerNorm.bias"])],
        epsilon=eps,
        axis=-1,
    )
    mask = op("Cast", ["attention_mask"], to=TensorProto.INT32)
    for n in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        qkv = [p + f"attention.self.{k}." for k in ("query", "key", "value")]
        x_attended = op(
            "Attention",
            [
                x,
                weight(p + "qkv", np.concatenate([w[k + "weight"].T for k in qkv], axis=1)),
                weight(p + "qkvb", np.concatenate([w[k + "bias"] for k in qkv])),
                mask,
            ],
            domain=ms,
            num_heads=heads,
        )

        def dense_add_norm(residual: str, inner: str, dense: str, norm: str, p: str = p) -> str:
            projected = op("MatMul", [inner, weight(p + dense, w[p + dense + ".weight"].T)])
            return op(
                "SkipLayerNormalization",
                [
                    projected,
                    residual,
                    weight(p + norm, w[p + norm + ".weight"]),
                    weight(p + norm + "b", w[p + norm + ".bias"]),
                    weight(p + dense + "b", w[p + dense + ".bias"]),
                ],
                domain=ms,
                epsilon=eps,
            )

        x = dense_add_norm(x, x_attended, "attention.output.dense", "attention.output.LayerNorm")
        inner = op("MatMul", [x, weight(p + "intermediate", w[p + "intermediate.dense.weight"].T)])
        inner = op("BiasGelu", [inner, weight(p + "intermediateb", w[p + "intermediate.dense.bias"])], domain=ms)
        x = dense_add_norm(x, inner, "output.dense", "output.LayerNorm")
    # Mean over the real tokens, then unit length (sentence-transformers' Pooling + Normalize).
    real = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    axis = weight("axis", np.array([1], np.int64))
    summed = op(
        "ReduceSum",
        [op("Mul", [x, op("Unsqueeze", [real, weight("last", np.array([2], np.int64))])]), axis],
        keepdims=0,
    )
    count = op("Max", [op("ReduceSum", [real, axis], keepdims=1), weight("tiny", np.array(1e-9, np.float32))])
    op("LpNormalization", [op("Div", [summed, count])], output="embedding", axis=1, p=2)
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
            for name in ("input_ids", "attention_mask")
        ],
        [
            helper.make_tensor_value_info(
                "embedding", TensorProto.FLOAT, ["batch", w[e + "word_embeddings.weight"].shape[1]]
            )
        ],
        initializers,
    )
    return onnx.helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid(ms, 1)], ir_version=10
    )


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
        _quantize(load(model_dir, cache), quantized, model_dir)
        return MiniLM(quantized, model_dir)
    if target.is_file() and target.with_suffix(".weights").is_file():
        try:
            return MiniLM(target, model_dir)
        except EmbeddingError:
            pass  # a damaged or partial file (a full disk, an old build): write it again
    _convert(model_dir, target)
    return MiniLM(target, model_dir)


def _quantize(fp32: MiniLM, target: Path, model_dir: Path) -> None:
    """int8 weights, per output channel, with activations quantized as they come (no calibration set):
    ONNX Runtime runs its MatMuls and attention projections on integer kernels (VNNI where present)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _work_folder(target) as work, _quiet():
        quantize_dynamic(
            fp32.path,
            work / target.name,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # The fused com.microsoft operators have no shape inference: their outputs are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        verify(MiniLM(work / target.name, model_dir), INT8_PARITY)
        os.chmod(work / target.name, 0o644)
        os.replace(work / target.name, target)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The quantizer's advice ("consider pre-processing") goes to the root logger: not the user's concern."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


@contextlib.contextmanager
def _work_folder(target: Path) -> Iterator[Path]:
    """A folder beside `target` to build it in (renamed into place when whole), removed after."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    except OSError as exc:
        raise EmbeddingError(
            f"cannot write the model cache {target.parent} ({exc.strerror}); "
            "set PGCITE_MODEL_CACHE to a writable folder"
        ) from None
    try:
        yield work
    except OSError as exc:
        raise EmbeddingError(
            f"cannot write the model cache {target.parent} ({exc.strerror}); "
            "free some space or set PGCITE_MODEL_CACHE to another folder"
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _convert(model_dir: Path, target: Path) -> None:
    import onnx

    weights = target.with_suffix(".weights")
    with _work_folder(target) as work:
        # Graph and weights carry their final names and the weights move first: a reader that sees
        # the graph finds its weights, and two processes converting at once both succeed.
        onnx.save(
            build_graph(model_dir),
            work / target.name,
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=weights.name,
        )
        verify(MiniLM(work / target.name, model_dir))
        os.chmod(work / weights.name, 0o644)  # onnx writes it owner-only; the graph beside it is 0644
        os.replace(work / weights.name, weights)
        os.replace(work / target.name, target)


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
        import onnxruntime

        self.path = onnx_file
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # the fused graph's shape notes are not the user's concern
        try:
            self.session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 -- onnxruntime's own Fail / InvalidProtobuf / NoSuchFile share no base
            raise EmbeddingError(
                f"cannot load the bundled model from {onnx_file} ({str(exc)[:200]}); delete that file and run again"
            ) from None
        self.dimension = self.session.get_outputs()[0].shape[1]
        max_tokens = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text, in order; batched by length so little is padding."""
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end + 1 - start) * len(ids[order[end]]) <= BATCH_TOKENS:
                end += 1
            rows, start = order[start:end], end
            length = len(ids[rows[-1]])
            tokens = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for row, i in enumerate(rows):
                tokens[row, : len(ids[i])], mask[row, : len(ids[i])] = ids[i], 1
            out[rows] = self.session.run(None, {"input_ids": tokens, "attention_mask": mask})[0]
        return out
