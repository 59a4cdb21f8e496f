"""`cairn bench knowledge` on a tiny run: the latency and quality measurements run end to end and
report sane figures (the figures themselves are for `make bench`, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared import runtime
from shared.bench import knowledge
from shared.config.settings import Settings


@pytest.mark.bench
@pytest.mark.protocol
def test_a_tiny_knowledge_bench_reports_latency_and_retrieval_quality(tmp_path: Path) -> None:
    try:
        latency = knowledge.latency(tmp_path, [300], queries=3)
        quality = knowledge.quality(tmp_path)
    finally:
        runtime.configure(Settings())
    assert latency["300"]["p95_ms"] >= latency["300"]["p50_ms"] > 0
    assert quality["questions"] == len(knowledge.QUESTIONS) >= 50
    assert 0 <= quality["recall_at_10"] <= 1
    assert quality["hit_at_10"] >= quality["recall_at_10"] - 1e-9
