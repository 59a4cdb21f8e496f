"""Embedders: Titan v2 requests (botocore Stubber), the content-hash cache, MiniLM in numpy."""

from __future__ import annotations

import io
import json
from pathlib import Path

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.embedding.bedrock import EmbeddingError, TitanEmbedder
from shared.search.embedding.cache import (
    CachedEmbedder,
    MemoryEmbeddingCache,
    SqliteEmbeddingCache,
    cache_identity,
    cache_key,
)
from shared.search.service import SearchService
from tests.unit.search.support import HashingEmbedder, MemoryDocumentStore


def _titan_reply(vector: list[float]) -> dict[str, object]:
    payload = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return {
        "body": StreamingBody(io.BytesIO(payload), len(payload)),
        "contentType": "application/json",
    }


def test_titan_sends_dimensions_and_normalize_and_returns_the_vectors() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        for text, vector in (("hello", [1.0] + [0.0] * 255), ("world", [0.0, 1.0] + [0.0] * 254)):
            stub.add_response(
                "invoke_model",
                _titan_reply(vector),
                {
                    "modelId": "amazon.titan-embed-text-v2:0",
                    "body": json.dumps({"inputText": text, "dimensions": 256, "normalize": True}),
                    "contentType": "application/json",
                    "accept": "application/json",
                },
            )
        embedder = TitanEmbedder(client, dimensions=256, parallelism=1)
        vectors = embedder.embed(["hello", "world"])
        stub.assert_no_pending_responses()
    assert vectors.shape == (2, 256)
    assert vectors.dtype == np.float32
    assert vectors[0, 0] == 1.0
    assert vectors[1, 1] == 1.0
    assert embedder.model_id == "amazon.titan-embed-text-v2:0/256"


def test_titan_errors_become_embedding_errors() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException", "slow down")
        with pytest.raises(EmbeddingError):
            TitanEmbedder(client, dimensions=512, parallelism=1).embed(["x"])


def test_titan_refuses_dimensions_it_does_not_offer() -> None:
    with pytest.raises(ValueError, match="256, 512, 1024"):
        TitanEmbedder(object(), dimensions=384)


def test_unchanged_text_is_never_embedded_twice(tmp_path: Path) -> None:
    inner = HashingEmbedder()
    cache = SqliteEmbeddingCache(tmp_path / "cache.sqlite3")
    first = CachedEmbedder(inner, cache).embed(["alpha", "beta", "alpha"])
    assert inner.embedded == ["alpha", "beta"]
    # A new process (new embedder object, same cache file) still finds them.
    again = CachedEmbedder(inner, SqliteEmbeddingCache(tmp_path / "cache.sqlite3"))
    second = again.embed(["beta", "gamma", "alpha"])
    assert inner.embedded == ["alpha", "beta", "gamma"]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])


def test_the_cache_key_depends_on_model_and_text() -> None:
    assert cache_key("m1", "t") != cache_key("m2", "t")
    assert cache_key("m1", "t") != cache_key("m1", "u")
    assert cache_key("m1", "t") == cache_key("m1", "t")


def test_the_cache_key_depends_on_the_team() -> None:
    assert cache_key("m1", "t", "alpha") != cache_key("m1", "t", "beta")
    assert cache_key("m1", "t", "alpha") != cache_key("m1", "t")


@pytest.mark.parametrize("cache_kind", ["sqlite", "memory"])
def test_a_team_never_hits_another_teams_cache_entries(tmp_path: Path, cache_kind: str) -> None:
    # A hit answers in milliseconds, a miss pays the model: with keys of text alone, beta
    # could time a search to learn that alpha had searched or stored the same string.
    inner = HashingEmbedder()
    cache = (
        SqliteEmbeddingCache(tmp_path / "c.sqlite3")
        if cache_kind == "sqlite"
        else MemoryEmbeddingCache()
    )
    cached = CachedEmbedder(inner, cache)
    cached.for_team("alpha").embed(["acquisition target: initech"])
    cached.for_team("beta").embed(["acquisition target: initech"])
    assert inner.embedded == ["acquisition target: initech"] * 2
    # Within one team the cache still saves the second call.
    cached.for_team("beta").embed(["acquisition target: initech"])
    assert len(inner.embedded) == 2


