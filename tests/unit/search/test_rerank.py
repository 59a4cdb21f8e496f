"""The reranker stage: top-k reordering with gap-free paging, the Bedrock adapter (Stubber), and
the numpy cross-encoder's head."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import boto3
import numpy as np
import pytest
from botocore.stub import Stubber

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.embedding.minilm import BertEncoder, default_model_dir
from shared.search.models import DocumentInput, IndexQuery, SearchFilters
from shared.search.rerank.bedrock import BedrockReranker, RerankError, model_arn
from shared.search.rerank.cross_encoder import CrossEncoderReranker
from shared.search.rerank.stage import RerankConfig, rerank_groups
from shared.search.service import SearchService
from tests.unit.search.support import HashingEmbedder, MemoryDocumentStore


class LengthReranker:
    """Scores a passage by its length, longest first (the fused order puts short ones first)."""

    model_id = "test/length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, list(passages)))
        return [float(len(p)) for p in passages]


def _docs(n: int) -> list[DocumentInput]:
    # Every document matches "apple"; the later ones are longer (diluted by filler), so the
    # fused order (short first, BM25 normalises by length) and the reranker's disagree.
    return [
        DocumentInput(
            source="s",
            source_id=f"d{i:02d}",
            title=f"apple {i}",
            text=" ".join(["apple"] * (i + 1) + ["filler"] * (3 * i)),
        )
        for i in range(n)
    ]


def _service(tmp_path: Path, reranker: LengthReranker | None, depth: int) -> SearchService:
    embedder = HashingEmbedder()
    return SearchService(
        MemoryDocumentStore(),
        EmbeddedIndex(tmp_path, embedder.dimensions),
        embedder,
        reranker=reranker,
        rerank=RerankConfig(depth=depth),
    )


def _ids(service: SearchService, **kw: object) -> list[str]:
    page = service.search("t", "apple", types=frozenset({"entity"}), **kw)  # type: ignore[arg-type]
    return [g.entity_id for g in page.groups]


def _fused_ids(service: SearchService, limit: int) -> list[str]:
    """The engine's own (fused) order: `SearchService.search` without a reranker orders a
    page by score, which is not what the rerank stage starts from."""
    vector = [float(x) for x in service.embedder.embed(["apple"])[0]]
    filters = SearchFilters(team="t", now=service._clock(), types=frozenset({"entity"}))
    page = service.index.query(
        IndexQuery(text="apple", vector=vector, filters=filters, limit=limit)
    )
    return [g.entity_id for g in page.groups]


def test_the_fused_top_k_is_reordered_and_the_rest_keeps_the_fused_order(tmp_path: Path) -> None:
    reranker = LengthReranker()
    service = _service(tmp_path, reranker, depth=5)
    service.upsert_documents("t", _docs(12))
    fused = _fused_ids(service, limit=12)
    reranked = _ids(service, limit=12)
    assert sorted(reranked[:5]) == sorted(fused[:5])
    assert reranked[5:] == fused[5:]
    assert reranked[:5] != fused[:5]
    # The reranker read exactly the top 5 passages, title first.
    query, passages = reranker.calls[-1]
    assert query == "apple"
    assert len(passages) == 5
    assert all(p.startswith("apple ") for p in passages)
    lengths = [len(p) for p in passages]
    by_id = dict(zip(fused[:5], lengths, strict=True))
    assert [by_id[e] for e in reranked[:5]] == sorted(lengths, reverse=True)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 7])
def test_pages_have_no_gaps_or_repeats_across_the_depth(tmp_path: Path, limit: int) -> None:
    service = _service(tmp_path, LengthReranker(), depth=5)
    service.upsert_documents("t", _docs(12))
    whole = _ids(service, limit=50)
    paged: list[str] = []
    offset = 0
    while True:
        page = service.search("t", "apple", limit=limit, offset=offset, types=frozenset({"entity"}))
        paged += [g.entity_id for g in page.groups]
        if not page.has_more:
            break
        offset += limit
    assert paged == whole
    assert len(whole) == 12


def test_single_modes_and_no_reranker_do_not_rerank(tmp_path: Path) -> None:
    reranker = LengthReranker()
    service = _service(tmp_path, reranker, depth=5)
    service.upsert_documents("t", _docs(6))
    service.search("t", "apple", mode="bm25")
    service.search("t", "apple", mode="vector")
    service.search("t", "apple", rerank=False)
    assert reranker.calls == []
    plain = _service(tmp_path / "plain", None, depth=5)
    plain.upsert_documents("t", _docs(3))
    with pytest.raises(ValueError, match="needs a reranker"):
        plain.search("t", "apple", rerank=True)


def test_memory_search_goes_through_the_reranker(tmp_path: Path) -> None:
    reranker = LengthReranker()
    service = _service(tmp_path, reranker, depth=5)
    service.index_memory("t", "m1", "k1", "apple pie", ["fruit"])
    service.index_memory("t", "m2", "k2", "apple " + "crumble " * 20, ["fruit"])
    found = service.search_memories("t", "apple", limit=5)
    assert [m for m, _ in found] == ["m2", "m1"]
    assert reranker.calls


def test_a_reranker_returning_the_wrong_count_is_an_error() -> None:
    class Broken(LengthReranker):
        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return [1.0]

    from shared.search.models import ChunkDoc, ChunkHit, EntityHits

    groups = [
        EntityHits(
            f"e{i}",
            [ChunkHit(ChunkDoc("t", f"e{i}", f"e{i}:0", 0, "x", "", "s"), 0.5)],
        )
        for i in range(3)
    ]
    with pytest.raises(ValueError, match="1 scores for 3 passages"):
        rerank_groups(Broken(), "q", groups)


def test_rerank_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="depth"):
        RerankConfig(depth=0)


# ---------------------------------------------------------------- Bedrock (botocore Stubber)


def _request(texts: list[str], arn: str) -> dict[str, object]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": "what is rrf"}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}},
            }
            for t in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(texts),
                "modelConfiguration": {"modelArn": arn},
            },
        },
    }


def test_bedrock_rerank_sends_the_passages_and_maps_scores_back_by_index() -> None:
    client = boto3.client("bedrock-agent-runtime", region_name="us-west-2")
    arn = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    texts = ["bm25 ranks words", "rrf fuses rankings", "vectors"]
    with Stubber(client) as stub:
        stub.add_response(
            "rerank",
            {
                "results": [
                    {"index": 1, "relevanceScore": 0.91},
                    {"index": 0, "relevanceScore": 0.12},
                ],
                "nextToken": "page2",
            },
            _request(texts, arn),
        )
        stub.add_response(
            "rerank",
            {"results": [{"index": 2, "relevanceScore": 0.05}]},
            {**_request(texts, arn), "nextToken": "page2"},
        )
        reranker = BedrockReranker(client)
        scores = reranker.rerank("what is rrf", texts)
        stub.assert_no_pending_responses()
    assert scores == pytest.approx([0.12, 0.91, 0.05])
    assert reranker.model_id == "amazon.rerank-v1:0"


def test_bedrock_rerank_errors_become_rerank_errors() -> None:
    client = boto3.client("bedrock-agent-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("rerank", "ThrottlingException", "slow down")
        with pytest.raises(RerankError, match="slow down"):
            BedrockReranker(client, "cohere.rerank-v3-5:0").rerank("q", ["a", "b"])


def test_bedrock_model_arns() -> None:
    assert model_arn("eu-central-1", "cohere.rerank-v3-5:0") == (
        "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0"
    )
    arn = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    assert model_arn("us-east-1", arn) == arn


def test_bedrock_rerank_of_nothing_makes_no_call() -> None:
    client = boto3.client("bedrock-agent-runtime", region_name="us-west-2")
    with Stubber(client):
        assert BedrockReranker(client).rerank("q", []) == []


# ---------------------------------------------------------------- the numpy cross-encoder


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM's encoder with a classifier head of fixed random weights: a BERT
    sequence-classification checkpoint of the cross-encoders' exact shape ("bert." prefix)."""
    from safetensors.numpy import load_file, save_file

    folder = tmp_path_factory.mktemp("cross-encoder")
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(default_model_dir() / name, folder / name)
    weights = {
        f"bert.{k}": v for k, v in load_file(str(default_model_dir() / "model.safetensors")).items()
    }
    rng = np.random.default_rng(3)
    weights["classifier.weight"] = rng.standard_normal((1, 384)).astype(np.float32)
    weights["classifier.bias"] = np.asarray([0.25], dtype=np.float32)
    if "bert.pooler.dense.weight" in weights:
        weights["pooler.dense.weight"] = weights.pop("bert.pooler.dense.weight")
        weights["pooler.dense.bias"] = weights.pop("bert.pooler.dense.bias")
    else:
        weights["pooler.dense.weight"] = (rng.standard_normal((384, 384)) * 0.05).astype(np.float32)
        weights["pooler.dense.bias"] = np.zeros(384, dtype=np.float32)
    save_file(weights, str(folder / "model.safetensors"))
    return folder


