"""all-MiniLM-L6-v2 as an ONNX graph, written with ``onnx.helper`` from the upstream
``model.safetensors``: BERT embeddings (word + position + token type 0, LayerNorm), 6 encoder
layers (12-head attention with the padding mask, exact erf GELU), then the mean pooling over
real tokens and the L2 normalisation of sentence-transformers. Inputs ``input_ids`` and
``attention_mask`` (int64, batch x length, length up to 128); output ``embeddings``
(float32, batch x 384).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

LAYERS, HEADS, WIDTH, EPS = 6, 12, 384, 1e-12
OPSET = 17  # LayerNormalization is a standard op from 17 on
#: Nodes the ``int8`` variant keeps in float32: the feed-forward output layers, whose inputs
#: (GELU outputs) have the widest range; quantising them too moves the embeddings most
#: (cosine to fp32 0.991 at worst on the test texts, 0.996 with these kept).
INT8_EXCLUDE = tuple(f"encoder.layer.{i}.output.dense" for i in range(LAYERS))


def read_safetensors(path: Path) -> dict[str, Any]:
    """The float32 tensors of a safetensors file, as NumPy arrays (copied out of a map)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out: dict[str, Any] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        lo, hi = meta["data_offsets"]
        out[name] = np.array(data[lo:hi]).view(np.float32).reshape(meta["shape"])
    return out


class _Builder:
    def __init__(self, weights: dict[str, Any]) -> None:
        from onnx import helper

        self.h = helper
        self.w = weights
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: Any) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        arr = self.w[key]
        return self.const(key, np.ascontiguousarray(arr.T) if transpose else arr)

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.h.make_node(kind, list(inputs), [out], name=out, **attrs))
        return out

    def dense(self, x: str, prefix: str) -> str:
        y = self.op("MatMul", x, self.weight(prefix + ".weight", transpose=True))
        self.nodes[-1].name = prefix
        return self.op("Add", y, self.weight(prefix + ".bias"))

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(prefix + ".weight"),
            self.weight(prefix + ".bias"),
            axis=-1,
            epsilon=EPS,
        )


