"""Builds the search group on the configured storage and settings (the one place its adapters are
chosen and its service is built).

AWS (`settings.search_endpoint` set): OpenSearch index + Bedrock Titan embedder. Otherwise the
embedded default: SQLite/numpy index and a numpy BERT embedder under `<data_dir>/search/`
(`CAIRN_EMBEDDER`: `minilm`, the default, or `bge-small` from `CAIRN_EMBEDDER_DIR`).
The documents store follows `Settings.storage`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.config.settings import Settings
from shared.search.ports import DocumentStore, Reranker
from shared.search.rerank.stage import RerankConfig
from shared.search.service import SearchService
from shared.storage.backends import Adapters, TableLookup

if TYPE_CHECKING:
    from shared.search.adapters.embedded import EmbeddedIndex
    from shared.search.embedding.cache import CachedEmbedder
    from shared.storage.sqlite import Database


def document_stores(clock: Callable[[], float]) -> Adapters[DocumentStore]:
    """The documents store's adapters; `clock` dates tombstones."""

    def sqlite(database: Database) -> DocumentStore:
        from shared.search.adapters.sqlite_documents import SqliteDocumentStore

        return SqliteDocumentStore(database, clock)

    def dynamodb(tables: TableLookup) -> DocumentStore:
        from shared.search.adapters.dynamodb import DynamoDocumentStore

        return DynamoDocumentStore(tables(names.TABLE_DOCUMENTS), clock)

    return Adapters(sqlite=sqlite, dynamodb=dynamodb)


def build_document_store(clock: Callable[[], float] = time.time) -> DocumentStore:
    return runtime.backend().build(document_stores(clock))


SEARCH_DIR = "search"
EMBEDDING_CACHE_FILE = "embeddings.sqlite3"


def search_dir(settings: Settings) -> Path:
    """Where the embedded index and embedding cache live (a temp dir without a data dir)."""
    base = settings.data_dir or Path(tempfile.gettempdir()) / "cairn-search"
    return base / SEARCH_DIR


def build_embedded_service(settings: Settings) -> SearchService:
    """The embedded default: index and embedding cache in the data folder."""
    from shared.search.adapters.embedded import EmbeddedIndex
    from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache
    from shared.search.embedding.minilm import local_embedder

    directory = search_dir(settings)
    embedder = CachedEmbedder(
        local_embedder(), SqliteEmbeddingCache(directory / EMBEDDING_CACHE_FILE)
    )
    index = EmbeddedIndex(directory, embedder.dimensions)
    switch_embedding_model(index, embedder)
    return SearchService(
        build_document_store(),
        index,
        embedder,
        reranker=build_reranker(settings),
        rerank=rerank_config(),
    )


RERANKER_ENV = "CAIRN_RERANKER"
RERANKER_DIR_ENV = "CAIRN_RERANKER_DIR"
RERANKER_SHA256_ENV = "CAIRN_RERANKER_SHA256"
RERANK_DEPTH_ENV = "CAIRN_RERANK_DEPTH"


def build_reranker(settings: Settings) -> Reranker | None:
    """The reranker of `CAIRN_RERANKER`, or None (the default: no reranking).

    `bedrock:<model id>` (e.g. `bedrock:amazon.rerank-v1:0`): Bedrock's Rerank API in the
    settings' region. `cross-encoder`: a BERT cross-encoder in numpy from `CAIRN_RERANKER_DIR`,
    loaded only if its `model.safetensors` has the SHA-256 `CAIRN_RERANKER_SHA256` (the
    upstream hash). Off by default on both paths: see docs/search.md, "Reranking" — locally a
    cross-encoder costs more than the latency budget on a 2-core machine, and no registry
    package ships verifiable cross-encoder weights.
    """
    import os

    choice = os.environ.get(RERANKER_ENV, "").strip()
    if not choice or choice == "none":
        return None
    if choice.startswith("bedrock:"):
        import boto3

        from shared.search.rerank.bedrock import BedrockReranker

        client = boto3.client("bedrock-agent-runtime", region_name=settings.region)
        return BedrockReranker(client, choice.removeprefix("bedrock:"), settings.region)
    if choice == "cross-encoder":
        from shared.search.embedding.weights import ModelSpec
        from shared.search.rerank.cross_encoder import CrossEncoderReranker

        folder = os.environ.get(RERANKER_DIR_ENV)
        digest = os.environ.get(RERANKER_SHA256_ENV)
        if not folder or not digest:
            raise ValueError(
                f"{RERANKER_ENV}=cross-encoder needs {RERANKER_DIR_ENV} and {RERANKER_SHA256_ENV}"
            )
        spec = ModelSpec(folder, "see the model card", {"model.safetensors": digest.lower()})
        return CrossEncoderReranker(Path(folder), spec)
    raise ValueError(
        f"{RERANKER_ENV} must be none, cross-encoder or bedrock:<model id> (got {choice!r})"
    )


