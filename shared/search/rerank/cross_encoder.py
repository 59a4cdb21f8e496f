"""A BERT cross-encoder in numpy (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) behind `Reranker`.

The query and a passage are read together (`[CLS] query [SEP] passage [SEP]`, token types 0
then 1), through the same numpy encoder as the embedders (`BertEncoder`), then BERT's pooler
(dense + tanh on [CLS]) and the classifier (one logit: the relevance). Weights load only from
a folder whose files match the pinned upstream hashes of `spec`.

Cost: one encoder pass per (query, passage) pair, so reranking k passages costs about what
embedding k chunks costs (the MiniLM-L6 cross-encoders have MiniLM's exact shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.search.embedding.minilm import BertEncoder
from shared.search.embedding.weights import ModelSpec

# The pair is cut to this many tokens (longest part first): the MS MARCO cross-encoders were
# trained on short passages, and attention cost grows with the square of it.
MAX_PAIR_TOKENS = 256


class CrossEncoderReranker:
    """Scores (query, passage) pairs with a BERT sequence-classification checkpoint."""

    def __init__(
        self,
        model_dir: Path,
        spec: ModelSpec | None,
        *,
        model_id: str | None = None,
        max_tokens: int = MAX_PAIR_TOKENS,
        batch_size: int = 8,
    ) -> None:
        self._encoder = BertEncoder(model_dir, spec, max_tokens)
        self._model_id = model_id or (spec.model_id if spec else str(model_dir))
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        return self._model_id

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        import numpy as np

        if not passages:
            return []
        if not self._encoder.loaded:
            self._encoder.load()
        encodings = self._encoder.tokenizer.encode_batch([(query, p) for p in passages])
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        scores = np.zeros(len(passages), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            types = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.float32)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                types[row, :n] = encodings[i].type_ids
                mask[row, :n] = 1.0
            scores[batch] = self._head(self._encoder.hidden(ids, mask, types))
        return [float(s) for s in scores]

    def _head(self, hidden: Any) -> Any:
        """BERT's pooler then the one-logit classifier, on the [CLS] hidden state."""
        import numpy as np

        w = self._encoder.weights
        assert w is not None
        pooled = np.tanh(hidden[:, 0, :] @ w["pooler.dense.weight"] + w["pooler.dense.bias"])
        logits = pooled @ w["classifier.weight"] + w["classifier.bias"]
        return logits[:, 0]
