"""`cairn bench retrieval --relevance`: the relevance score and cut-off on a labelled set.

The set (`relevance_set.json`, next to this module) is a fixed corpus of 40 team memories and
83 queries, each labelled with the memories that answer it — 22 of them about things the
corpus does not hold (no memory is relevant) — and each marked `train` or `heldout`.

1. Features of every (query, memory) pair: the cosine of their MiniLM vectors (the texts the
   index embeds) and the share of the query's words in the memory (`fusion.coverage`).
2. On **train** pairs only: a logistic regression of "relevant" on (cosine, coverage), the
   score's weights (`score_fitted_on_train`; the shipped ones were copied from it). The
   cut-off line, cosine + a·coverage >= t, was chosen on the train parts of this set and of
   SciFact together (docs/search.md; SciFact needs its corpus, so that grid is not re-run
   here): `evidence_rule_on_train` / `_on_heldout` show how the line treats this set's pairs.
3. End to end on **both** parts, through `SearchService.search_memories` on an embedded index:
   the shipped `Calibration` with and without the cut-off. The held-out figures are the ones
   to read; train is printed to show the fit.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from shared.bench.paths import default_cache_path

SET_PATH = Path(__file__).with_name("relevance_set.json")
TEAM = "bench-relevance"
SPLITS = ("train", "heldout")


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    relevant: frozenset[str]
    split: str


@dataclass(frozen=True)
class RelevanceSet:
    memories: list[dict[str, Any]]
    queries: list[LabelledQuery]


def load_set(path: Path = SET_PATH) -> RelevanceSet:
    """The labelled memory corpus and queries."""
    data = json.loads(path.read_text())
    queries = [LabelledQuery(q["q"], frozenset(q["relevant"]), q["split"]) for q in data["queries"]]
    return RelevanceSet(memories=data["memories"], queries=queries)


def fit_logistic(
    rows: Sequence[tuple[float, float]], labels: Sequence[int], l2: float = 1e-3
) -> tuple[float, float, float]:
    """(intercept, w_cosine, w_coverage) by Newton's method on the L2-regularised log-loss."""
    import numpy as np

    x = np.column_stack([np.ones(len(rows)), np.asarray(rows, dtype=np.float64)])
    y = np.asarray(labels, dtype=np.float64)
    w = np.zeros(3)
    penalty = l2 * np.diag([0.0, 1.0, 1.0])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return float(w[0]), float(w[1]), float(w[2])


def evidence_rule_figures(
    pairs: Sequence[tuple[float, float, int, bool]], coverage_weight: float, threshold: float
) -> dict[str, Any]:
    """How the line cosine + coverage_weight·coverage >= threshold (or every word present)
    treats (cosine, coverage, relevant, of a no-match query) pairs."""
    kept = [
        (label, no_match)
        for cosine, words, label, no_match in pairs
        if words >= 1.0 or cosine + coverage_weight * words >= threshold
    ]
    relevant = sum(label for _, _, label, _ in pairs)
    return {
        "relevant_pairs_kept": round(sum(label for label, _ in kept) / max(relevant, 1), 4),
        "no_match_pairs_kept": sum(1 for _, no_match in kept if no_match),
    }


