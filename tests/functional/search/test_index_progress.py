"""`cairn index`'s progress: what `index_path` reports, how the CLI shows it off a terminal, and
the NDJSON stream a server sends it."""

from __future__ import annotations

import io
import json
from pathlib import Path

from shared.connectors.local_files import EMBED_SLICE, Progress, ProgressEmbedder, index_path
from shared.local.indexing import ProgressDisplay
from shared.local.progress import stream_progress
from tests.functional.search.conftest import SearchHarness


def _notes(root: Path, files: int, sections: int) -> None:
    root.mkdir(parents=True)
    for number in range(files):
        body = "".join(
            f"\n## Part {s}\n\n" + " ".join(f"word{number}x{s}y{w}" for w in range(260)) + "\n"
            for s in range(sections)
        )
        (root / f"n{number}.md").write_text(f"# Note {number}\n{body}")


def test_index_path_reports_files_embedding_and_cleanup(
    search: SearchHarness, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    _notes(root, files=3, sections=30)
    events: list[Progress] = []

    stats = index_path(root, "alpha", service=search.service, progress=events.append)

    files = [e for e in events if e.stage == "files"]
    assert files[0] == Progress("files", 0, 3)
    assert files[-1] == Progress("files", 3, 3)
    embedding = [e for e in events if e.stage == "embedding"]
    assert stats.chunks > EMBED_SLICE  # so the bar moves in more than one step
    assert embedding[-1] == Progress("embedding", stats.chunks, stats.chunks)
    steps = [e.done for e in embedding]
    assert steps == sorted(steps)
    assert len(set(steps)) > 2
    assert [e for e in events if e.stage == "cleanup"][-1] == Progress("cleanup", 3, 3)


def test_sliced_embedding_keeps_every_text_with_its_own_vector(search: SearchHarness) -> None:
    texts = [f"text {i} " + "long " * ((i * 37) % 50) for i in range(EMBED_SLICE * 3 + 5)]
    events: list[Progress] = []
    sliced = ProgressEmbedder(search.embedder, events.append, [0, 0])

    vectors = sliced.embed(texts)

    expected = search.embedder.embed(texts)
    assert vectors.shape == expected.shape
    assert (vectors == expected).all()
    assert [e.done for e in events] == [0, 32, 64, 96, 101]


def test_off_a_terminal_progress_is_a_line_per_tenth_and_at_the_end() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out)
    for done in range(0, 101):
        display(Progress("embedding", done, 100))
    display(Progress("files", 0, 3))
    display(Progress("files", 3, 3))
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding: 0/100 chunks"
    assert "embedding: 100/100 chunks" in lines
    assert len([line for line in lines if line.startswith("embedding")]) == 11
    assert lines[-1] == "files: 3/3 files"


def test_the_stream_carries_progress_then_stats_or_the_error() -> None:
    def work(report: object) -> dict[str, int]:
        assert callable(report)
        report(Progress("files", 1, 2))
        return {"indexed": 2}

    lines = [json.loads(line) for line in stream_progress(work)]
    assert lines == [{"stage": "files", "done": 1, "total": 2}, {"stats": {"indexed": 2}}]

    def failing(report: object) -> dict[str, int]:
        raise FileNotFoundError("`path` does not exist: /nowhere")

    lines = [json.loads(line) for line in stream_progress(failing)]
    assert lines == [{"error": "FileNotFoundError: `path` does not exist: /nowhere"}]
