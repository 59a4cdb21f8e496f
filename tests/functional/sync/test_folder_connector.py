"""The obsidian and folder kinds: a vault with front matter, wikilinks, Obsidian's own folders,
hidden files, an attachment, bounds on size and count; seed 000's `local_files` name."""

from __future__ import annotations

from pathlib import Path

from shared.connectors.documents import wikilinks
from tests.functional.sync.conftest import Connectors


def _vault(root: Path) -> Path:
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "workspace.json").write_text('{"secret": "layout"}')
    (root / ".trash").mkdir()
    (root / ".trash" / "old.md").write_text("deleted note about the ferry")
    (root / ".hidden.md").write_text("hidden note about the ferry")
    (root / "daily").mkdir()
    (root / "daily" / "2026-11-27.md").write_text(
        "---\ntitle: Friday\ntags:\n  - journal\n  - '#ferry'\n---\n"
        "Took the ferry with [[Alice Smith|Alice]]; see [[Ferry timetable#Winter]].\n"
    )
    (root / "Ferry timetable.md").write_text(
        "---\ntags: schedule, ferry\n---\n# Timetable\n\nThe ferry leaves at nine.\n"
    )
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    return root


def test_an_obsidian_vault_keeps_tags_and_links_and_skips_obsidian_folders(
    connectors: Connectors, tmp_path: Path
) -> None:
    vault = _vault(tmp_path / "vault")
    connectors.sync.connector_add(
        "local", name="obsidian", kind="obsidian", config={"path": str(vault)}
    )

    (result,) = connectors.run("obsidian")["connectors"]

    assert result["success"], result
    assert connectors.source_ids("obsidian") == {"daily/2026-11-27.md", "Ferry timetable.md"}
    assert connectors.found("ferry", "obsidian")  # searchable within the source
    entities = {e.source_id: e for e in connectors.search.documents.iter_entities("local")}
    daily = entities["daily/2026-11-27.md"]
    assert daily.title == "Friday"
    assert daily.tags == ["journal", "ferry"]
    assert entities["Ferry timetable.md"].tags == ["schedule", "ferry"]
    assert entities["Ferry timetable.md"].title == "Timetable"
    chunks = connectors.search.get_entity("local", daily.id, include_memory=False)
    assert chunks is not None
    text = "".join(c.content for c in chunks.chunks)
    assert "title:" not in text  # the front matter left the text
    assert wikilinks(text) == ["Alice Smith", "Ferry timetable"]
    status = connectors.status("obsidian")
    assert status["kind"] == "obsidian"
    assert status["counts"]["skipped_binary"] == 1
    assert status["counts"]["skipped_hidden"] == 3  # .obsidian/, .trash/, .hidden.md

    (vault / "Ferry timetable.md").unlink()
    (vault / "daily" / "2026-11-27.md").write_text("Rain all day; no [[ferry]].\n")
    again = connectors.run("obsidian")["connectors"][0]
    assert again["stats"]["entities_tombstoned"] == 1
    assert again["stats"]["chunks_written"] == 1
    assert connectors.source_ids("obsidian") == {"daily/2026-11-27.md"}


def test_bounds_skip_oversized_files_and_files_past_the_limit(
    connectors: Connectors, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for n in range(5):
        (root / f"note-{n}.md").write_text(f"note number {n}\n")
    (root / "big.txt").write_text("x" * 5000)
    connectors.sync.connector_add(
        "local",
        name="local_files",
        kind="local_files",
        config={"path": str(root), "max_file_bytes": 1000, "max_files": 4},
    )

    (result,) = connectors.run("local_files")["connectors"]

    assert result["success"], result
    # Sorted: big.txt (too large), note-0..note-2 indexed, note-3 and note-4 past the limit.
    assert connectors.source_ids("local_files") == {"note-0.md", "note-1.md", "note-2.md"}
    assert "1 too large" in result["message"]
    assert "2 over limit" in result["message"]
    assert connectors.status("local_files")["kind"] == "folder"


def test_a_missing_folder_fails_naming_the_connector(
    connectors: Connectors, tmp_path: Path
) -> None:
    connectors.sync.connector_add(
        "local", name="notes", kind="folder", config={"path": str(tmp_path / "nowhere")}
    )
    (inbox, notes) = connectors.run()["connectors"]
    assert inbox["success"]
    assert not notes["success"]
    assert notes["message"].startswith("connector 'notes' (folder): the folder ")
