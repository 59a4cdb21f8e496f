"""`index_path`: a folder of files indexed incrementally, deletions tombstoned."""

from __future__ import annotations

import json
from pathlib import Path

from shared.connectors.local_files import index_path
from tests.functional.search.conftest import SearchHarness


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_first_run_indexes_every_supported_file(search: SearchHarness, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, "a.md", "# Alpha Title\nabout kayaks")
    write(root, "sub/b.txt", "about canoes")
    write(root, "c.json", json.dumps({"topic": "paddles", "count": 2}))
    write(root, "image.png", "not text we index")
    write(root, ".hidden/d.md", "hidden folder is skipped")
    stats = index_path(root, "alpha", service=search.service)
    assert (stats.scanned, stats.indexed, stats.unchanged, stats.deleted) == (3, 3, 0, 0)
    titles = {e.source_id: e.title for e in search.service.documents.iter_entities("alpha")}
    assert titles == {"a.md": "Alpha Title", "sub/b.txt": "b", "c.json": "c"}
    hit = search.call("search", {"query": "paddles", "source": "local_files"})["results"][0]
    assert hit["uri"] == (root / "c.json").resolve().as_uri()


def test_a_rerun_re_embeds_only_changed_files(search: SearchHarness, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    for i in range(4):
        write(root, f"n{i}.md", f"note number {i} about sailing")
    index_path(root, "alpha", service=search.service)
    search.embedder.embedded.clear()

    unchanged = index_path(root, "alpha", service=search.service)
    assert (unchanged.indexed, unchanged.unchanged) == (0, 4)
    assert search.embedder.embedded == []

    write(root, "n2.md", "note number 2 now about windsurfing")
    changed = index_path(root, "alpha", service=search.service)
    assert (changed.indexed, changed.unchanged) == (1, 3)
    assert len(search.embedder.embedded) == 1
    assert "windsurfing" in search.embedder.embedded[0]
    assert search.call("search", {"query": "windsurfing"})["results"][0]["entity_title"] == "n2"


def test_deleted_files_leave_the_index_and_get_returns_null(
    search: SearchHarness, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    write(root, "keep.md", "evergreen onboarding guide")
    doomed = write(root, "drop.md", "obsolete onboarding guide")
    index_path(root, "alpha", service=search.service)
    dropped_id = next(
        e.id for e in search.service.documents.iter_entities("alpha") if e.source_id == "drop.md"
    )
    doomed.unlink()
    stats = index_path(root, "alpha", service=search.service)
    assert stats.deleted == 1
    results = search.call("search", {"query": "onboarding guide"})["results"]
    assert [r["entity_title"] for r in results] == ["keep"]
    assert search.call("get", {"entity_id": dropped_id}) == {"entity": None}
    # The entity stays as a tombstone (connectors see the deletion) that DynamoDB TTL collects.
    tombstone = search.service.documents.get_entity("alpha", dropped_id)
    assert tombstone is not None
    assert tombstone.deleted
    assert tombstone.chunk_count == 0
    assert search.service.documents.chunks("alpha", dropped_id) == []
    # Re-creating the file brings it back.
    write(root, "drop.md", "obsolete onboarding guide")
    assert index_path(root, "alpha", service=search.service).indexed == 1


def test_another_folder_under_the_same_source_is_left_alone(
    search: SearchHarness, tmp_path: Path
) -> None:
    write(tmp_path / "one", "x.md", "first folder document")
    write(tmp_path / "two", "y.md", "second folder document")
    index_path(tmp_path / "one", "alpha", service=search.service)
    stats = index_path(tmp_path / "two", "alpha", service=search.service)
    assert stats.deleted == 0
    assert len(search.call("search", {"query": "folder document"})["results"]) == 2


def test_files_are_indexed_for_the_given_team_only(search: SearchHarness, tmp_path: Path) -> None:
    write(tmp_path / "notes", "x.md", "team scoped knowledge")
    index_path(tmp_path / "notes", "alpha", service=search.service)
    assert search.call("search", {"query": "team scoped"}, team="beta")["results"] == []
