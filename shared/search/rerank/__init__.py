"""The reranker stage: a cross-encoder rescoring the fused top-k (numpy locally, Bedrock in AWS)."""
