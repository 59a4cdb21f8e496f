"""Model weights: pinned upstream hashes, refusal of anything else, embedder selection, pooling."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from shared.search.embedding import weights
from shared.search.embedding.minilm import (
    BGE_SMALL_ID,
    BertEmbedder,
    BgeSmallEmbedder,
    MiniLMEmbedder,
    default_model_dir,
    local_embedder,
)
from shared.search.embedding.weights import (
    BGE_SMALL,
    MINILM,
    ModelSpec,
    UnverifiedWeights,
    sha256_of,
    verify_model_dir,
)

# The upstream Git LFS object ids, copied from the models' pages: a change here is a change of
# the model the engine ships, so it must be deliberate.
UPSTREAM_MINILM_SAFETENSORS = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
UPSTREAM_BGE_SMALL_SAFETENSORS = "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad"


def test_the_pinned_hashes_are_the_upstream_ones() -> None:
    assert MINILM.files == {"model.safetensors": UPSTREAM_MINILM_SAFETENSORS}
    assert BGE_SMALL.files == {"model.safetensors": UPSTREAM_BGE_SMALL_SAFETENSORS}
    assert MINILM.license == "Apache-2.0"
    assert BGE_SMALL.license == "MIT"


def test_the_installed_minilm_package_ships_the_upstream_weights() -> None:
    folder = default_model_dir()
    assert sha256_of(folder / "model.safetensors") == UPSTREAM_MINILM_SAFETENSORS
    verify_model_dir(folder, MINILM)  # does not raise


def _copy_minilm(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        shutil.copy(default_model_dir() / name, folder / name)
    return folder


def test_altered_weights_are_refused_before_loading(tmp_path: Path) -> None:
    folder = _copy_minilm(tmp_path)
    with (folder / "model.safetensors").open("r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x00\x00\x80\x3f")  # the last float becomes 1.0
    with pytest.raises(UnverifiedWeights, match="not the upstream"):
        MiniLMEmbedder(folder).embed(["hello"])


def test_a_missing_weights_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnverifiedWeights, match="missing"):
        verify_model_dir(tmp_path, MINILM)


def test_the_bge_spec_refuses_minilm_weights(tmp_path: Path) -> None:
    # A package that ships some other model under the bge name is caught by the hash.
    folder = _copy_minilm(tmp_path)
    with pytest.raises(UnverifiedWeights, match=r"BAAI/bge-small-en-v1\.5"):
        BgeSmallEmbedder(folder).embed(["hello"])


def test_verification_is_remembered_per_file_version(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"abc")
    spec = ModelSpec("x/y", "MIT", {"w.bin": sha256_of(folder / "w.bin")})
    verify_model_dir(folder, spec)
    # Rewritten with other bytes (new mtime / size): verified again, and refused.
    (folder / "w.bin").write_bytes(b"abcd")
    with pytest.raises(UnverifiedWeights):
        verify_model_dir(folder, spec)
    assert len(weights._verified) >= 1


def test_a_verdict_is_recorded_for_the_next_process_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"abc")
    spec = ModelSpec("x/y", "MIT", {"w.bin": sha256_of(folder / "w.bin")})
    verify_model_dir(folder, spec)
    assert weights.record_file() == tmp_path / "cache" / "cairn" / "verified-weights.json"
    assert str(folder / "w.bin") in weights.record_file().read_text()

    def hashing_again(path: Path) -> str:
        raise AssertionError(f"{path} was hashed again")

    # A new process: nothing verified in memory, the record says this version was.
    monkeypatch.setattr(weights, "_verified", set())
    with monkeypatch.context() as patched:
        patched.setattr(weights, "sha256_of", hashing_again)
        verify_model_dir(folder, spec)
    # Rewritten with other bytes of the same size: a new version, hashed and refused.
    monkeypatch.setattr(weights, "_verified", set())
    (folder / "w.bin").write_bytes(b"abd")
    with pytest.raises(UnverifiedWeights, match="not the upstream"):
        verify_model_dir(folder, spec)
    # The refused version is not recorded, and the stale one is dropped at the next record.
    (folder / "v.bin").write_bytes(b"xyz")
    verify_model_dir(folder, ModelSpec("x/z", "MIT", {"v.bin": sha256_of(folder / "v.bin")}))
    recorded = weights.record_file().read_text()
    assert str(folder / "v.bin") in recorded
    assert str(folder / "w.bin") not in recorded


def test_an_unwritable_cache_only_costs_a_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"abc")
    verify_model_dir(folder, ModelSpec("x/y", "MIT", {"w.bin": sha256_of(folder / "w.bin")}))


def test_local_embedder_selection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CAIRN_EMBEDDER", raising=False)
    monkeypatch.delenv("CAIRN_EMBEDDER_DIR", raising=False)
    assert local_embedder().model_id == "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(ValueError, match="CAIRN_EMBEDDER_DIR"):
        local_embedder("bge-small")
    with pytest.raises(ValueError, match="CAIRN_EMBEDDER must be one of minilm, bge-small"):
        local_embedder("bge-large")
    monkeypatch.setenv("CAIRN_EMBEDDER", "bge-small")
    monkeypatch.setenv("CAIRN_EMBEDDER_DIR", str(tmp_path))
    chosen = local_embedder()
    assert chosen.model_id == BGE_SMALL_ID
    assert chosen.dimensions == 384


def test_cls_pooling_takes_the_first_token_and_mean_pooling_the_masked_average(
    tmp_path: Path,
) -> None:
    # The same MiniLM encoder with the two poolings: CLS pooling must equal the normalised
    # first hidden state, mean pooling the normalised average over real tokens.
    folder = _copy_minilm(tmp_path)
    mean = BertEmbedder(
        folder, model_id="m", dimensions=384, pooling="mean", spec=MINILM, workers=1
    )
    cls = BertEmbedder(folder, model_id="c", dimensions=384, pooling="cls", spec=MINILM, workers=1)
    text = "the reranker reads the fused candidates"
    mean_vec = mean.embed([text])[0]
    cls_vec = cls.embed([text])[0]
    encoder = cls._encoder
    ids = np.asarray([encoder.tokenizer.encode(text).ids], dtype=np.int64)
    mask = np.ones(ids.shape, dtype=np.float32)
    hidden = encoder.hidden(ids, mask)[0]
    first = hidden[0] / np.linalg.norm(hidden[0])
    average = hidden.mean(axis=0)
    average /= np.linalg.norm(average)
    np.testing.assert_allclose(cls_vec, first, atol=1e-6)
    np.testing.assert_allclose(mean_vec, average, atol=1e-6)
    assert float(cls_vec @ mean_vec) < 0.999  # they differ
    # MiniLMEmbedder is the mean-pooled one.
    np.testing.assert_allclose(MiniLMEmbedder(folder, workers=1).embed([text])[0], mean_vec)


def test_loading_the_encoder_keeps_blas_to_one_thread() -> None:
    # The embedder runs a batch per core itself; BLAS threads on top of that spin on a busy
    # machine (a short text cost 7x the wall time with them). The limit is set at the load.
    from threadpoolctl import threadpool_info

    from shared.search.embedding.minilm import MiniLMEmbedder

    MiniLMEmbedder().embed(["a cat sits on the mat"])
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas, "numpy's BLAS is loaded"
    assert {pool["num_threads"] for pool in blas} == {1}
