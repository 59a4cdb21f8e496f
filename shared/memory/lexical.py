"""BM25 over a team's memories, computed from the source of truth.

This is the memory ranking until the hybrid engine (shared.search) is wired in; it is real
relevance (BM25, k1=1.2, b=0.75) and deterministic (ties break on id).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

from shared.memory.models import Memory

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_rank(
    query: str, memories: Iterable[Memory], limit: int, k1: float = 1.2, b: float = 0.75
) -> list[tuple[str, float]]:
    """`(memory_id, score)` best first, only memories sharing a term with the query."""
    docs = [(m.id, tokenize(" ".join([m.key or "", m.content, *m.tags]))) for m in memories]
    terms = set(tokenize(query))
    if not docs or not terms:
        return []
    average_length = sum(len(tokens) for _, tokens in docs) / len(docs) or 1.0
    document_frequency = Counter(t for _, tokens in docs for t in set(tokens) if t in terms)
    scored: list[tuple[str, float]] = []
    for memory_id, tokens in docs:
        counts = Counter(tokens)
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if not tf:
                continue
            df = document_frequency[term]
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / average_length))
        if score > 0:
            scored.append((memory_id, round(score, 6)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:limit]


class StoreScanIndex:
    """`MemoryIndex` that ranks by BM25 over the team's memories read from the store."""

    def __init__(self, memories_of: Callable[[str], Iterable[Memory]]) -> None:
        self._memories_of = memories_of

    def index(self, team: str, memory: Memory) -> None:
        """Nothing to maintain: the ranking reads the source of truth."""

    def remove(self, team: str, memory_id: str) -> None:
        """Nothing to maintain: the ranking reads the source of truth."""

    def search(self, team: str, query: str, limit: int) -> list[tuple[str, float]]:
        return bm25_rank(query, self._memories_of(team), limit)
