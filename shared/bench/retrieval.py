"""`cairn bench retrieval`: nDCG@10, recall and latency of the search engine on a BEIR dataset.

The corpus goes through the same code path as real documents in `cairn serve`: each record
becomes one entity in the embedded (SQLite) documents table, chunked, embedded (through the
persistent embedding cache) and indexed by the embedded index. Queries run through
`SearchService.search` per mode, twice: the `search` tool's default page (20; nDCG@10,
recall@10, MRR and `query_p50_ms`) and a page of 100 (recall@100, `query_p50_ms_at_100`). The
query embedding is computed fresh for every query so latencies include it. One JSON object is
printed on stdout; progress goes to stderr.

`--rrf-k 60` and `--title-weight 1` reproduce the untuned rows of docs/search.md.

`--synthetic 10000,100000` measures latency at scale instead: random unit vectors and generated
text indexed directly (no model); hybrid, bm25 and vector queries timed under one BLAS thread and
the default thread count (`--threads 1,default`), the sizes interleaved query by query so their
ratio (`growth`) holds on a busy machine.

`--embedder minilm|bge-small` picks the local embedder (bge-small from `--embedder-dir` or
`CAIRN_EMBEDDER_DIR`, verified against the upstream hash); the cache keys carry the model, so
each model fills its own entries. `--rerank cross-encoder --rerank-dir DIR` (a verified BERT
cross-encoder folder) or `--rerank bedrock --rerank-model ID` adds the `hybrid+rerank` mode
(the fused top `--rerank-depth` reordered). `--rerank-cost 10,20,30` measures what a local
cross-encoder of MiniLM-L6 shape costs per query at each depth on this machine, with the
MiniLM encoder and an untrained head: latency only, its order means nothing.

Every run reports the process's peak memory (`peak_rss_mb`) and `embedded_texts` (0: the
index time is the warm one, every vector from the cache).

`--relevance` runs only the labelled relevance set (`shared.bench.relevance`: calibration and
cut-off fitted on its train part, held-out figures); a `--data` run appends the same figures
under `"relevance"` (unless `--no-relevance`), so `make bench` prints them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.bench import relevance
from shared.bench.paths import default_cache_path

BENCH_TEAM = "bench"
BENCH_SOURCE = "beir"
MODES = ("hybrid", "bm25", "vector")
RERANK_MODE = "hybrid+rerank"


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB (Linux reports KB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def load_beir(
    data_dir: Path, split: str
) -> tuple[list[dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """(corpus records, query id → text, qrels query id → {doc id: relevance})."""
    with (data_dir / "corpus.jsonl").open() as f:
        corpus = [json.loads(line) for line in f if line.strip()]
    with (data_dir / "queries.jsonl").open() as f:
        queries = {str(q["_id"]): q["text"] for q in map(json.loads, f) if q}
    qrels: dict[str, dict[str, int]] = {}
    with (data_dir / "qrels" / f"{split}.tsv").open() as f:
        reader = csv.reader(f, delimiter="\t")
        next(reader, None)  # header
        for row in reader:
            if len(row) >= 3 and int(row[2]) > 0:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return corpus, queries, qrels


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    """nDCG@k with graded gains (BEIR / trec_eval convention: gain = relevance)."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    for i, doc in enumerate(ranked):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[position]


