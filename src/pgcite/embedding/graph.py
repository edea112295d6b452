"""MiniLM's BERT encoder written as an ONNX graph from its weights (no torch), and what the bundled
model and the reader share to keep such a graph in the model cache: a folder to build it in, and a
session on ONNX Runtime's fused CPU operators.

One graph, two heads: the embedding model mean-pools and normalises ("embedding"); the reader reads
a question and a section as segments A and B and mean-pools into one logit ("score")."""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from pgcite.errors import EmbeddingError


def encoder_graph(w: dict[str, np.ndarray], config: dict, name: str, *, pair: bool = False):
    """The encoder as ONNX Runtime's fused CPU operators (Attention, SkipLayerNormalization, Gelu).
    pair: inputs carry token_type_ids and a linear head (`head.weight`, `head.bias`) gives a score."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(key: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), key))
        return key

    def op(kind: str, inputs: list[str], domain: str = "", output: str | None = None, **attributes) -> str:
        output = output or f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [output], domain=domain, **attributes))
        return output

    ms = "com.microsoft"
    e = "embeddings."
    types = w[e + "token_type_embeddings.weight"]
    # One segment: its type's row joins the position table. Two: each token's type row is added.
    positions = weight("positions", w[e + "position_embeddings.weight"] + (0 if pair else types[0]))
    zero = weight("zero", np.array([0], np.int64))
    length = op("Shape", ["input_ids"], start=1, end=2)
    x = op(
        "Add",
        [
            op("Gather", [weight("words", w[e + "word_embeddings.weight"]), "input_ids"]),
            op("Slice", [positions, zero, length, zero]),
        ],
    )
    if pair:
        x = op("Add", [x, op("Gather", [weight("types", types), "token_type_ids"])])
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
    # Mean over the real tokens (sentence-transformers' Pooling).
    real = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    axis = weight("axis", np.array([1], np.int64))
    summed = op(
        "ReduceSum",
        [op("Mul", [x, op("Unsqueeze", [real, weight("last", np.array([2], np.int64))])]), axis],
        keepdims=0,
    )
    count = op("Max", [op("ReduceSum", [real, axis], keepdims=1), weight("tiny", np.array(1e-9, np.float32))])
    pooled = op("Div", [summed, count])
    width = w[e + "word_embeddings.weight"].shape[1]
    inputs = ("input_ids", "token_type_ids", "attention_mask") if pair else ("input_ids", "attention_mask")
    if pair:
        logit = op("MatMul", [pooled, weight("head", w["head.weight"].T)])
        op(
            "Squeeze",
            [op("Add", [logit, weight("headb", w["head.bias"])]), weight("one", np.array([1], np.int64))],
            output="score",
        )
        output = helper.make_tensor_value_info("score", TensorProto.FLOAT, ["batch"])
    else:
        op("LpNormalization", [pooled], output="embedding", axis=1, p=2)  # unit length (Normalize)
        output = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", width])
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(i, TensorProto.INT64, ["batch", "tokens"]) for i in inputs],
        [output],
        initializers,
    )
    return onnx.helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid(ms, 1)], ir_version=10
    )


def length_batches(lengths: Sequence[int], budget: int) -> Iterator[list[int]]:
    """Indices of texts in batches of like length, each at most `budget` padded tokens (or one text)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end + 1 - start) * lengths[order[end]] <= budget:
            end += 1
        yield order[start:end]
        start = end


def session(onnx_file: Path, what: str):
    """An ONNX Runtime session on the CPU with every graph optimisation; `what` names the model in errors."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # the fused graph's shape notes are not the user's concern
    try:
        return onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 -- onnxruntime's own Fail / InvalidProtobuf / NoSuchFile share no base
        raise EmbeddingError(
            f"cannot load {what} from {onnx_file} ({str(exc)[:200]}); delete that file and run again"
        ) from None


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The quantizer's advice ("consider pre-processing") goes to the root logger: not the user's concern."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


@contextlib.contextmanager
def work_folder(target: Path) -> Iterator[Path]:
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


def save_with_weights(model, work: Path, target: Path) -> Path:
    """`model` saved in `work` under `target`'s name, its weights in a file beside it (memory-mapped
    when loaded); returns the graph's path in `work`."""
    import onnx

    onnx.save(
        model,
        work / target.name,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=target.with_suffix(".weights").name,
    )
    return work / target.name


def quantize_int8(fp32: Path, target: Path, check: Callable[[Path], None]) -> None:
    """`fp32`'s graph with int8 weights, per output channel, activations quantized as they come (no
    calibration set): ONNX Runtime runs its MatMuls and attention projections on integer kernels
    (VNNI where present). `check` sees the file before it is moved into place as `target`."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with work_folder(target) as work, quiet():
        quantize_dynamic(
            fp32,
            work / target.name,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # The fused com.microsoft operators have no shape inference: their outputs are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        check(work / target.name)
        move_into_place(work, target)


def move_into_place(work: Path, target: Path) -> None:
    """The weights first, then the graph: a reader that sees the graph finds its weights, and two
    processes converting at once both succeed."""
    import os

    weights = target.with_suffix(".weights")
    if (work / weights.name).is_file():
        os.chmod(work / weights.name, 0o644)  # onnx writes it owner-only; the graph beside it is 0644
        os.replace(work / weights.name, weights)
    os.chmod(work / target.name, 0o644)
    os.replace(work / target.name, target)
