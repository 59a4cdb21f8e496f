"""Tune the hybrid ranking on a BEIR split (run by hand; not part of `make test`).

Indexes the corpus once through `SearchService` (embeddings come from the benchmark's cache),
collects each query's BM25 ranking per title weight and its vector ranking once, then replays
RRF fusion + entity grouping offline for a grid of settings and prints nDCG@10 per setting:

    uv run --frozen python -m tests.bench.tune_fusion --data ../shared/bench/scifact --split train
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from shared.bench.paths import default_cache_path
from shared.bench.retrieval import BENCH_SOURCE, BENCH_TEAM, load_beir, ndcg_at, recall_at
from shared.config import names
from shared.config.tables import create_tables
from shared.search.adapters.dynamodb import DynamoDocumentStore
from shared.search.adapters.embedded import EmbeddedConfig, EmbeddedIndex
from shared.search.chunker import ChunkerConfig
from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache
from shared.search.embedding.minilm import MiniLMEmbedder
from shared.search.fusion import group_by_entity, rrf
from shared.search.models import DocumentInput, IndexQuery, SearchFilters
from shared.search.service import SearchService, entity_id_for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--title-weights", default="0.5,1,2,3")
    parser.add_argument("--depth", type=int, default=300)
    parser.add_argument("--k", default="5,10,20,30,60")
    parser.add_argument("--chunk-target", type=int, default=ChunkerConfig().target)
    parser.add_argument("--chunk-max", type=int, default=ChunkerConfig().maximum)
    parser.add_argument("--vector-weights", default="0.5,0.6,0.7,0.8,0.9,1.0,1.2")
    args = parser.parse_args(argv)
    corpus, queries, qrels = load_beir(args.data, args.split)
    scored = [q for q in qrels if q in queries]
    corpus_id_of = {entity_id_for(BENCH_SOURCE, str(r["_id"])): str(r["_id"]) for r in corpus}
    model = MiniLMEmbedder()
    cached = CachedEmbedder(model, SqliteEmbeddingCache(default_cache_path()))
    docs = [
        DocumentInput(BENCH_SOURCE, str(r["_id"]), r.get("title") or "", r.get("text") or "")
        for r in corpus
    ]
    out: dict[str, Any] = {}
    with mock_aws(), tempfile.TemporaryDirectory() as tmp:
        tables = create_tables(boto3.client("dynamodb", region_name="us-east-1"))
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(
            tables[names.TABLE_DOCUMENTS]
        )
        index = EmbeddedIndex(Path(tmp), cached.dimensions)
        chunker = ChunkerConfig(target=args.chunk_target, maximum=args.chunk_max)
        service = SearchService(DynamoDocumentStore(table), index, cached, chunker=chunker)
        started = time.perf_counter()
        service.upsert_documents(BENCH_TEAM, docs)
        print(f"indexed in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        vectors = cached.embed([queries[q] for q in scored])
        filters = SearchFilters(team=BENCH_TEAM, now=time.time(), types=frozenset({"entity"}))
        vector_runs = []
        for i, qid in enumerate(scored):
            query = IndexQuery(queries[qid], [float(x) for x in vectors[i]], filters)
            vector_runs.append(index._vector(query, args.depth))
        bm25_runs: dict[float, list[list[tuple[int, str]]]] = {}
        for weight in (float(w) for w in args.title_weights.split(",")):
            index.config = EmbeddedConfig(title_weight=weight)
            bm25_runs[weight] = [
                index._bm25(IndexQuery(queries[qid], None, filters), args.depth) for qid in scored
            ]

        def score(
            title: float, bm25_w: float, vec_w: float, k: int, depth: int
        ) -> dict[str, float]:
            ndcg = r100 = 0.0
            for i, qid in enumerate(scored):
                bm25 = bm25_runs[title][i][:depth] if bm25_w > 0 else []
                vector = vector_runs[i][:depth] if vec_w > 0 else []
                entity_of = dict(bm25)
                entity_of.update(vector)
                rankings = [([r for r, _ in bm25], bm25_w), ([r for r, _ in vector], vec_w)]
                fused = rrf(rankings, k=k, tie_key=lambda r: f"{r:020d}")
                page, _ = group_by_entity(fused, entity_of.__getitem__, 0, 100)
                ranked = [corpus_id_of[e] for e, _ in page]
                ndcg += ndcg_at(ranked, qrels[qid], 10)
                r100 += recall_at(ranked, qrels[qid], 100)
            n = len(scored)
            return {"ndcg_at_10": round(ndcg / n, 4), "recall_at_100": round(r100 / n, 4)}

        for title in bm25_runs:
            out[f"bm25 title={title}"] = score(title, 1, 0, 60, args.depth)
        out["vector"] = score(1.0, 0, 1, 60, args.depth)
        for title in bm25_runs:
            for vec_w in (float(w) for w in args.vector_weights.split(",")):
                for k in (int(x) for x in args.k.split(",")):
                    key = f"hybrid title={title} vector_w={vec_w} k={k}"
                    out[key] = score(title, 1.0, vec_w, k, args.depth)
    best = sorted(
        ((k, v) for k, v in out.items() if k.startswith("hybrid")),
        key=lambda kv: -kv[1]["ndcg_at_10"],
    )[:15]
    print(
        json.dumps(
            {
                "single": {k: v for k, v in out.items() if not k.startswith("hybrid")},
                "best_hybrid": dict(best),
                "default_k60": {
                    k: v for k, v in out.items() if "k=60" in k and "vector_w=1.0" in k
                },
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
