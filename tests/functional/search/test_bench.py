"""The retrieval benchmark command on a tiny BEIR-format fixture (figures are not asserted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from shared.bench import retrieval
from tests.unit.search.support import HashingEmbedder

TINY = Path(__file__).parent / "fixtures" / "beir_tiny"
FIGURES = {
    *("ndcg_at_10", "recall_at_10", "recall_at_100", "mrr"),
    *("query_p50_ms", "query_p99_ms", "query_p50_ms_at_100", "query_p99_ms_at_100"),
}


def test_run_scores_every_mode_on_the_judged_queries(tmp_path: Path) -> None:
    result = retrieval.run(
        TINY,
        "test",
        cache_path=tmp_path / "cache.sqlite3",
        embedder=HashingEmbedder(),
        show_progress=False,
    )
    assert result["documents"] == 6
    assert result["queries"] == 3  # q4 has no judgement
    assert result["index_seconds"] >= 0
    for mode in retrieval.MODES:
        assert set(result[mode]) == FIGURES
        assert 0.0 <= result[mode]["ndcg_at_10"] <= 1.0
        assert result[mode]["query_p99_ms"] >= result[mode]["query_p50_ms"] >= 0
    # Every judged document shares words with its query, so BM25 ranks it in the top 10.
    assert result["bm25"]["recall_at_10"] == 1.0


def test_main_prints_one_json_object_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The labelled relevance set (MiniLM over every pair) is left out: `make bench` runs it.
    code = retrieval.main(
        [
            *("--data", str(TINY), "--mode", "bm25,hybrid", "--cache", str(tmp_path / "c.sqlite3")),
            "--no-relevance",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert out.count("\n") == 1
    assert set(result) >= {"documents", "queries", "index_seconds", "bm25", "hybrid"}
    assert "vector" not in result
    assert "relevance" not in result


def test_a_cold_run_embeds_every_chunk_and_reports_chunks_per_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warm = tmp_path / "warm.sqlite3"
    args = ["--data", str(TINY), "--mode", "bm25", "--cache", str(warm), "--no-relevance"]
    assert retrieval.main(args) == 0
    capsys.readouterr()
    # The cache the first run filled is not read: --cold indexes through an empty one.
    assert retrieval.main([*args, "--cold"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["embedded_texts"] == result["chunks"] > 0
    assert result["chunks_per_second"] > 0
    assert result["load_average"] >= 0


@pytest.mark.bench
def test_main_with_the_relevance_set_prints_one_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = retrieval.main(
        ["--data", str(TINY), "--mode", "bm25,hybrid", "--cache", str(tmp_path / "c.sqlite3")]
    )
    assert code == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert out.count("\n") == 1
    assert set(result) >= {"documents", "queries", "index_seconds", "bm25", "hybrid", "relevance"}


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(SystemExit):
        retrieval.main(["--data", str(TINY), "--mode", "magic"])


@pytest.mark.parametrize(
    ("sizes", "queries"),
    [
        pytest.param((20, 40), 2, id="tiny"),
        pytest.param((400, 800), 20, id="small", marks=pytest.mark.bench),
    ],
)
def test_the_synthetic_mode_reports_latency_per_size(
    sizes: tuple[int, int], queries: int, capsys: pytest.CaptureFixture[str]
) -> None:
    small, large = (str(size) for size in sizes)
    assert retrieval.main(["--synthetic", f"{small},{large}", "--queries", str(queries)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["synthetic"]) == {small, large}
    assert result["synthetic"][large]["chunks"] == sizes[1]
    assert result["synthetic"][large]["query_p50_ms"] > 0
    # Every mode under both BLAS thread settings, and the growth from the smaller size.
    for setting in ("1", "default"):
        figures = result["synthetic"][large]["threads"][setting]
        assert set(figures) == {"hybrid", "bm25", "vector"}
        assert all(f["p99_ms"] >= f["p50_ms"] > 0 for f in figures.values())
        assert result["growth"][setting]["hybrid_p50_ms"] > 0


def test_the_synthetic_mode_refuses_an_unknown_thread_setting() -> None:
    with pytest.raises(SystemExit):
        retrieval.main(["--synthetic", "400", "--threads", "8"])


def test_metrics_follow_their_definitions() -> None:
    relevant = {"a": 1, "b": 1}
    assert retrieval.ndcg_at(["a", "b", "c"], relevant, 10) == pytest.approx(1.0)
    assert retrieval.ndcg_at(["c", "a"], {"a": 1}, 10) == pytest.approx(1 / 1.5849625)
    assert retrieval.recall_at(["a", "x"], relevant, 10) == 0.5
    assert retrieval.reciprocal_rank(["x", "y", "b"], relevant) == pytest.approx(1 / 3)


def test_rrf_k_and_title_weight_flags_reach_the_index_config() -> None:
    default = retrieval.index_config()
    textbook = retrieval.index_config(rrf_k=60, title_weight=1.0)

    assert (default.fusion.k, default.title_weight) == (10, 3.0)
    assert (textbook.fusion.k, textbook.title_weight) == (60, 1.0)
    assert textbook.fusion.depth == default.fusion.depth


def test_a_non_positive_rrf_k_is_refused() -> None:
    with pytest.raises(SystemExit, match="--rrf-k"):
        retrieval.main(["--data", str(TINY), "--rrf-k", "0"])


def test_the_relevance_bench_fits_on_train_and_reports_held_out_figures(tmp_path: Path) -> None:
    from shared.bench import relevance

    result = relevance.run(cache_path=tmp_path / "c.sqlite3", embedder=HashingEmbedder())
    fitted = result["score_fitted_on_train"]
    # More of the query's words and a closer vector both mean "more likely relevant".
    assert fitted["cosine_weight"] > 0
    assert fitted["coverage_weight"] > 0
    for variant in ("with_cutoff", "without_cutoff"):
        assert set(result[variant]) >= {"train", "heldout"}
        assert result[variant]["heldout"]["no_match_queries"] == 11
    # Without the cut-off every no-match query returns memories; the cut-off removes some.
    assert result["without_cutoff"]["heldout"]["no_match_returning_nothing"] == 0
    assert (
        result["with_cutoff"]["heldout"]["no_match_results_returned"]
        < result["without_cutoff"]["heldout"]["no_match_results_returned"]
    )


def test_the_evidence_line_keeps_pairs_above_it_and_every_full_word_match() -> None:
    from shared.bench.relevance import evidence_rule_figures

    pairs = [(0.6, 0.2, 1, False), (0.1, 1.0, 1, False), (0.3, 0.0, 0, True), (0.5, 0.0, 0, True)]
    figures = evidence_rule_figures(pairs, coverage_weight=0.75, threshold=0.46)
    assert figures == {"relevant_pairs_kept": 1.0, "no_match_pairs_kept": 1}


def test_the_logistic_fit_weighs_evidence_positively() -> None:
    from shared.bench.relevance import fit_logistic

    rows = [(0.9, 0.5), (0.8, 0.6), (0.3, 0.0), (0.2, 0.5), (0.1, 0.0), (0.85, 0.1)]
    intercept, w_cosine, w_coverage = fit_logistic(rows, [1, 1, 0, 0, 0, 1])
    assert w_cosine > 0
    assert intercept < 0
    assert math.isfinite(w_coverage)


class ReverseFusedReranker:
    """Puts the fused order upside down: the bench must report the reranked order it got."""

    model_id = "test/reverse"

    def __init__(self) -> None:
        self.calls = 0

    def rerank(self, query: str, passages: list[str]) -> list[float]:
        self.calls += 1
        return [float(i) for i in range(len(passages))]


def test_a_reranker_adds_the_hybrid_rerank_mode_with_its_depth(tmp_path: Path) -> None:
    reranker = ReverseFusedReranker()
    result = retrieval.run(
        TINY,
        "test",
        modes=["hybrid"],
        cache_path=tmp_path / "cache.sqlite3",
        embedder=HashingEmbedder(),
        show_progress=False,
        reranker=reranker,
        rerank_depth=3,
        recall_depths=(1, 3),
    )
    assert result["reranker"] == "test/reverse"
    assert result["rerank_depth"] == 3
    assert set(result[retrieval.RERANK_MODE]) == FIGURES | {"recall_at_1", "recall_at_3"}
    # Reranking the top 3 cannot change what the top 3 holds.
    assert result[retrieval.RERANK_MODE]["recall_at_3"] == result["hybrid"]["recall_at_3"]
    # One call per page asked (two per query: the default page and 100) with two or more
    # fused results (one result needs no reranking).
    assert 1 <= reranker.calls <= 2 * result["queries"]
    # Reversing the fused top 3 moves each query's best hit down: the figures show it.
    assert result[retrieval.RERANK_MODE]["mrr"] < result["hybrid"]["mrr"]
    assert result["peak_rss_mb"] >= result["peak_rss_mb_after_index"] > 0
    assert result["embedder"] == "test/hashing"


def test_bad_embedder_and_reranker_flags_are_refused_naming_what_is_missing() -> None:
    with pytest.raises(SystemExit, match="CAIRN_EMBEDDER_DIR"):
        retrieval.main(["--data", str(TINY), "--embedder", "bge-small"])
    with pytest.raises(SystemExit, match="--rerank-sha256"):
        retrieval.main(["--data", str(TINY), "--rerank", "cross-encoder"])
    with pytest.raises(SystemExit, match="none, cross-encoder or bedrock"):
        retrieval.main(["--data", str(TINY), "--rerank", "magic"])


def test_rerank_cost_times_each_depth_on_the_minilm_shape() -> None:
    result = retrieval.rerank_cost(TINY, [1, 3], queries=2, split="test")["rerank_cost"]
    assert result["model_shape"] == "MiniLM-L6 (6x384)"
    for depth in ("1", "3"):
        assert result[depth]["p99_ms"] >= result[depth]["p50_ms"] > 0
        assert result[depth]["cpu_p50_ms"] > 0
    assert result["peak_rss_mb"] > 0


def test_a_tuning_split_is_scored_from_the_same_index(tmp_path: Path) -> None:
    result = retrieval.run(
        TINY,
        "test",
        modes=["bm25", "hybrid"],
        cache_path=tmp_path / "cache.sqlite3",
        embedder=HashingEmbedder(),
        show_progress=False,
        tune_split="test",
    )
    tune = result["tune"]
    assert tune["split"] == "test"
    assert tune["queries"] == result["queries"]
    for mode in ("bm25", "hybrid"):
        for figure in ("ndcg_at_10", "recall_at_100", "mrr"):
            assert tune[mode][figure] == result[mode][figure]
