"""Embedders (MiniLM in numpy, Bedrock Titan) and the content-hash embedding cache."""