def build_minilm(weights: dict[str, Any]) -> Any:
    """The ``onnx.ModelProto`` of the encoder, pooling and normalisation (weights embedded)."""
    from onnx import TensorProto, helper

    b = _Builder(weights)
    hd = WIDTH // HEADS
    # embeddings: positions 0..length-1 sliced from the table, token type 0 for every token
    length = b.op(
        "Gather", b.op("Shape", "input_ids"), b.const("one_i64", np.array(1, np.int64)), axis=0
    )
    positions = b.op(
        "Slice",
        b.weight("embeddings.position_embeddings.weight"),
        b.const("zero_1d", np.array([0], np.int64)),
        b.op("Unsqueeze", length, b.const("axes0", np.array([0], np.int64))),
        b.const("axes0_slice", np.array([0], np.int64)),
    )
    words = b.op("Gather", b.weight("embeddings.word_embeddings.weight"), "input_ids", axis=0)
    token_type = b.const(
        "token_type_0", weights["embeddings.token_type_embeddings.weight"][0].copy()
    )
    x = b.op("Add", b.op("Add", words, positions), token_type)
    x = b.layer_norm(x, "embeddings.LayerNorm")
    # additive mask (batch, 1, 1, length): 0 for tokens, -1e9 for padding
    maskf = b.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = b.op(
        "Mul",
        b.op("Sub", b.const("one_f", np.array(1.0, np.float32)), maskf),
        b.const("neg_big", np.array(-1e9, np.float32)),
    )
    bias = b.op("Unsqueeze", bias, b.const("axes12", np.array([1, 2], np.int64)))
    split = b.const("heads_shape", np.array([0, 0, HEADS, hd], np.int64))
    merge = b.const("width_shape", np.array([0, 0, WIDTH], np.int64))
    scale = b.const("scale", np.array(1.0 / math.sqrt(hd), np.float32))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        q, k, v = (
            b.op(
                "Transpose",
                b.op("Reshape", b.dense(x, p + "attention.self." + name), split),
                perm=perm,
            )
            for name, perm in (
                ("query", [0, 2, 1, 3]),
                ("key", [0, 2, 3, 1]),
                ("value", [0, 2, 1, 3]),
            )
        )
        scores = b.op("Add", b.op("Mul", b.op("MatMul", q, k), scale), bias)
        probs = b.op("Softmax", scores, axis=-1)
        ctx = b.op("Transpose", b.op("MatMul", probs, v), perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", ctx, merge)
        attn = b.dense(ctx, p + "attention.output.dense")
        x = b.layer_norm(b.op("Add", attn, x), p + "attention.output.LayerNorm")
        h = b.dense(x, p + "intermediate.dense")
        # exact GELU: h * 0.5 * (1 + erf(h / sqrt 2))
        erf = b.op(
            "Erf", b.op("Div", h, b.const(f"sqrt2_{i}", np.array(math.sqrt(2.0), np.float32)))
        )
        gelu = b.op(
            "Mul",
            b.op("Mul", h, b.op("Add", erf, b.const(f"one_{i}", np.array(1.0, np.float32)))),
            b.const(f"half_{i}", np.array(0.5, np.float32)),
        )
        out = b.dense(gelu, p + "output.dense")
        x = b.layer_norm(b.op("Add", out, x), p + "output.LayerNorm")
    # mean over real tokens, then L2 normalisation
    m = b.op("Unsqueeze", maskf, b.const("axes2", np.array([2], np.int64)))
    axis1 = b.const("axis1", np.array([1], np.int64))
    summed = b.op("ReduceSum", b.op("Mul", x, m), axis1, keepdims=0)
    count = b.op(
        "Max",
        b.op("ReduceSum", m, axis1, keepdims=0),
        b.const("min_count", np.array(1e-9, np.float32)),
    )
    pooled = b.op("Div", summed, count)
    norm = b.op(
        "Max",
        b.op("Sqrt", b.op("ReduceSumSquare", pooled, axes=[-1], keepdims=1)),
        b.const("min_norm", np.array(1e-12, np.float32)),
    )
    b.nodes.append(helper.make_node("Div", [pooled, norm], ["embeddings"]))
    graph = helper.make_graph(
        b.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", WIDTH])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def _not_preprocessing_advice(record: Any) -> bool:
    # the quantiser advises a pre-processing pass on the root logger at every call; the graph
    # here is built for it (static weights, named nodes), so that one message is dropped
    return "pre-processing before quantization" not in record.getMessage()


def quantize_int8(model: Any, exclude: tuple[str, ...] = ()) -> bytes:
    """``model`` with int8 weights (ONNX Runtime dynamic quantisation: uint8 weights, one
    scale per output channel; activations quantised per call at run time), serialised. The
    dense layers and the word-embedding table are quantised; ``exclude`` names nodes left in
    float32 (a dense node is named after its weight, e.g.
    ``encoder.layer.5.output.dense``)."""
    import logging
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    root.addFilter(_not_preprocessing_advice)
    try:
        with tempfile.TemporaryDirectory(prefix="goat-minilm-") as tmp:
            out = Path(tmp) / "int8.onnx"
            quantize_dynamic(
                model,
                out,
                weight_type=QuantType.QUInt8,
                per_channel=True,
                nodes_to_exclude=list(exclude),
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
            return out.read_bytes()
    finally:
        root.removeFilter(_not_preprocessing_advice)


def build_file(model_dir: Path, variant: str, out: Path) -> None:
    """Write the graph of ``variant`` (``fp32`` or ``int8``) for the weights in
    ``model_dir`` to ``out``."""
    model = build_minilm(read_safetensors(model_dir / "model.safetensors"))
    if variant == "int8":
        out.write_bytes(quantize_int8(model, INT8_EXCLUDE))
    elif variant == "fp32":
        out.write_bytes(model.SerializeToString())
    else:
        raise ValueError(f"unknown MiniLM variant {variant!r}")


if __name__ == "__main__":  # run by goat_embed._minilm in a child process
    import sys

    build_file(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
