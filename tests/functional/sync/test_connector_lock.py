"""Two syncs of one connector never run at once, `sync_run` (no team lock) included: each holds
the connector's own lock, so two runs of a git connector cannot fetch into its cache (or write
its item versions) together, while another connector of the team still syncs beside them
(the locks themselves: tests/unit/storage/test_sync_state_contract.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.functional.sync.conftest import Connectors, guide_repo


def _sync_run(connectors: Connectors, source: str) -> dict[str, Any]:
    """`sync_run`: the team's lock is not taken."""
    out = connectors.sync.sync(connectors.principal(), source=source, lock=False, background=False)
    (result,) = out.model_dump(mode="json")["connectors"]
    return dict(result)


def test_a_second_run_of_a_connector_waits_for_none_and_skips_while_the_first_runs(
    connectors: Connectors, tmp_path: Path
) -> None:
    docs = guide_repo(tmp_path / "docs")
    notes = guide_repo(tmp_path / "notes", "The beekeeper counts the hives.")
    connectors.sync.connector_add("local", name="docs", kind="git", config={"url": docs.url})
    connectors.sync.connector_add("local", name="notes", kind="git", config={"url": notes.url})
    connectors.embedder.pause()  # the first run stops inside its indexing, its lock held
    first: dict[str, Any] = {}
    running = threading.Thread(target=lambda: first.update(_sync_run(connectors, "docs")))
    running.start()
    assert connectors.embedder.entered.wait(30)

    second = _sync_run(connectors, "docs")
    beside = _sync_run(connectors, "notes")  # another connector is not held up
    connectors.embedder.resume.set()
    running.join(30)
    third = _sync_run(connectors, "docs")

    assert second["success"] is False
    assert "another sync of it is running" in second["message"]
    assert second["stats"]["entities_seen"] == 0
    assert beside["success"], beside
    assert first["success"], first
    assert first["stats"]["entities_seen"] == 1
    assert third["success"]
    assert third["message"] == "Unchanged since the last sync"
    # The skipped run left no error behind: the status is the first run's.
    assert "last_error" not in connectors.status("docs")
    assert connectors.found("lighthouse tides", "docs") == ["guide.md"]
    docs.close()
    notes.close()
