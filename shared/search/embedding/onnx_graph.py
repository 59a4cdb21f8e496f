"""BERT as an ONNX graph built here from the verified weights, run by ONNX Runtime on the CPU.

Why: written out in numpy, BERT spends a third of its time outside the matrix products (the
softmax, exact-erf GELU and layer norms each walk the activations several times, one ufunc
at a time), and 1.8x torch's CPU time in all. ONNX Runtime runs the same products through its
own GEMM and fuses the rest (one `Attention` node does the QKV product, the masked softmax and
the context; `BiasGelu` is exact-erf GELU; `SkipLayerNormalization` folds in the residual), so
it embeds as fast as torch and to torch's vectors within 1e-6 (docs/benchmarks.md,
"Embedding speed against torch"). Nothing is downloaded: the graph is made from the weights
`weights.verify_model_dir` already accepted, in this process, by `bert_graph`.

The graph is serialised with a few lines of protobuf wire format (`_Proto`) rather than the
`onnx` package: its 30 MB (and ml_dtypes) would be installed only to write some twenty
fields whose numbers the ONNX spec freezes (onnx.proto: protobuf field numbers never change),
and ONNX Runtime checks the model it is given as it loads it.
"""

from __future__ import annotations

import struct
from typing import Any

# onnx.proto's enums: TensorProto.DataType and AttributeProto.AttributeType.
_FLOAT, _INT32, _INT64 = 1, 6, 7
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7
_IR_VERSION = 8  # opset 17's IR
_OPSET = 17  # LayerNormalization's first opset
_CONTRIB = "com.microsoft"  # ONNX Runtime's own fused operators


def runtime_available() -> bool:
    """Whether ONNX Runtime imports here (it has no wheel for every platform)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _Proto:
    """One protobuf message being written: fields appended in any order.

    A nested message keeps its parts rather than being joined into bytes first: the weights
    (90 MB for MiniLM) sit three messages deep, and joining at each level copied them three
    times. `encode` joins once, at the top."""

    def __init__(self) -> None:
        self._parts: list[bytes | memoryview] = []
        self.size = 0

    @staticmethod
    def _varint(value: int) -> bytes:
        value &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
        out = bytearray()
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                return bytes(out)

    def _add(self, *parts: bytes | memoryview) -> _Proto:
        self._parts += parts
        self.size += sum(len(part) for part in parts)
        return self

    def number(self, field: int, value: int) -> _Proto:
        return self._add(self._varint(field << 3), self._varint(value))

    def real(self, field: int, value: float) -> _Proto:
        return self._add(self._varint(field << 3 | 5), struct.pack("<f", value))

    def message(self, field: int, value: bytes | memoryview | _Proto) -> _Proto:
        """A length-delimited field: a nested message, a string's bytes, or raw bytes (a
        byte-cast memoryview of a tensor's buffer is written without a copy)."""
        if isinstance(value, _Proto):
            self._add(self._varint(field << 3 | 2), self._varint(value.size))
            self._parts += value._parts
            self.size += value.size
            return self
        return self._add(self._varint(field << 3 | 2), self._varint(len(value)), value)

    def text(self, field: int, value: str) -> _Proto:
        return self.message(field, value.encode())

    def encode(self) -> bytes:
        return b"".join(self._parts)


class _Graph:
    """Nodes and initializers of one ONNX graph, named as they are added."""

    def __init__(self) -> None:
        self.graph = _Proto()
        self._count = 0

    def tensor(self, name: str, value: Any) -> str:
        """An initializer (TensorProto: dims 1, data_type 2, name 8, raw_data 9)."""
        import numpy as np

        array = np.ascontiguousarray(value)
        kinds = {np.dtype(np.float32): _FLOAT, np.dtype(np.int64): _INT64}
        message = _Proto()
        for dim in array.shape:
            message.number(1, dim)
        # The array's own buffer, viewed as bytes: copied once, by the final join.
        raw = array.data.cast("B")
        message.number(2, kinds[array.dtype]).text(8, name).message(9, raw)
        self.graph.message(5, message)
        return name

    def node(self, op: str, inputs: list[str], domain: str = "", **attributes: Any) -> str:
        """A node (NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7)."""
        self._count += 1
        output = f"{op}_{self._count}"
        message = _Proto()
        for name in inputs:
            message.text(1, name)
        message.text(2, output).text(3, output).text(4, op)
        for key, value in attributes.items():
            # AttributeProto: name 1, f 2, i 3, ints 8, type 20.
            attribute = _Proto().text(1, key)
            if isinstance(value, float):
                attribute.real(2, value).number(20, _ATTR_FLOAT)
            elif isinstance(value, int):
                attribute.number(3, value).number(20, _ATTR_INT)
            else:
                for item in value:
                    attribute.number(8, item)
                attribute.number(20, _ATTR_INTS)
            message.message(5, attribute)
        if domain:
            message.text(7, domain)
        self.graph.message(1, message)
        return output

    def value(self, field: int, name: str, element: int, dims: list[str | int]) -> None:
        """A graph input (11) or output (12): ValueInfoProto name 1, type 2 → tensor_type 1
        → elem_type 1, shape 2 → dim 1 → dim_value 1 | dim_param 2."""
        shape = _Proto()
        for dim in dims:
            entry = _Proto()
            shape.message(1, entry.number(1, dim) if isinstance(dim, int) else entry.text(2, dim))
        tensor_type = _Proto().number(1, element).message(2, shape)
        self.graph.message(
            field, _Proto().text(1, name).message(2, _Proto().message(1, tensor_type))
        )