def run(
    data_dir: Path | str,
    split: str = "test",
    modes: Sequence[str] = MODES,
    k: int = 10,
    *,
    cache_path: Path | None = None,
    embedder: Any = None,
    index_config: Any = None,
    show_progress: bool = True,
    max_queries: int | None = None,
    reranker: Any = None,
    rerank_depth: int | None = None,
    recall_depths: Sequence[int] = (),
    tune_split: str | None = None,
) -> dict[str, Any]:
    """Index a BEIR dataset and score `modes` on `split`; returns the figures printed by `main`.

    `embedder` replaces MiniLM (the tests pass a hashing embedder); `index_config` an
    `EmbeddedConfig` (tuning); `reranker` (a `Reranker`) adds the `hybrid+rerank` mode;
    `recall_depths` adds `recall_at_<d>` per mode (how much a reranker of depth d could see);
    `tune_split` scores the same modes on that split too, under `"tune"`, from the same index.
    """
    from tqdm import tqdm

    from shared.search.adapters.embedded import EmbeddedIndex
    from shared.search.adapters.sqlite_documents import SqliteDocumentStore
    from shared.search.embedding.cache import CachedEmbedder, SqliteEmbeddingCache
    from shared.search.models import DocumentInput, SearchInput
    from shared.search.rerank.stage import RerankConfig
    from shared.search.service import SearchService, entity_id_for
    from shared.storage.sqlite import Database

    default_page = int(SearchInput.model_fields["limit"].default)
    data_dir = Path(data_dir)
    corpus, queries, qrels = load_beir(data_dir, split)
    scored = [q for q in qrels if q in queries]
    if max_queries is not None:
        scored = scored[:max_queries]
    if embedder is None:
        from shared.search.embedding.minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    # One team only, so vectors cached before keys carried the team are reused (adopted).
    cached = CachedEmbedder(
        embedder, SqliteEmbeddingCache(cache_path or default_cache_path()), adopt_unscoped=True
    )
    corpus_id_of = {entity_id_for(BENCH_SOURCE, str(r["_id"])): str(r["_id"]) for r in corpus}
    documents = [
        DocumentInput(
            source=BENCH_SOURCE,
            source_id=str(r["_id"]),
            title=r.get("title") or "",
            text=r.get("text") or "",
        )
        for r in corpus
    ]
    results: dict[str, Any] = {
        "documents": len(corpus),
        "queries": len(scored),
        "split": split,
        "embedder": embedder.model_id,
    }
    rerank_config = RerankConfig() if rerank_depth is None else RerankConfig(depth=rerank_depth)
    if reranker is not None:
        results["reranker"] = reranker.model_id
        results["rerank_depth"] = rerank_config.depth
        modes = [*modes, RERANK_MODE] if RERANK_MODE not in modes else list(modes)
    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
        # The embedded store `cairn serve` uses: the engine is measured, not moto's DynamoDB.
        store = SqliteDocumentStore(Database(Path(tmp) / "cairn.db"))
        index = EmbeddedIndex(Path(tmp), cached.dimensions, index_config)
        indexer = SearchService(store, index, cached)
        started = time.perf_counter()
        with tqdm(
            total=len(documents),
            desc="indexing",
            unit="doc",
            file=sys.stderr,
            disable=not show_progress,
        ) as bar:
            stats = indexer.upsert_documents(BENCH_TEAM, documents, progress=bar.update)
        results["index_seconds"] = round(time.perf_counter() - started, 2)
        results["chunks"] = stats.chunks
        # Cold when every chunk went through the model (embedded_texts == chunks: --cold).
        results["chunks_per_second"] = round(stats.chunks / max(results["index_seconds"], 1e-9), 2)
        results["embedded_texts"] = cached.misses
        results["peak_rss_mb_after_index"] = peak_rss_mb()
        # Queries are embedded without the cache so their latency includes the model.
        searcher = SearchService(store, index, embedder, reranker=reranker, rerank=rerank_config)
        searcher.search(BENCH_TEAM, "warm up", limit=1)

        def evaluate(
            judged: list[str], judgements: dict[str, dict[str, int]]
        ) -> dict[str, dict[str, float]]:
            """Every mode's figures on `judged`. The modes take turns query by query, each
            query's first turn rotating, so every mode meets the engine's caches alike (a
            word's postings are read from FTS5 the first time a query brings it)."""
            figures: dict[str, dict[str, list[float]]] = {
                mode: {
                    **{name: [] for name in ("ndcg", "r10", "r100", "mrr", "ms", "ms100")},
                    **{f"r{d}": [] for d in recall_depths},
                }
                for mode in modes
            }
            for turn, qid in enumerate(
                tqdm(judged, desc="queries", unit="q", file=sys.stderr, disable=not show_progress)
            ):
                relevant = judgements[qid]
                for mode in [*modes[turn % len(modes) :], *modes[: turn % len(modes)]]:
                    # What an agent reads: the `search` tool's default page, as it is
                    # answered; nDCG@10, recall@10 and MRR come from it. A page of 100 is
                    # asked next, for how much a deeper page or a reranker sees.
                    pages = {}
                    for limit, timing in ((default_page, "ms"), (100, "ms100")):
                        began = time.perf_counter()
                        pages[limit] = searcher.search(
                            BENCH_TEAM,
                            queries[qid],
                            limit=limit,
                            mode="hybrid" if mode == RERANK_MODE else _mode(mode),
                            types=frozenset({"entity"}),
                            rerank=mode == RERANK_MODE,
                        )
                        figures[mode][timing].append((time.perf_counter() - began) * 1000)
                    ranked = [corpus_id_of[g.entity_id] for g in pages[default_page].groups]
                    deep = [corpus_id_of[g.entity_id] for g in pages[100].groups]
                    got = figures[mode]
                    got["ndcg"].append(ndcg_at(ranked, relevant, k))
                    got["r10"].append(recall_at(ranked, relevant, k))
                    got["r100"].append(recall_at(deep, relevant, 100))
                    got["mrr"].append(reciprocal_rank(ranked, relevant))
                    for d in recall_depths:
                        got[f"r{d}"].append(recall_at(deep, relevant, d))
            n = max(len(judged), 1)
            return {
                mode: {
                    f"ndcg_at_{k}": round(sum(got["ndcg"]) / n, 4),
                    f"recall_at_{k}": round(sum(got["r10"]) / n, 4),
                    "recall_at_100": round(sum(got["r100"]) / n, 4),
                    "mrr": round(sum(got["mrr"]) / n, 4),
                    "query_p50_ms": round(_percentile(got["ms"], 0.5), 2),
                    "query_p99_ms": round(_percentile(got["ms"], 0.99), 2),
                    "query_p50_ms_at_100": round(_percentile(got["ms100"], 0.5), 2),
                    "query_p99_ms_at_100": round(_percentile(got["ms100"], 0.99), 2),
                    **{f"recall_at_{d}": round(sum(got[f"r{d}"]) / n, 4) for d in recall_depths},
                }
                for mode, got in figures.items()
            }

        if tune_split:
            # The tuning split first, on the same index: choices are made on it, test reported.
            _, _, tune_qrels = load_beir(data_dir, tune_split)
            tune_judged = [q for q in tune_qrels if q in queries][:max_queries]
            results["tune"] = {"split": tune_split, "queries": len(tune_judged)}
            results["tune"].update(evaluate(tune_judged, tune_qrels))
        results.update(evaluate(scored, qrels))
    results["peak_rss_mb"] = peak_rss_mb()
    return results


