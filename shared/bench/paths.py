"""Where the benchmarks keep what outlives a run: read by the retrieval bench and the
relevance set alike (so neither imports the other for it)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_path() -> Path:
    """The embedding cache shared by benchmark runs (`$XDG_CACHE_HOME/cairn`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cairn" / "embeddings.sqlite3"