def test_the_search_service_embeds_each_teams_queries_through_its_own_cache_keys(
    tmp_path: Path,
) -> None:
    inner = HashingEmbedder()
    service = SearchService(
        MemoryDocumentStore(),
        EmbeddedIndex(tmp_path, inner.dimensions),
        CachedEmbedder(inner, MemoryEmbeddingCache()),
    )
    service.search("alpha", "layoffs in march", limit=5)
    service.search("alpha", "layoffs in march", limit=5)
    assert inner.embedded == ["layoffs in march"]
    service.search("beta", "layoffs in march", limit=5)
    assert inner.embedded == ["layoffs in march"] * 2


def test_the_benchmark_adopts_vectors_cached_before_keys_had_a_team(tmp_path: Path) -> None:
    inner = HashingEmbedder()
    cache = SqliteEmbeddingCache(tmp_path / "c.sqlite3")
    CachedEmbedder(inner, cache).embed(["an old chunk"])  # stored under the unscoped key
    bench = CachedEmbedder(inner, cache, adopt_unscoped=True).for_team("bench")
    bench.embed(["an old chunk"])
    assert inner.embedded == ["an old chunk"]
    # Adopted under the team's key: found there without the fallback from now on.
    CachedEmbedder(inner, cache).for_team("bench").embed(["an old chunk"])
    assert inner.embedded == ["an old chunk"]
    # Servers do not adopt: another team's unscoped entries are not theirs.
    CachedEmbedder(inner, cache).for_team("alpha").embed(["an old chunk"])
    assert inner.embedded == ["an old chunk"] * 2


def test_the_memory_cache_evicts_least_recently_used() -> None:
    cache = MemoryEmbeddingCache(capacity=2)
    one = np.ones(2, dtype=np.float32)
    cache.put_many({"a": one, "b": one})
    cache.get_many(["a"])
    cache.put_many({"c": one})
    assert set(cache.get_many(["a", "b", "c"])) == {"a", "c"}


@pytest.fixture(scope="module")
def minilm() -> object:
    from shared.search.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def test_minilm_vectors_are_384_dimensional_and_unit_length(minilm: object) -> None:
    vectors = minilm.embed(["a short sentence", "another one, a little longer than that"])  # type: ignore[attr-defined]
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_minilm_matches_the_reference_similarities(minilm: object) -> None:
    # sentence-transformers' documented example for all-MiniLM-L6-v2 prints
    # [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]].
    vectors = minilm.embed(  # type: ignore[attr-defined]
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    similarity = vectors @ vectors.T
    assert similarity[0, 1] == pytest.approx(0.6660, abs=2e-3)
    assert similarity[0, 2] == pytest.approx(0.1046, abs=2e-3)
    assert similarity[1, 2] == pytest.approx(0.1411, abs=2e-3)


def test_minilm_puts_paraphrases_closer_than_unrelated_sentences(minilm: object) -> None:
    vectors = minilm.embed(  # type: ignore[attr-defined]
        [
            "How do I reset my password?",
            "I forgot my password and need to change it.",
            "The annual rainfall in the Amazon basin is very high.",
        ]
    )
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.5
    assert similarity[0, 1] > similarity[0, 2] + 0.3


def test_minilm_results_do_not_depend_on_batch_composition(minilm: object) -> None:
    alone = minilm.embed(["padding must not change a vector"])  # type: ignore[attr-defined]
    batched = minilm.embed(  # type: ignore[attr-defined]
        ["short", "padding must not change a vector", "a much longer sentence " * 20]
    )
    np.testing.assert_allclose(alone[0], batched[1], atol=1e-5)


def test_minilm_truncates_long_inputs_to_256_tokens(minilm: object) -> None:
    long_text = "word " * 2000
    vector = minilm.embed([long_text])  # type: ignore[attr-defined]
    assert vector.shape == (1, 384)
    assert np.isfinite(vector).all()


def test_vectors_cached_before_a_version_change_are_not_served(tmp_path: Path) -> None:
    # MiniLM's vectors moved (tanh GELU -> exact erf): entries cached under the bare model id
    # must not be mixed with the new ones; the new version's entries are reused as before.
    class Versioned(HashingEmbedder):
        vectors_version = "gelu-erf"

    cache = SqliteEmbeddingCache(tmp_path / "c.sqlite3")
    old = HashingEmbedder()
    CachedEmbedder(old, cache).for_team("alpha").embed(["a stored chunk"])
    new = Versioned()
    assert cache_identity(new) == f"{new.model_id}#gelu-erf"
    assert cache_identity(old) == old.model_id
    CachedEmbedder(new, cache).for_team("alpha").embed(["a stored chunk"])
    assert new.embedded == ["a stored chunk"]
    CachedEmbedder(new, cache).for_team("alpha").embed(["a stored chunk"])
    assert new.embedded == ["a stored chunk"]