class _ShapeOnlyReranker:
    """A cross-encoder of MiniLM-L6 shape for timing: the MiniLM encoder read as a pair encoder
    (query, passage; token types 0/1), scored by a fixed random projection of [CLS].
    ms-marco-MiniLM-L-6-v2 has exactly this shape (6 layers, 384 wide, 12 heads), so its
    cost per query is this one's; its scores carry no meaning."""

    model_id = "cost-only/minilm-l6-shape"

    def __init__(self, max_tokens: int) -> None:
        import numpy as np

        from shared.search.embedding.minilm import BertEncoder, default_model_dir
        from shared.search.embedding.weights import MINILM

        self._encoder = BertEncoder(default_model_dir(), MINILM, max_tokens)
        self._head = np.random.default_rng(0).standard_normal(384).astype(np.float32)

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        import numpy as np

        if not self._encoder.loaded:
            self._encoder.load()
        out: list[float] = []
        encodings = self._encoder.tokenizer.encode_batch([(query, p) for p in passages])
        for start in range(0, len(encodings), 8):
            part = encodings[start : start + 8]
            width = max(len(e.ids) for e in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            types = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.float32)
            for row, e in enumerate(part):
                ids[row, : len(e.ids)] = e.ids
                types[row, : len(e.ids)] = e.type_ids
                mask[row, : len(e.ids)] = 1.0
            hidden = self._encoder.hidden(ids, mask, types)
            out.extend(float(v) for v in hidden[:, 0, :] @ self._head)
        return out


