"""The retrieval benchmark command on a tiny BEIR-format fixture (figures are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.bench import retrieval
from tests.unit.search.support import HashingEmbedder

TINY = Path(__file__).parent / "fixtures" / "beir_tiny"
FIGURES = {"ndcg_at_10", "recall_at_10", "recall_at_100", "mrr", "query_p50_ms", "query_p99_ms"}


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
    code = retrieval.main(
        ["--data", str(TINY), "--mode", "bm25,hybrid", "--cache", str(tmp_path / "c.sqlite3")]
    )
    assert code == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert out.count("\n") == 1
    assert set(result) >= {"documents", "queries", "index_seconds", "bm25", "hybrid"}
    assert "vector" not in result


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(SystemExit):
        retrieval.main(["--data", str(TINY), "--mode", "magic"])


def test_the_synthetic_mode_reports_latency_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert retrieval.main(["--synthetic", "400,800"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["synthetic"]) == {"400", "800"}
    assert result["synthetic"]["800"]["chunks"] == 800
    assert result["synthetic"]["800"]["query_p50_ms"] > 0


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
    fitted = result["fitted_on_train"]
    # More of the query's words and a closer vector both mean "more likely relevant".
    assert fitted["cosine_weight"] > 0
    assert fitted["coverage_weight"] > 0
    for label in ("with_cutoff", "without_cutoff"):
        assert set(result[label]) >= {"train", "heldout"}
        assert result[label]["heldout"]["no_match_queries"] == 11
    # Without the cut-off every no-match query returns memories; the cut-off removes some.
    assert result["without_cutoff"]["heldout"]["no_match_returning_nothing"] == 0
    assert (
        result["with_cutoff"]["heldout"]["no_match_results_returned"]
        < result["without_cutoff"]["heldout"]["no_match_results_returned"]
    )


def test_the_cut_off_is_chosen_to_separate_relevant_from_irrelevant_pairs() -> None:
    from shared.bench.relevance import choose_cutoff, fit_logistic

    pairs = [(0.9, 0.5, 1), (0.8, 0.5, 1), (0.3, 0.0, 0), (0.2, 0.5, 0), (0.1, 0.0, 0)]
    intercept, w_cosine, _ = fit_logistic([(c, w) for c, w, _ in pairs], [y for *_, y in pairs])
    assert w_cosine > 0
    scored = [(relevance, coverage, label) for relevance, coverage, label in pairs]
    cutoff = choose_cutoff(scored)
    assert 0.3 < cutoff <= 0.8
    assert intercept < 0
