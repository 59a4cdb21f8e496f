"""`NodeIndex` on the hybrid search engine (`shared.search`): nodes are chunks of type
`knowledge`, one chunk per node, which the `search` tool never returns (it asks for entities
and memories only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from shared.knowledge.models import KnowledgeNode
from shared.search.models import ChunkDoc, SearchMode, chunk_id_for
from shared.search.service import SearchService

KNOWLEDGE_TYPE: Final = "knowledge"
KNOWLEDGE_SOURCE = "knowledge"
_MODES: dict[str, SearchMode] = {"hybrid": "hybrid", "semantic": "vector", "lexical": "bm25"}


def node_chunk(team: str, node: KnowledgeNode) -> ChunkDoc:
    text = f"{node.summary}\n{node.embed_text}"
    return ChunkDoc(
        team=team,
        entity_id=node.uuid,
        chunk_id=chunk_id_for(node.uuid, 0),
        chunk_index=0,
        text=text,
        title=node.intent or node.summary[:80],
        source=KNOWLEDGE_SOURCE,
        result_type=KNOWLEDGE_TYPE,
        chunk_type=KNOWLEDGE_TYPE,
        char_offset_start=0,
        char_offset_end=len(text),
        tags=tuple(node.tags),
    )


class SearchNodeIndex:
    """Index and rank knowledge nodes with the engine `search` and `recall` use."""

    def __init__(self, service: SearchService | Callable[[], SearchService]) -> None:
        self._service = service

    def _resolve(self) -> SearchService:
        return self._service if isinstance(self._service, SearchService) else self._service()

    def index(self, team: str, nodes: Sequence[KnowledgeNode]) -> None:
        if not nodes:
            return
        service = self._resolve()
        docs = [node_chunk(team, node) for node in nodes]
        embedder = service.embedder
        for_team = getattr(embedder, "for_team", None)
        if callable(for_team):
            embedder = for_team(team)
        vectors = embedder.embed([d.embedding_text() for d in docs])
        service.index.index(docs, vectors)

    def query(self, team: str, text: str, mode: str, limit: int) -> list[tuple[str, float]]:
        page = self._resolve().search(
            team,
            text,
            limit=limit,
            source=KNOWLEDGE_SOURCE,
            types=frozenset({KNOWLEDGE_TYPE}),
            mode=_MODES[mode],
        )
        return [(group.entity_id, group.score) for group in page.groups]