def rerank_cost(
    data_dir: Path | str,
    depths: Sequence[int],
    *,
    max_tokens: int = 256,
    queries: int = 20,
    split: str = "train",
) -> dict[str, Any]:
    """Milliseconds per query of reranking the top `depth` passages with a MiniLM-L6-shaped
    cross-encoder: each query of `split` against `depth` corpus passages (title + text, as the
    stage sends them), p50 and p99 over `queries` queries."""
    corpus, texts, qrels = load_beir(Path(data_dir), split)
    reranker = _ShapeOnlyReranker(max_tokens)
    passages = [
        f"{r.get('title') or ''}\n\n{r.get('text') or ''}"[:2000] for r in corpus[: max(depths)]
    ]
    asked = [texts[q] for q in list(qrels)[:queries] if q in texts]
    reranker.rerank("warm up", passages[:2])
    out: dict[str, Any] = {"model_shape": "MiniLM-L6 (6x384)", "max_tokens": max_tokens}
    for depth in depths:
        times: list[float] = []
        cpu: list[float] = []
        for query in asked:
            began, began_cpu = time.perf_counter(), time.process_time()
            reranker.rerank(query, passages[:depth])
            times.append((time.perf_counter() - began) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
        # CPU time is what the work costs whatever else the machine runs; on a busy machine
        # the wall clock mostly measures the wait for a core.
        out[str(depth)] = {
            "p50_ms": round(_percentile(times, 0.5), 1),
            "p99_ms": round(_percentile(times, 0.99), 1),
            "cpu_p50_ms": round(_percentile(cpu, 0.5), 1),
        }
    out["peak_rss_mb"] = peak_rss_mb()
    return {"rerank_cost": out}


def build_reranker(
    kind: str, directory: Path | None, model: str | None, sha256: str | None = None
) -> Any:
    """The reranker `--rerank` names (None for "none").

    A local cross-encoder loads only when its `model.safetensors` has the SHA-256 given
    (`--rerank-sha256`: the upstream model page's published hash, checked by whoever runs it;
    no cross-encoder weights ship in a registry package this project could verify).
    """
    if kind == "none":
        return None
    if kind == "cross-encoder":
        from shared.search.embedding.weights import ModelSpec
        from shared.search.rerank.cross_encoder import CrossEncoderReranker

        if directory is None or not sha256:
            raise SystemExit(
                "--rerank cross-encoder needs --rerank-dir and --rerank-sha256 (the upstream "
                "hash of its model.safetensors)"
            )
        spec = ModelSpec(
            model or str(directory), "see the model card", {"model.safetensors": sha256}
        )
        return CrossEncoderReranker(directory, spec)
    if kind == "bedrock":
        import boto3

        from shared.search.rerank.bedrock import AMAZON_RERANK, BedrockReranker

        return BedrockReranker(boto3.client("bedrock-agent-runtime"), model or AMAZON_RERANK)
    raise SystemExit(f"--rerank must be none, cross-encoder or bedrock (got {kind!r})")


def _mode(name: str) -> Any:
    if name not in MODES:
        raise SystemExit(f"--mode must be a subset of {','.join(MODES)} (got {name!r})")
    return name


# The BLAS thread settings the scale figures are taken under: one thread, and the library's
# default (the variables unset). Each runs in its own process, since BLAS reads them at load.
THREAD_SETTINGS: dict[str, dict[str, str]] = {
    "1": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "default": {},
}
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_VOCABULARY = 30_000


def _zipf_weights() -> Any:
    """Zipf-distributed word ranks, like natural text: a few very common words, a long tail."""
    import numpy as np

    weights = 1.0 / np.arange(1, _VOCABULARY + 1) ** 1.07
    return weights / weights.sum()


def build_synthetic(
    directory: Path, size: int, *, dimensions: int = 384, seed: int = 7, show_progress: bool = True
) -> float:
    """Index `size` synthetic chunks (random unit vectors, 150 Zipf words); returns the seconds."""
    import numpy as np
    from tqdm import tqdm

    from shared.search.adapters.embedded import EmbeddedIndex
    from shared.search.models import ChunkDoc

    rng = np.random.default_rng(seed)
    weights = _zipf_weights()
    index = EmbeddedIndex(directory, dimensions)
    started = time.perf_counter()
    batch = 5_000
    with tqdm(
        total=size,
        desc=f"synthetic {size}",
        unit="chunk",
        file=sys.stderr,
        disable=not show_progress,
    ) as bar:
        for start in range(0, size, batch):
            count = min(batch, size - start)
            words = rng.choice(_VOCABULARY, size=(count, 150), p=weights)
            vectors = rng.standard_normal((count, dimensions)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            docs = [
                ChunkDoc(
                    team=BENCH_TEAM,
                    entity_id=f"e{(start + i) // 2}",
                    chunk_id=f"e{(start + i) // 2}:{(start + i) % 2}",
                    chunk_index=(start + i) % 2,
                    text=" ".join(f"w{w}" for w in words[i]),
                    title=f"document {(start + i) // 2}",
                    source="synthetic",
                )
                for i in range(count)
            ]
            index.index(docs, vectors)
            bar.update(count)
    return time.perf_counter() - started


def time_synthetic(
    directories: Sequence[Path],
    *,
    dimensions: int = 384,
    queries: int = 200,
    seed: int = 11,
    modes: Sequence[str] = MODES,
) -> dict[str, dict[str, dict[str, float]]]:
    """Query latency of each index in `directories`, per mode: {dir index: {mode: figures}}.

    The indexes answer the same queries (3–6 Zipf words, a random unit vector) in turn, query
    by query, so a change in the machine's load falls on every size alike and their ratio
    holds. Each mode opens the indexes afresh (empty caches) and leaves out each one's first
    query, which builds its in-memory matrix; the p99 includes the first lookups of each new
    word's document frequency. `cpu_p50_ms` is the process's CPU time (all its threads).
    """
    import numpy as np

    from shared.search.adapters.embedded import EmbeddedIndex
    from shared.search.models import IndexQuery, SearchFilters

    rng = np.random.default_rng(seed)
    weights = _zipf_weights()
    filters = SearchFilters(team=BENCH_TEAM, now=time.time())
    asked = []
    for _ in range(queries + 1):
        terms = rng.choice(_VOCABULARY, size=int(rng.integers(3, 7)), p=weights)
        vector = rng.standard_normal(dimensions).astype(np.float32)
        vector /= np.linalg.norm(vector)
        asked.append((" ".join(f"w{t}" for t in terms), vector.tolist()))
    out: dict[str, dict[str, dict[str, float]]] = {str(i): {} for i in range(len(directories))}
    for mode in modes:
        indexes = [EmbeddedIndex(d, dimensions) for d in directories]
        wall: list[list[float]] = [[] for _ in indexes]
        cpu: list[list[float]] = [[] for _ in indexes]
        for number, (text, vector) in enumerate(asked):
            for i, index in enumerate(indexes):
                query = IndexQuery(text=text, vector=vector, filters=filters, limit=20, mode=mode)  # type: ignore[arg-type]
                began, began_cpu = time.perf_counter(), time.process_time()
                index.query(query)
                if number:
                    wall[i].append((time.perf_counter() - began) * 1000)
                    cpu[i].append((time.process_time() - began_cpu) * 1000)
        for i in range(len(indexes)):
            out[str(i)][mode] = {
                "p50_ms": round(_percentile(wall[i], 0.5), 2),
                "p99_ms": round(_percentile(wall[i], 0.99), 2),
                "cpu_p50_ms": round(_percentile(cpu[i], 0.5), 2),
            }
    return out


def run_synthetic(
    sizes: Sequence[int],
    *,
    dimensions: int = 384,
    queries: int = 200,
    seed: int = 7,
    show_progress: bool = True,
    threads: Sequence[str] = tuple(THREAD_SETTINGS),
) -> dict[str, Any]:
    """The embedded index's latency at each size, per mode and BLAS thread setting.

    Every size is indexed once; each thread setting then times all sizes in one child
    process (`time_synthetic`, the sizes interleaved). `growth` is each p50 at the largest
    size over the smallest's, in the same process.
    """
    import subprocess

    load_before = os.getloadavg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cairn-synthetic-") as tmp:
        directories = [Path(tmp) / str(size) for size in sizes]
        for size, directory in zip(sizes, directories, strict=True):
            seconds = build_synthetic(
                directory, size, dimensions=dimensions, seed=seed, show_progress=show_progress
            )
            out[str(size)] = {"chunks": size, "index_seconds": round(seconds, 2), "threads": {}}
        for setting in threads:
            env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARIABLES}
            env.update(THREAD_SETTINGS[setting])
            if show_progress:
                print(
                    f"timing {queries} queries per mode, BLAS threads: {setting}", file=sys.stderr
                )
            done = subprocess.run(  # noqa: S603 - this module, by sys.executable
                [
                    sys.executable,
                    "-m",
                    "shared.bench.retrieval",
                    "--synthetic-time",
                    ",".join(str(d) for d in directories),
                    "--queries",
                    str(queries),
                    "--dimensions",
                    str(dimensions),
                ],
                env=env,
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                raise RuntimeError(f"timing with BLAS threads {setting} failed: {done.stderr}")
            timed = json.loads(done.stdout)
            for i, size in enumerate(sizes):
                out[str(size)]["threads"][setting] = timed[str(i)]
    first = threads[0]
    for size in sizes:
        hybrid = out[str(size)]["threads"][first]["hybrid"]
        out[str(size)]["query_p50_ms"] = hybrid["p50_ms"]
        out[str(size)]["query_p99_ms"] = hybrid["p99_ms"]
    growth: dict[str, dict[str, float]] = {}
    if len(sizes) > 1:
        low, high = str(min(sizes)), str(max(sizes))
        for setting in threads:
            growth[setting] = {
                f"{mode}_{key}": round(
                    out[high]["threads"][setting][mode][key]
                    / max(out[low]["threads"][setting][mode][key], 1e-9),
                    2,
                )
                for mode in MODES
                for key in ("p50_ms", "cpu_p50_ms")
            }
    return {
        "synthetic": out,
        "growth": growth,
        "load_average": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
    }


def index_config(*, rrf_k: int | None = None, title_weight: float | None = None) -> Any:
    """The embedded index's settings with the given overrides (None keeps the default)."""
    from dataclasses import replace

    from shared.search.adapters.embedded import EmbeddedConfig

    config = EmbeddedConfig()
    if rrf_k is not None:
        if rrf_k < 1:
            raise SystemExit(f"--rrf-k must be at least 1 (got {rrf_k})")
        config = replace(config, fusion=replace(config.fusion, k=rrf_k))
    if title_weight is not None:
        if title_weight <= 0:
            raise SystemExit(f"--title-weight must be positive (got {title_weight})")
        config = replace(config, title_weight=title_weight)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench retrieval --data DIR [--split test] [--mode ...] [--k 10]`."""
    parser = argparse.ArgumentParser(prog="cairn bench retrieval", description=__doc__)
    parser.add_argument("--data", type=Path, help="BEIR dataset folder (corpus.jsonl, ...)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--mode", default=",".join(MODES), help="comma-separated modes")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache file")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="index through an empty embedding cache (chunks_per_second of a cold index)",
    )
    parser.add_argument(
        "--rrf-k", type=int, default=None, help="RRF k (default: the tuned 10; 60 is textbook)"
    )
    parser.add_argument(
        "--title-weight", type=float, default=None, help="BM25 title column weight (default 3)"
    )
    parser.add_argument(
        "--synthetic", default=None, help="comma-separated chunk counts, e.g. 10000,100000"
    )
    parser.add_argument(
        "--threads",
        default=",".join(THREAD_SETTINGS),
        help="BLAS thread settings for --synthetic: 1, default (both by default)",
    )
    parser.add_argument("--queries", type=int, default=200, help="queries per mode (--synthetic)")
    parser.add_argument("--synthetic-time", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dimensions", type=int, default=384, help=argparse.SUPPRESS)
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or bge-small")
    parser.add_argument("--embedder-dir", type=Path, default=None, help="bge-small model folder")
    parser.add_argument("--rerank", default="none", help="none, cross-encoder or bedrock")
    parser.add_argument("--rerank-dir", type=Path, default=None, help="cross-encoder folder")
    parser.add_argument("--rerank-model", default=None, help="Bedrock rerank model id")
    parser.add_argument("--rerank-sha256", default=None, help="cross-encoder weights' hash")
    parser.add_argument("--rerank-depth", type=int, default=None, help="fused top-k reranked")
    parser.add_argument("--tune-split", default=None, help="also score this split (train)")
    parser.add_argument(
        "--recall-depths", default="", help="extra recall@d per mode, e.g. 20,30,50"
    )
    parser.add_argument(
        "--rerank-cost", default=None, help="depths to time a local cross-encoder at, e.g. 10,20"
    )
    parser.add_argument(
        "--relevance", action="store_true", help="only the labelled relevance / no-match set"
    )
    parser.add_argument(
        "--no-relevance", action="store_true", help="leave the relevance set out of a --data run"
    )
    args = parser.parse_args(argv)
    if args.relevance:
        print(json.dumps(relevance.run(cache_path=args.cache)))
        return 0
    if args.synthetic_time:
        directories = [Path(d) for d in args.synthetic_time.split(",")]
        timed = time_synthetic(directories, dimensions=args.dimensions, queries=args.queries)
        print(json.dumps(timed))
        return 0
    if args.synthetic:
        sizes = [int(s) for s in args.synthetic.split(",") if s.strip()]
        threads = [t.strip() for t in args.threads.split(",") if t.strip()]
        unknown = sorted(set(threads) - set(THREAD_SETTINGS))
        if not sizes or min(sizes) < 1 or unknown or not threads or args.queries < 1:
            parser.error(
                "--synthetic takes chunk counts >= 1, --threads a subset of "
                f"{','.join(THREAD_SETTINGS)}, --queries >= 1 (got {args.synthetic!r}, "
                f"{args.threads!r}, {args.queries})"
            )
        print(json.dumps(run_synthetic(sizes, queries=args.queries, threads=threads)))
        return 0
    if args.data is None:
        parser.error("--data is required (or --synthetic)")
    if args.rerank_cost:
        depths = [int(d) for d in args.rerank_cost.split(",") if d.strip()]
        print(json.dumps(rerank_cost(args.data, depths)))
        return 0
    from shared.search.embedding.minilm import local_embedder

    modes = [_mode(m.strip()) for m in args.mode.split(",") if m.strip()]
    config = index_config(rrf_k=args.rrf_k, title_weight=args.title_weight)
    try:
        embedder = local_embedder(args.embedder, args.embedder_dir)
    except ValueError as error:
        raise SystemExit(str(error)) from error
    cold_cache = tempfile.TemporaryDirectory(prefix="cairn-cold-") if args.cold else None
    results = run(
        args.data,
        args.split,
        modes,
        args.k,
        cache_path=Path(cold_cache.name) / "embeddings.sqlite3" if cold_cache else args.cache,
        index_config=config,
        embedder=embedder,
        reranker=build_reranker(
            args.rerank, args.rerank_dir, args.rerank_model, args.rerank_sha256
        ),
        rerank_depth=args.rerank_depth,
        recall_depths=[int(d) for d in args.recall_depths.split(",") if d.strip()],
        tune_split=args.tune_split,
    )
    if cold_cache is not None:
        cold_cache.cleanup()
    results["load_average"] = round(os.getloadavg()[0], 2)
    if not args.no_relevance:
        results["relevance"] = relevance.run(cache_path=args.cache)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