def _ndcg(ranked: Sequence[str], relevant: frozenset[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def evaluate(results: dict[str, list[str]], queries: Sequence[LabelledQuery]) -> dict[str, Any]:
    """Figures of ranked memory keys per query text against the labels."""
    answerable = [q for q in queries if q.relevant]
    no_match = [q for q in queries if not q.relevant]
    returned = sum(len(results[q.text]) for q in answerable)
    hits = sum(len(set(results[q.text]) & q.relevant) for q in answerable)
    wanted = sum(len(q.relevant) for q in answerable)
    return {
        "queries": len(queries),
        "no_match_queries": len(no_match),
        "no_match_returning_nothing": sum(1 for q in no_match if not results[q.text]),
        "no_match_results_returned": sum(len(results[q.text]) for q in no_match),
        "recall_at_10": round(hits / wanted, 4) if wanted else 0.0,
        "precision_at_10": round(hits / returned, 4) if returned else 0.0,
        "top1_relevant": round(
            sum(1 for q in answerable if results[q.text][:1] and results[q.text][0] in q.relevant)
            / max(len(answerable), 1),
            4,
        ),
        "ndcg_at_10": round(
            sum(_ndcg(results[q.text], q.relevant) for q in answerable) / max(len(answerable), 1),
            4,
        ),
    }


def run(*, cache_path: Path | None = None, embedder: Any = None) -> dict[str, Any]:
    """Fit on train, then measure the shipped calibration on both parts; the bench's JSON."""
    from shared.search.adapters.embedded import EmbeddedConfig, EmbeddedIndex
    from shared.search.adapters.sqlite_documents import SqliteDocumentStore
    from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache
    from shared.search.fusion import FusionConfig, coverage, query_stems
    from shared.search.service import MemoryEntry, SearchService
    from shared.storage.sqlite import Database

    labelled = load_set()
    if embedder is None:
        from shared.search.embedding.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    cached = CachedEmbedder(embedder, SqliteEmbeddingCache(cache_path or default_cache_path()))
    memories = labelled.memories
    memory_texts = [f"{m['title']}\n\n{m['content']}" for m in memories]
    vectors = cached.embed(memory_texts)
    query_vectors = cached.embed([q.text for q in labelled.queries])

    # 1–2. Pair features; the score's fit on train only.
    pairs: dict[str, list[tuple[float, float, int, bool]]] = {split: [] for split in SPLITS}
    for q, q_vector in zip(labelled.queries, query_vectors, strict=True):
        stems = query_stems(q.text)
        for memory, m_vector in zip(memories, vectors, strict=True):
            cosine = float(m_vector @ q_vector)
            words = coverage(stems, memory["title"], memory["content"], " ".join(memory["tags"]))
            label = int(memory["key"] in q.relevant)
            pairs[q.split].append((cosine, words, label, not q.relevant))
    intercept, w_cosine, w_coverage = fit_logistic(
        [(c, w) for c, w, _, _ in pairs["train"]], [label for _, _, label, _ in pairs["train"]]
    )
    shipped = FusionConfig().calibration
    results: dict[str, Any] = {
        "memories": len(memories),
        "score_fitted_on_train": {
            "intercept": round(intercept, 3),
            "cosine_weight": round(w_cosine, 3),
            "coverage_weight": round(w_coverage, 3),
        },
        "evidence_rule_on_train": evidence_rule_figures(
            pairs["train"], shipped.evidence_coverage_weight, shipped.evidence_threshold
        ),
        "evidence_rule_on_heldout": evidence_rule_figures(
            pairs["heldout"], shipped.evidence_coverage_weight, shipped.evidence_threshold
        ),
    }

    # 3. End to end with the shipped calibration, with and without its cut-off.
    results["shipped"] = {
        "intercept": shipped.intercept,
        "cosine_weight": shipped.cosine_weight,
        "coverage_weight": shipped.coverage_weight,
        "evidence_coverage_weight": shipped.evidence_coverage_weight,
        "evidence_threshold": shipped.evidence_threshold,
    }
    with tempfile.TemporaryDirectory(prefix="cairn-bench-relevance-") as tmp:
        services: dict[str, Any] = {}
        for variant, calibration in (
            ("with_cutoff", shipped),
            ("without_cutoff", replace(shipped, evidence_threshold=-math.inf)),
            ("as_before", replace(shipped, saturation_share=0.0)),
        ):
            config = EmbeddedConfig(fusion=FusionConfig(calibration=calibration))
            folder = Path(tmp) / variant
            service = SearchService(
                SqliteDocumentStore(Database(folder / "cairn.db")),
                EmbeddedIndex(folder, cached.dimensions, config),
                cached,
            )
            service.index_memories(
                TEAM,
                [
                    MemoryEntry(m["key"], m["key"], m["content"], m["tags"], title=m["title"])
                    for m in memories
                ],
            )
            services[variant] = service
            if variant == "as_before":
                continue  # read by `score_order` only
            ranked = {
                q.text: [key for key, _ in service.search_memories(TEAM, q.text, 10)]
                for q in labelled.queries
            }
            results[variant] = {
                split: evaluate(ranked, [q for q in labelled.queries if q.split == split])
                for split in SPLITS
            }
            if variant == "with_cutoff":
                top = {q.text: service.search_memories(TEAM, q.text, 1) for q in labelled.queries}
                scores = [
                    hits[0][1]
                    for q, hits in ((q, top[q.text]) for q in labelled.queries)
                    if hits and q.relevant
                ]
                results[variant]["median_top_score_answerable"] = (
                    round(sorted(scores)[len(scores) // 2], 4) if scores else None
                )
        results["score_order"] = score_order(
            services["with_cutoff"], services["as_before"], labelled.queries, memories
        )
    return results


def _in_order(scores: Sequence[float]) -> bool:
    return all(a >= b for a, b in itertools.pairwise(scores))


def score_order(
    service: Any, before: Any, queries: Sequence[LabelledQuery], memories: Any
) -> dict[str, Any]:
    """Whether ranks follow scores, and whether a perfect match stands out from a good one.

    Per split, through `search_memories` (limit 10, what `memory_search` and `recall` rank
    by): queries whose scores never rise down the list; the share of results shown as 1.0 (to
    4 places); nDCG@10 of that order. `as_before`: the same for the engine's own page (its
    fused order, whose scores `SearchService` now caps so they never rise down it) under the
    saturating score (`saturation_share` 0), as the tools answered before.
    `perfect_vs_answerable`: the median top score when a memory's own text is the query,
    against that of the answerable queries, and how many of each read 1.0.
    """
    from shared.search.models import IndexQuery, SearchFilters

    out: dict[str, Any] = {}
    for split in SPLITS:
        part = [q for q in queries if q.split == split]
        now = [service.search_memories(TEAM, q.text, 10) for q in part]
        old = []
        for q in part:
            page = before.index.query(
                IndexQuery(
                    text=q.text,
                    vector=[float(x) for x in before.embedder.embed([q.text])[0]],
                    filters=SearchFilters(team=TEAM, now=time.time(), types=frozenset({"memory"})),
                    limit=10,
                )
            )
            old.append([(g.entity_id, g.score) for g in page.groups])
        out[split] = {"queries": len(part)}
        for name, lists in (("now", now), ("as_before", old)):
            scores = [[score for _, score in hits] for hits in lists]
            answerable = [(q, hits) for q, hits in zip(part, lists, strict=True) if q.relevant]
            out[split][name] = {
                "scores_in_rank_order": f"{sum(_in_order(s) for s in scores)}/{len(part)}",
                "results_at_1.0": _share_at_one(scores),
                "ndcg_at_10": round(
                    sum(_ndcg([k for k, _ in hits], q.relevant) for q, hits in answerable)
                    / max(len(answerable), 1),
                    4,
                ),
            }
    own = [service.search_memories(TEAM, f"{m['title']} {m['content']}", 1) for m in memories]
    perfect = [hits[0][1] for hits in own if hits]
    answerable_tops = [
        hits[0][1]
        for hits in (service.search_memories(TEAM, q.text, 1) for q in queries if q.relevant)
        if hits
    ]
    out["perfect_vs_answerable"] = {
        "perfect_median_top": _median(perfect),
        "perfect_at_1.0": f"{sum(round(s, 4) == 1.0 for s in perfect)}/{len(perfect)}",
        "answerable_median_top": _median(answerable_tops),
        "answerable_at_1.0": (
            f"{sum(round(s, 4) == 1.0 for s in answerable_tops)}/{len(answerable_tops)}"
        ),
    }
    return out


def _share_at_one(lists: Sequence[Sequence[float]]) -> float:
    flat = [s for scores in lists for s in scores]
    return round(sum(round(s, 4) == 1.0 for s in flat) / max(len(flat), 1), 3)


def _median(values: Sequence[float]) -> float | None:
    return round(sorted(values)[len(values) // 2], 4) if values else None
