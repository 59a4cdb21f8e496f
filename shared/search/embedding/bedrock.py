"""Amazon Titan Text Embeddings v2 on Bedrock: the embedder of the AWS deployment."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.search.ports import Vectors

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS = (256, 512, 1024)
# Titan v2 accepts up to 8,192 tokens or 50,000 characters per input.
MAX_INPUT_CHARS = 50_000


class EmbeddingError(Exception):
    """Bedrock refused or failed an embedding request."""


class TitanEmbedder:
    """`InvokeModel` per text (Titan has no synchronous batch API), a few calls in parallel.

    `normalize=true` makes Titan return unit vectors, so cosine equals dot product.
    """

    def __init__(
        self,
        client: Any,
        model_id: str = TITAN_V2,
        dimensions: int = 1024,
        parallelism: int = 4,
    ) -> None:
        if dimensions not in TITAN_DIMENSIONS:
            raise ValueError(
                f"Titan v2 dimensions must be one of {TITAN_DIMENSIONS} (got {dimensions})"
            )
        self._client = client
        self._model_id = model_id
        self._dimensions = dimensions
        self._parallelism = parallelism

    @property
    def model_id(self) -> str:
        return f"{self._model_id}/{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _one(self, text: str) -> list[float]:
        from botocore.exceptions import ClientError

        body = {
            "inputText": text[:MAX_INPUT_CHARS] or " ",
            "dimensions": self._dimensions,
            "normalize": True,
        }
        try:
            response = self._client.invoke_model(
                modelId=self._model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
        except ClientError as error:
            raise EmbeddingError(f"Bedrock embedding failed: {error}") from error
        payload = json.loads(response["body"].read())
        vector: list[float] = payload["embedding"]
        return vector

    def embed(self, texts: list[str]) -> Vectors:
        """Unit vectors for `texts`, in order."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        if len(texts) == 1 or self._parallelism <= 1:
            rows = [self._one(t) for t in texts]
        else:
            with ThreadPoolExecutor(max_workers=self._parallelism) as pool:
                rows = list(pool.map(self._one, texts))
        return np.asarray(rows, dtype=np.float32)