def test_the_cross_encoder_scores_pairs_with_pooler_and_classifier(cross_encoder_dir: Path) -> None:
    from safetensors.numpy import load_file

    reranker = CrossEncoderReranker(cross_encoder_dir, None, model_id="test/ce", batch_size=2)
    query = "how does reciprocal rank fusion work"
    passages = [
        "Reciprocal rank fusion adds one over k plus rank across rankings.",
        "A cat sat on the mat.",
        "BM25 weighs rare words more than common ones, and normalises by length.",
    ]
    scores = reranker.rerank(query, passages)
    # The same pairs one at a time, computed here from the raw checkpoint.
    raw = load_file(str(cross_encoder_dir / "model.safetensors"))
    encoder = BertEncoder(cross_encoder_dir, None, 256)
    encoder.load()
    for passage, score in zip(passages, scores, strict=True):
        enc = encoder.tokenizer.encode(query, passage)
        assert 1 in enc.type_ids
        assert enc.type_ids[0] == 0
        ids = np.asarray([enc.ids], dtype=np.int64)
        types = np.asarray([enc.type_ids], dtype=np.int64)
        hidden = encoder.hidden(ids, np.ones(ids.shape, dtype=np.float32), types)
        pooled = np.tanh(hidden[0, 0] @ raw["pooler.dense.weight"].T + raw["pooler.dense.bias"])
        expected = float(pooled @ raw["classifier.weight"][0] + raw["classifier.bias"][0])
        assert score == pytest.approx(expected, abs=1e-4)
    assert len(set(scores)) == 3
    assert reranker.rerank(query, []) == []
    assert reranker.model_id == "test/ce"


def test_the_cross_encoder_refuses_unverified_weights(cross_encoder_dir: Path) -> None:
    from shared.search.embedding.weights import MINILM, UnverifiedWeights

    with pytest.raises(UnverifiedWeights):
        CrossEncoderReranker(cross_encoder_dir, MINILM).rerank("q", ["p"])
