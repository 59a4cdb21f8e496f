"""`memory_search` reads its candidate memories in one batch, not once per hit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from shared.auth.principal import Principal
from shared.memory.models import Memory
from shared.memory.service import MemoryService

T0 = datetime(2026, 11, 1, tzinfo=UTC)
CALLER = Principal(team="alpha", token_id="t", token_name="t", scopes=frozenset({"memory"}))


def _memory(memory_id: str, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": memory_id,
        "content": f"about {memory_id}",
        "created_at": T0,
        "updated_at": T0,
        "created_by": "agent-a",
    }
    return Memory.model_validate({**values, **fields})


class _Store:
    """`get_many` over a dict; any other read fails the test."""

    def __init__(self, memories: list[Memory]) -> None:
        self.memories = {m.id: m for m in memories}
        self.batches: list[tuple[str, list[str]]] = []

    def get_many(self, team: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        self.batches.append((team, list(memory_ids)))
        return {i: self.memories[i] for i in memory_ids if i in self.memories}

    def get(self, team: str, memory_id: str) -> Memory | None:
        raise AssertionError("memory_search read one memory at a time")


class _Index:
    def __init__(self, ranked: list[tuple[str, float]]) -> None:
        self.ranked = ranked

    def search(self, team: str, query: str, limit: int) -> list[tuple[str, float]]:
        return self.ranked[:limit]


def test_search_reads_every_candidate_in_one_batch_and_keeps_the_index_order() -> None:
    store = _Store(
        [
            _memory("mem_1", key="one", tags=["a"]),
            _memory("mem_2", status="proposed"),  # awaiting review: not a hit
            _memory("mem_3"),
            _memory("mem_4"),
        ]
    )
    ranked = [("mem_3", 0.9), ("mem_gone", 0.8), ("mem_2", 0.7), ("mem_1", 0.6), ("mem_4", 0.5)]
    service = MemoryService(store, _Index(ranked), findings=None)  # type: ignore[arg-type]

    hits = service.search(CALLER, query="anything", limit=2)

    assert [(hit.id, hit.score) for hit in hits] == [("mem_3", 0.9), ("mem_1", 0.6)]
    assert (hits[1].key, hits[1].tags, hits[1].content) == ("one", ["a"], "about mem_1")
    assert store.batches == [("alpha", [memory_id for memory_id, _ in ranked])]
