"""A hybrid search embeds its query on another thread, in the caller's context, while the
index runs its BM25 leg; the page is the one a precomputed vector gives."""

from __future__ import annotations

import contextvars
import threading
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.models import DocumentInput, IndexQuery, SearchFilters
from shared.search.service import SearchService
from tests.unit.search.support import HashingEmbedder, MemoryDocumentStore

REQUEST = contextvars.ContextVar("request", default="none")


class WatchedEmbedder(HashingEmbedder):
    """Records, for each call, its thread and the caller's context variable."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, str]] = []

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.seen.append((threading.get_ident(), REQUEST.get()))
        return super().embed(texts)


def test_the_query_embeds_on_another_thread_in_the_callers_context(tmp_path: Path) -> None:
    embedder = WatchedEmbedder()
    index = EmbeddedIndex(tmp_path, embedder.dimensions)
    service = SearchService(MemoryDocumentStore(), index, embedder)
    service.upsert_documents(
        "t",
        [
            DocumentInput(source="s", source_id=f"d{i}", title=f"d{i}", text=text)
            for i, text in enumerate(
                ["deploy freeze on friday", "billing invoice rounding", "redis pool size"]
            )
        ],
    )
    embedder.seen.clear()
    REQUEST.set("req-1")
    page = service.search("t", "deploy freeze")
    assert [(ident != threading.get_ident(), seen) for ident, seen in embedder.seen] == [
        (True, "req-1")
    ]
    # The same page as the index gives for the vector computed beforehand.
    vector = [float(x) for x in HashingEmbedder().embed(["deploy freeze"])[0]]
    filters = SearchFilters(team="t", now=time.time())
    direct = index.query(IndexQuery(text="deploy freeze", vector=vector, filters=filters))
    assert [(g.entity_id, [h.chunk.chunk_id for h in g.hits]) for g in page.groups] == [
        (g.entity_id, [h.chunk.chunk_id for h in g.hits]) for g in direct.groups
    ]
    assert page.groups  # a page to compare: the equality above is not of two empty lists
    # A bm25 query embeds nothing.
    service.search("t", "deploy freeze", mode="bm25")
    assert len(embedder.seen) == 1
