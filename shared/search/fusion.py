"""Reciprocal rank fusion, relevance, the no-evidence cut-off, grouping and paging.

Both index adapters produce two rankings (BM25, vector) of chunk keys, each chunk's cosine to
the query and the share of the query's words it contains, and hand them here, so hybrid
ranking, scores, the cut-off, grouping and paging behave identically on OpenSearch and on the
embedded index.

Order and score are two different things. The order is RRF's (tuned on SciFact). The score is
a calibrated relevance: a logistic function of the chunk's own evidence (cosine similarity and
query-word coverage), so it means the same thing across queries whatever else is in the
index; a chunk that shares neither enough of the query's words nor its meaning is cut.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from shared.search.models import SearchMode
from shared.search.text import query_terms

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Calibration:
    """The score, relevance = sigmoid(intercept + cosine_weight·cosine + coverage_weight·coverage),
    and the cut-off, evidence = cosine + evidence_coverage_weight·coverage >= evidence_threshold.

    `cosine` is the chunk's cosine similarity to the query (sentence vectors), `coverage` the
    share of the query's words found in the chunk's title, text or tags (0–1).

    The score's weights are a logistic regression on the train part of the labelled memory set
    (`shared/bench/relevance_set.json`, `cairn bench retrieval --relevance`): the probability
    that a memory answers the query. The cut-off is a separate, gentler line: fitted to memories
    alone it also cut relevant SciFact abstracts (nDCG@10 0.725 → 0.691), so its two numbers
    were chosen on the train parts of both sets — SciFact train nDCG@10 within 0.0005 of no
    cut-off, then the fewest results for the memory set's no-match queries (docs/search.md).
    """

    intercept: float = -23.4
    cosine_weight: float = 39.23
    coverage_weight: float = 20.55
    evidence_coverage_weight: float = 0.25
    evidence_threshold: float = 0.26
    # The top of the scale kept for how much evidence a near-certain chunk has (`relevance`).
    saturation_share: float = 0.05

    def relevance(self, cosine: float, coverage: float) -> float:
        """The calibrated relevance of one chunk (0–1): the fitted probability, scaled by how
        much of the evidence is there, so that it does not saturate.

        The logistic alone reaches 1.0 (to six decimals) for any chunk with most of the query's
        words and a fair cosine, so a perfect match and a good one read alike. Scaling it by
        `1 - saturation_share · (1 - evidence)`, evidence = (cosine⁺ + coverage) / 2, keeps the
        low end (a 0 stays 0) and leaves 1.0 to a chunk with every
        query word and the query's meaning (a perfect match scores 1.0, a good one ~0.99).
        """
        z = self.intercept + self.cosine_weight * cosine + self.coverage_weight * coverage
        probability = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
        evidence = (min(max(cosine, 0.0), 1.0) + min(max(coverage, 0.0), 1.0)) / 2
        return probability * (1.0 - self.saturation_share * (1.0 - evidence))

    def has_evidence(self, cosine: float, coverage: float) -> bool:
        """Whether a chunk shares enough of the query's meaning or words to be returned.

        A chunk holding every word of the query always has.
        """
        if coverage >= 1.0:
            return True
        return cosine + self.evidence_coverage_weight * coverage >= self.evidence_threshold


@dataclass(frozen=True)
class FusionConfig:
    """How rankings are fused.

    The defaults are tuned on SciFact's train split (docs/search.md): k = 10 with equal
    weights scored nDCG@10 0.736 on train against 0.731 for the textbook k = 60 (both with
    title-weighted BM25); a smaller k lets the top of each ranking count for more.
    `FusionConfig(k=60)` restores the textbook fusion; the weights stay tunable.

    `depth` is how many chunks each ranking contributes. It is fixed per query (not derived
    from the page asked for) so every page of one query is cut from the same fused list:
    that is what makes cursor pagination free of gaps and repeats.
    """

    k: int = 10
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    depth: int = 300
    calibration: Calibration = field(default_factory=Calibration)

    def weights(self, mode: SearchMode) -> tuple[float, float]:
        """(bm25, vector) weights for `mode`; a single-ranking mode zeroes the other."""
        if mode == "bm25":
            return 1.0, 0.0
        if mode == "vector":
            return 0.0, 1.0
        return self.bm25_weight, self.vector_weight


def rrf(
    rankings: Sequence[tuple[Sequence[K], float]], k: int = 60, tie_key: Callable[[K], str] = str
) -> list[tuple[K, float]]:
    """Fuse rankings: score(d) = Σ wᵢ / (k + rankᵢ(d)), ranks from 1; normalised to (0, 1].

    A document first in every ranking scores 1.0. Ties break on `tie_key` so the order is
    deterministic.

    >>> rrf([(["a", "b"], 1.0), (["b", "c"], 1.0)])[0][0]
    'b'
    """
    scores: dict[K, float] = {}
    best = sum(weight / (k + 1) for ranked, weight in rankings if weight > 0 and ranked)
    for ranked, weight in rankings:
        if weight <= 0:
            continue
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    if not scores:
        return []
    ordered = sorted(scores.items(), key=lambda item: (-item[1], tie_key(item[0])))
    return [(key, score / best) for key, score in ordered]


def group_by_entity(
    ranked: Sequence[tuple[K, float]],
    entity_of: Callable[[K], str],
    offset: int,
    limit: int,
    per_entity: int = 3,
) -> tuple[list[tuple[str, list[tuple[K, float]]]], bool]:
    """Group a chunk ranking by entity, then cut page `[offset, offset + limit)` of entities.

    An entity ranks by its best chunk; it keeps at most `per_entity` chunks, best first.
    Returns the page and whether more entities follow it.

    >>> page, more = group_by_entity([("a:0", 0.9), ("b:0", 0.8), ("a:1", 0.7)],
    ...                              lambda c: c.split(":")[0], offset=0, limit=1)
    >>> page, more
    ([('a', [('a:0', 0.9), ('a:1', 0.7)])], True)
    """
    groups: dict[str, list[tuple[K, float]]] = {}
    for key, score in ranked:
        members = groups.setdefault(entity_of(key), [])
        if len(members) < per_entity:
            members.append((key, score))
    entities = list(groups.items())
    page = entities[offset : offset + limit]
    return page, len(entities) > offset + limit


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "e", "y")


def light_stem(word: str) -> str:
    """A crude stem for word-presence checks: one common English suffix stripped.

    Used only for coverage (is the query's word in the chunk?), where "deploy" must find
    "deployed" and "deployment"; ranking keeps each engine's own analyser.

    >>> [light_stem(w) for w in ("deploys", "freezes", "memories", "peru")]
    ['deploy', 'freez', 'memor', 'peru']
    """
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def query_stems(text: str) -> list[str]:
    """The distinct stems of a query's words (stopwords removed), for `coverage`."""
    return list(dict.fromkeys(light_stem(t) for t in query_terms(text)))


_WORD_CHAR = re.compile(r"\w")


def coverage(stems: Sequence[str], *texts: str) -> float:
    """Share of `stems` that begin a word somewhere in `texts` (0 without stems).

    >>> coverage(["deplo", "freez"], "Deployment freeze", "")
    1.0
    >>> coverage(["capital", "peru"], "capital expenditure review")
    0.5
    """
    if not stems:
        return 0.0
    haystack = "\n".join(texts).lower()
    found = 0
    for stem in stems:
        start = haystack.find(stem)
        while start != -1:
            if start == 0 or not _WORD_CHAR.match(haystack, start - 1):
                found += 1
                break
            start = haystack.find(stem, start + 1)
    return found / len(stems)


def _fused_order(
    bm25: Sequence[K],
    vector: Sequence[tuple[K, float]],
    mode: SearchMode,
    config: FusionConfig,
    tie_key: Callable[[K], str],
) -> tuple[list[tuple[K, float]], dict[K, float], float]:
    """The RRF order of both rankings, each chunk's cosine, and the cosine given a chunk the
    vector ranking did not return (the lowest it did: that chunk's is at most that)."""
    bm25_weight, vector_weight = config.weights(mode)
    fused = rrf(
        [(list(bm25), bm25_weight), ([key for key, _ in vector], vector_weight)],
        k=config.k,
        tie_key=tie_key,
    )
    cosine_of = dict(vector)
    return fused, cosine_of, min(cosine_of.values()) if cosine_of else 0.0


def fuse(
    bm25: Sequence[K],
    vector: Sequence[tuple[K, float]],
    coverage_of: Mapping[K, float],
    mode: SearchMode,
    config: FusionConfig,
    tie_key: Callable[[K], str] = str,
) -> list[tuple[K, float]]:
    """RRF order of both rankings, each chunk scored by its calibrated relevance.

    `vector` pairs each chunk with its cosine to the query (given in every mode: a zero
    weight leaves it out of the order, not out of the scores); `coverage_of` gives the query-word
    coverage of the chunks that have any (the others have none). A chunk missing from the
    vector ranking is given the lowest cosine that ranking returned (its cosine is at most
    that). In hybrid mode, chunks without evidence (`Calibration.has_evidence`: too little
    of the query's meaning or words is in them) are dropped. The single modes (used
    by the benchmark) keep every candidate.
    """
    fused, cosine_of, floor = _fused_order(bm25, vector, mode, config, tie_key)
    calibration = config.calibration
    scored: list[tuple[K, float]] = []
    for key, _ in fused:
        words = coverage_of.get(key, 0.0)
        cosine = cosine_of.get(key, floor)
        if mode == "hybrid" and not calibration.has_evidence(cosine, words):
            continue
        scored.append((key, calibration.relevance(cosine, words)))
    return scored


def fuse_page(
    bm25: Sequence[K],
    vector: Sequence[tuple[K, float]],
    coverage_of: Callable[[K], float],
    mode: SearchMode,
    config: FusionConfig,
    entity_of: Callable[[K], str],
    offset: int,
    limit: int,
    per_entity: int = 3,
    tie_key: Callable[[K], str] = str,
    before_scoring: Callable[[list[K]], object] | None = None,
) -> tuple[list[tuple[str, list[tuple[K, float]]]], bool]:
    """`group_by_entity(fuse(...), ...)`, the same page, asking `coverage_of` (a chunk's
    query-word coverage; 0 for a chunk outside `bm25`) only where the answer can matter.

    The coverage of every candidate is the costly part of fusing (a scan of its text per
    query word), yet it decides only two things: whether a hybrid candidate has evidence,
    and the score of a chunk on the page. So the cut-off asks it only of a candidate whose
    cosine alone does not pass the line and which can still change the page (past the
    page's last entity and the one after it, only chunks of the page's entities can), and
    the scores are computed for the page's chunks alone. `before_scoring` is told the
    page's chunks first (to read them in one go).
    """
    fused, cosine_of, floor = _fused_order(bm25, vector, mode, config, tie_key)
    calibration = config.calibration
    in_bm25 = set(bm25)
    known: dict[K, float] = {}

    def words(key: K) -> float:
        if key not in in_bm25:
            return 0.0
        if key not in known:
            known[key] = coverage_of(key)
        return known[key]

    groups: dict[str, list[K]] = {}
    place: dict[str, int] = {}
    end = offset + limit
    for key, _ in fused:
        entity = entity_of(key)
        members = groups.get(entity)
        # Only a chunk that can change the page is weighed (and its coverage asked): one of a
        # new entity while the page and whether more follow are unsettled, or one of an
        # entity on the page that still has room. A chunk of an entity before the page, or
        # of one after it, changes neither.
        if members is None:
            if len(groups) > end:
                continue
        elif len(members) >= per_entity or not offset <= place[entity] < end:
            continue
        cosine = cosine_of.get(key, floor)
        # Coverage (0–1, weighted ≥ 0) only adds to the evidence: a cosine on or above the
        # line passes whatever the words, so only one below it needs them.
        if (
            mode == "hybrid"
            and cosine < calibration.evidence_threshold
            and not calibration.has_evidence(cosine, words(key))
        ):
            continue
        if members is None:
            place[entity] = len(groups)
            members = groups[entity] = []
        members.append(key)
    entities = list(groups.items())
    if before_scoring is not None:
        before_scoring([key for _, members in entities[offset : offset + limit] for key in members])
    page = [
        (
            entity,
            [
                (key, calibration.relevance(cosine_of.get(key, floor), words(key)))
                for key in members
            ],
        )
        for entity, members in entities[offset : offset + limit]
    ]
    return page, len(entities) > offset + limit
