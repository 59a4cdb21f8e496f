"""cairn's MiniLM vectors equal torch's (to 1e-6) on both of its engines.

The fixture holds torch 2.13's vectors for six texts, each embedded alone; how it was made is
in its `produced_by` (rerun: `cairn bench embed --write-reference FILE --torch-python PY`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shared.search.embedding.minilm import MODEL_ID, MiniLMEmbedder
from shared.search.embedding.onnx_graph import bert_graph, runtime_available

FIXTURE = Path(__file__).parent / "fixtures" / "embedding" / "minilm_torch_reference.json"
TOLERANCE = 1e-6


def _reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(FIXTURE.read_text())
    assert data["model"] == MODEL_ID
    texts = [row["text"] for row in data["texts"]]
    return texts, np.asarray([row["vector"] for row in data["texts"]], dtype=np.float32)


@pytest.mark.parametrize(
    "backend",
    [
        # onnxruntime ships wheels for the common platforms only; where it has none, cairn
        # embeds on the numpy path (the other case), so only this case has nothing to run.
        pytest.param(
            "onnxruntime",
            marks=pytest.mark.skipif(not runtime_available(), reason="no onnxruntime wheel here"),
        ),
        "numpy",
    ],
)
def test_vectors_match_torch_batched_and_alone(backend: str) -> None:
    texts, expected = _reference()
    embedder = MiniLMEmbedder(workers=1, backend=backend)  # type: ignore[arg-type]
    # Together: batched by length, so the short texts are padded next to longer ones.
    together = embedder.embed(texts)
    assert embedder.backend == backend
    assert float(np.abs(together - expected).max()) <= TOLERANCE
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert float(np.abs(alone - expected).max()) <= TOLERANCE


def test_the_default_engine_is_onnxruntime_where_it_imports() -> None:
    embedder = MiniLMEmbedder(workers=1)
    embedder.embed(["x"])
    assert embedder.backend == ("onnxruntime" if runtime_available() else "numpy")


def test_only_bert_with_exact_gelu_is_built() -> None:
    with pytest.raises(ValueError, match="exact GELU"):
        bert_graph({}, {"hidden_act": "gelu_new"})
