"""Which reranker the search service gets: none by default, Bedrock or a verified cross-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config.settings import Settings
from shared.search.rerank.bedrock import BedrockReranker
from shared.search.rerank.cross_encoder import CrossEncoderReranker
from shared.search.rerank.stage import DEFAULT_DEPTH
from shared.search.wiring import build_reranker, rerank_config

SETTINGS = Settings(region="eu-west-1")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CAIRN_RERANKER", "CAIRN_RERANKER_DIR", "CAIRN_RERANKER_SHA256"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CAIRN_RERANK_DEPTH", raising=False)


def test_no_reranker_by_default() -> None:
    assert build_reranker(SETTINGS) is None
    assert rerank_config().depth == DEFAULT_DEPTH


def test_bedrock_reranker_in_the_settings_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_RERANKER", "bedrock:cohere.rerank-v3-5:0")
    reranker = build_reranker(SETTINGS)
    assert isinstance(reranker, BedrockReranker)
    assert reranker.model_id == "cohere.rerank-v3-5:0"
    assert reranker._arn == "arn:aws:bedrock:eu-west-1::foundation-model/cohere.rerank-v3-5:0"


def test_a_local_cross_encoder_needs_its_folder_and_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CAIRN_RERANKER", "cross-encoder")
    with pytest.raises(ValueError, match="CAIRN_RERANKER_DIR and CAIRN_RERANKER_SHA256"):
        build_reranker(SETTINGS)
    monkeypatch.setenv("CAIRN_RERANKER_DIR", str(tmp_path))
    monkeypatch.setenv("CAIRN_RERANKER_SHA256", "AB" * 32)
    reranker = build_reranker(SETTINGS)
    assert isinstance(reranker, CrossEncoderReranker)


def test_bad_reranker_settings_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_RERANKER", "magic")
    with pytest.raises(ValueError, match="CAIRN_RERANKER must be"):
        build_reranker(SETTINGS)
    monkeypatch.setenv("CAIRN_RERANK_DEPTH", "zero")
    with pytest.raises(ValueError, match="CAIRN_RERANK_DEPTH"):
        rerank_config()
    monkeypatch.setenv("CAIRN_RERANK_DEPTH", "0")
    with pytest.raises(ValueError, match="CAIRN_RERANK_DEPTH"):
        rerank_config()
    monkeypatch.setenv("CAIRN_RERANK_DEPTH", "30")
    assert rerank_config().depth == 30