def bert_graph(weights: dict[str, Any], config: dict[str, Any]) -> bytes:
    """A serialised ONNX model of BERT's encoder: ids, mask and token types → last hidden states.

    `weights` are the checkpoint's tensors with the dense kernels already transposed to
    (in, out), as `BertEncoder.load` keeps them. Inputs `input_ids` and `token_type_ids`
    (int64) and `attention_mask` (int32, 1 for real tokens), each (batch, width); output
    `hidden`, (batch, width, hidden size).
    """
    import numpy as np

    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"only BERT's exact GELU is built (config says {config['hidden_act']!r})")
    eps = float(config.get("layer_norm_eps", 1e-12))
    heads = int(config.get("num_attention_heads", 12))
    g = _Graph()
    word = g.tensor("word", weights["embeddings.word_embeddings.weight"])
    positions = g.tensor("positions", weights["embeddings.position_embeddings.weight"])
    types = g.tensor("types", weights["embeddings.token_type_embeddings.weight"])
    zero, one, two = (g.tensor(f"i{n}", np.asarray([n], dtype=np.int64)) for n in (0, 1, 2))
    width = g.node("Slice", [g.node("Shape", ["input_ids"]), one, two])
    summed = g.node(
        "Add",
        [
            g.node(
                "Add",
                [g.node("Gather", [word, "input_ids"]), g.node("Slice", [positions, zero, width])],
            ),
            g.node("Gather", [types, "token_type_ids"]),
        ],
    )
    x = g.node(
        "LayerNormalization",
        [
            summed,
            g.tensor("embeddings.norm.w", weights["embeddings.LayerNorm.weight"]),
            g.tensor("embeddings.norm.b", weights["embeddings.LayerNorm.bias"]),
        ],
        axis=-1,
        epsilon=eps,
    )
    for layer in range(int(config.get("num_hidden_layers", 6))):
        p = f"encoder.layer.{layer}."

        def t(name: str, p: str = p) -> str:
            return g.tensor(p + name, weights[p + name])

        qkv = ("attention.self.query", "attention.self.key", "attention.self.value")
        fused_w = np.concatenate([weights[p + n + ".weight"] for n in qkv], axis=1)
        fused_b = np.concatenate([weights[p + n + ".bias"] for n in qkv])
        # Attention: x @ [Wq|Wk|Wv] + b, softmax(q k^T / sqrt(head size)) over unmasked keys, @ v.
        context = g.node(
            "Attention",
            [x, g.tensor(p + "qkv.w", fused_w), g.tensor(p + "qkv.b", fused_b), "attention_mask"],
            domain=_CONTRIB,
            num_heads=heads,
        )
        projected = g.node("MatMul", [context, t("attention.output.dense.weight")])
        # SkipLayerNormalization: LayerNorm(input + skip + bias).
        x = g.node(
            "SkipLayerNormalization",
            [
                projected,
                x,
                t("attention.output.LayerNorm.weight"),
                t("attention.output.LayerNorm.bias"),
                t("attention.output.dense.bias"),
            ],
            domain=_CONTRIB,
            epsilon=eps,
        )
        inner = g.node(
            "BiasGelu",
            [g.node("MatMul", [x, t("intermediate.dense.weight")]), t("intermediate.dense.bias")],
            domain=_CONTRIB,
        )
        x = g.node(
            "SkipLayerNormalization",
            [
                g.node("MatMul", [inner, t("output.dense.weight")]),
                x,
                t("output.LayerNorm.weight"),
                t("output.LayerNorm.bias"),
                t("output.dense.bias"),
            ],
            domain=_CONTRIB,
            epsilon=eps,
        )
    g.graph.message(1, _Proto().text(1, x).text(2, "hidden").text(4, "Identity"))
    g.graph.text(2, "bert")
    g.value(11, "input_ids", _INT64, ["batch", "width"])
    g.value(11, "attention_mask", _INT32, ["batch", "width"])
    g.value(11, "token_type_ids", _INT64, ["batch", "width"])
    g.value(12, "hidden", _FLOAT, ["batch", "width", int(fused_w.shape[0])])
    model = _Proto().number(1, _IR_VERSION).text(2, "cairn").message(7, g.graph)
    model.message(8, _Proto().text(1, "").number(2, _OPSET))
    model.message(8, _Proto().text(1, _CONTRIB).number(2, 1))
    return model.encode()


class OnnxBert:
    """An ONNX Runtime session of `bert_graph`: one CPU thread per call, no spinning.

    Callers run batches on a thread per core (`BertEmbedder`); `run` releases the GIL, and an
    idle intra-op pool that spins would only burn CPU another batch could use.
    """

    def __init__(self, weights: dict[str, Any], config: dict[str, Any]) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: its warnings name no fault of ours
        self._session = ort.InferenceSession(
            bert_graph(weights, config), options, providers=["CPUExecutionProvider"]
        )

    def hidden(self, input_ids: Any, mask: Any, token_types: Any = None) -> Any:
        """`BertEncoder.hidden`: (batch, width) ids, 0/1 mask and types → last hidden states."""
        import numpy as np

        feeds = {
            "input_ids": np.ascontiguousarray(input_ids, dtype=np.int64),
            "attention_mask": np.ascontiguousarray(mask, dtype=np.int32),
            "token_type_ids": (
                np.zeros_like(input_ids, dtype=np.int64)
                if token_types is None
                else np.ascontiguousarray(token_types, dtype=np.int64)
            ),
        }
        return self._session.run(["hidden"], feeds)[0]