def rerank_config() -> RerankConfig:
    """The reranked depth: `CAIRN_RERANK_DEPTH`, else the one chosen on SciFact train."""
    import os

    raw = os.environ.get(RERANK_DEPTH_ENV)
    if raw is None:
        return RerankConfig()
    try:
        return RerankConfig(depth=int(raw))
    except ValueError as error:
        raise ValueError(f"{RERANK_DEPTH_ENV} must be a positive integer (got {raw!r})") from error


# Vectors written before the index recorded its model all came from the only model there was.
LEGACY_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def switch_embedding_model(
    index: EmbeddedIndex, embedder: CachedEmbedder, *, show_progress: bool = True
) -> int:
    """Re-embed the index when its vectors come from another model; returns the chunks redone.

    Each team's chunks go through that team's cache keys, which carry the model id: switching
    back to a model used before costs only lookups. The switch is announced on stderr with a
    progress bar, since a large index takes minutes on a laptop.
    """
    import sys

    from tqdm import tqdm

    recorded = index.embedding_model()
    total = index.chunk_count()
    if recorded is None:
        recorded = LEGACY_MODEL if total else embedder.model_id
        index.record_embedding_model(recorded)
    if recorded == embedder.model_id:
        return 0
    print(
        f"cairn: search index vectors are {recorded}; re-embedding {total} chunks "
        f"with {embedder.model_id}",
        file=sys.stderr,
    )
    with tqdm(
        total=total, desc="re-embedding", unit="chunk", file=sys.stderr, disable=not show_progress
    ) as bar:
        return index.reembed(
            lambda team: embedder.for_team(team).embed, embedder.model_id, progress=bar.update
        )


def build_aws_service(settings: Settings) -> SearchService:
    """OpenSearch (SigV4) + Bedrock Titan v2."""
    import boto3

    from shared.search.adapters.opensearch import OpenSearchIndex, signed_client
    from shared.search.embedding.bedrock import TitanEmbedder
    from shared.search.embedding.cache import CachedEmbedder, MemoryEmbeddingCache

    assert settings.search_endpoint is not None
    embedder = CachedEmbedder(
        TitanEmbedder(
            boto3.client("bedrock-runtime", region_name=settings.region),
            model_id=settings.embedding_model_id,
            dimensions=settings.embedding_dimensions,
        ),
        MemoryEmbeddingCache(),
    )
    index = OpenSearchIndex(
        signed_client(settings.search_endpoint, settings.region, settings.search_service),
        settings.search_index,
        settings.embedding_dimensions,
        serverless=settings.search_service == "aoss",
    )
    # Each team's index is created on its first write (one HEAD per team per container).
    return SearchService(
        build_document_store(),
        index,
        embedder,
        reranker=build_reranker(settings),
        rerank=rerank_config(),
    )


@runtime.cached
def build_search_service() -> SearchService:
    """The process's search service (built on first use, reused by warm invocations)."""
    settings = runtime.settings()
    if settings.search_endpoint:
        return build_aws_service(settings)
    return build_embedded_service(settings)
