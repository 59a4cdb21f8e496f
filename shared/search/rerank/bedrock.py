"""Bedrock's rerank models (Amazon Rerank 1.0, Cohere Rerank 3.5) behind the `Reranker` port.

One `Rerank` call of the Bedrock Agent Runtime per query: the passages travel inline and come
back as `(index, relevanceScore)` pairs. Passages beyond the model's input limit are cut
(32,000 characters is the API's bound per document).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

AMAZON_RERANK = "amazon.rerank-v1:0"
COHERE_RERANK = "cohere.rerank-v3-5:0"
MAX_PASSAGE_CHARS = 32_000
MAX_PASSAGES = 1_000


class RerankError(Exception):
    """Bedrock refused or failed a rerank request."""


def model_arn(region: str, model_id: str) -> str:
    """The foundation-model ARN the Rerank API takes (an ARN passes through unchanged)."""
    if model_id.startswith("arn:"):
        return model_id
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


class BedrockReranker:
    """`Reranker` on the Bedrock Agent Runtime `Rerank` API."""

    def __init__(self, client: Any, model_id: str = AMAZON_RERANK, region: str = "") -> None:
        self._client = client
        self._arn = model_arn(region or client.meta.region_name, model_id)
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        from botocore.exceptions import BotoCoreError, ClientError

        if not passages:
            return []
        if len(passages) > MAX_PASSAGES:
            raise ValueError(f"at most {MAX_PASSAGES} passages per rerank (got {len(passages)})")
        request = {
            "queries": [{"type": "TEXT", "textQuery": {"text": query or " "}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {
                        "type": "TEXT",
                        "textDocument": {"text": (p or " ")[:MAX_PASSAGE_CHARS]},
                    },
                }
                for p in passages
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(passages),
                    "modelConfiguration": {"modelArn": self._arn},
                },
            },
        }
        scores = [float("-inf")] * len(passages)
        try:
            response = self._client.rerank(**request)
            while True:
                for result in response.get("results", []):
                    scores[int(result["index"])] = float(result["relevanceScore"])
                token = response.get("nextToken")
                if not token:
                    break
                response = self._client.rerank(**request, nextToken=token)
        except (ClientError, BotoCoreError) as error:
            raise RerankError(f"Bedrock rerank failed: {error}") from error
        return scores
