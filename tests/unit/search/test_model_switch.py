"""Switching the embedded embedder re-embeds the index through the cache, keyed by model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache
from shared.search.models import DocumentInput
from shared.search.service import SearchService
from shared.search.wiring import LEGACY_MODEL, switch_embedding_model
from tests.unit.search.support import HashingEmbedder, MemoryDocumentStore


class ReversedEmbedder(HashingEmbedder):
    """Another 'model': the hashing vectors of the reversed words."""

    model_id = "test/reversed"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.seen.extend(texts)
        return super().embed([" ".join(w[::-1] for w in t.split()) for t in texts])


DOCS = [
    DocumentInput(source="s", source_id=str(i), title=f"title {i}", text=text)
    for i, text in enumerate(
        ["rerankers reorder candidates", "bm25 counts words", "vectors capture meaning"]
    )
]


def _service(tmp_path: Path, inner: HashingEmbedder) -> tuple[SearchService, EmbeddedIndex]:
    cached = CachedEmbedder(inner, SqliteEmbeddingCache(tmp_path / "cache.sqlite3"))
    index = EmbeddedIndex(tmp_path / "index", inner.dimensions)
    switch_embedding_model(index, cached, show_progress=False)
    return SearchService(MemoryDocumentStore(), index, cached), index


def _vectors(index: EmbeddedIndex) -> dict[str, bytes]:
    rows = index._reader().execute("SELECT chunk_id, vector FROM chunks").fetchall()
    return {chunk_id: blob for chunk_id, blob in rows}


def test_switching_models_reembeds_every_chunk_and_switching_back_hits_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = HashingEmbedder()
    service, index = _service(tmp_path, first)
    service.upsert_documents("alpha", DOCS[:2])
    service.upsert_documents("beta", DOCS[2:])
    assert index.embedding_model() == "test/hashing"
    before = _vectors(index)

    other = ReversedEmbedder()
    service, index = _service(tmp_path, other)
    assert index.embedding_model() == "test/reversed"
    # Each team's chunk texts went through the new model (title, blank line, text).
    assert sorted(other.seen) == sorted(f"{d.title}\n\n{d.text}" for d in DOCS)
    after = _vectors(index)
    assert after.keys() == before.keys()
    assert all(after[k] != before[k] for k in after)
    assert "re-embedding 3 chunks with test/reversed" in capsys.readouterr().err
    # The new vectors rank: a query through the new model finds its document.
    page = service.search("alpha", "bm25 counts words", mode="vector")
    assert (
        page.groups[0].entity_id == service.search("alpha", "bm25", mode="bm25").groups[0].entity_id
    )

    # Back to the first model: every vector comes from the cache (keys carry the model id).
    again = HashingEmbedder()
    _, index = _service(tmp_path, again)
    assert again.embedded == []
    assert _vectors(index) == before


def test_an_unchanged_model_reembeds_nothing(tmp_path: Path) -> None:
    inner = HashingEmbedder()
    service, _ = _service(tmp_path, inner)
    service.upsert_documents("alpha", DOCS)
    inner.embedded.clear()
    _, index = _service(tmp_path, inner)
    assert inner.embedded == []
    assert index.embedding_model() == "test/hashing"


def test_an_index_from_before_the_model_was_recorded_is_taken_as_minilm(tmp_path: Path) -> None:
    inner = HashingEmbedder()
    service, index = _service(tmp_path, inner)
    service.upsert_documents("alpha", DOCS)
    index._writer.execute("DELETE FROM meta")
    assert index.embedding_model() is None
    _, index = _service(tmp_path, HashingEmbedder())
    # Recorded as the legacy model, then re-embedded with the configured one.
    assert index.embedding_model() == "test/hashing"
    assert LEGACY_MODEL == "sentence-transformers/all-MiniLM-L6-v2"
