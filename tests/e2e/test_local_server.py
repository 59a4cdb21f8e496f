"""`cairn serve` end to end: what a user stores survives a restart; Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.protocol.conftest import free_port, posted_call, start_server, stop_server


@pytest.mark.protocol
def test_memories_and_tokens_survive_a_restart(tmp_path: Path) -> None:
    port = free_port()
    first = start_server(tmp_path, port)
    token = first.create_token("persist", "memory")
    stored = posted_call(
        first.url, token, "memory_put", {"key": "durable", "content": "kept across restarts"}
    )
    output = stop_server(first)
    assert first.process.returncode == 0, output
    assert "state saved" in output

    second = start_server(tmp_path, port)
    try:
        found = posted_call(second.url, token, "memory_get", {"key": "durable"})
        assert found["memory"] == stored["memory"]
    finally:
        stop_server(second)


@pytest.mark.protocol
def test_serve_prints_the_url_and_a_ready_to_paste_client_config(tmp_path: Path) -> None:
    server = start_server(tmp_path, dev_token="cairn_sk_printed-config-test-token")
    output = stop_server(server)
    assert f"http://127.0.0.1:{server.port}/mcp" in output
    config_text = output[output.index("{") : output.rindex("}") + 1]
    config = json.loads(config_text)
    entry = config["mcpServers"]["cairn"]
    assert entry["url"] == server.url
    assert entry["headers"]["Authorization"] == "Bearer cairn_sk_printed-config-test-token"


@pytest.mark.protocol
def test_cairn_index_then_search_get_and_get_chunk_through_mcp(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text(
        "# Deploy runbook\n\n## Freeze\n\nNo deploys on Fridays after 3pm.\n\n"
        "## Rollback\n\nUse the blue-green switch to roll back within five minutes.\n"
    )
    (notes / "lunch.txt").write_text("The team lunch is on Wednesdays at the noodle place.")
    server = start_server(tmp_path / "data")
    try:
        indexed = server.cli("index", str(notes))
        stats = json.loads(indexed.stdout)
        assert stats["indexed"] == 2

        found = posted_call(
            server.url, server.dev_token, "search", {"query": "how do I roll back a deploy"}
        )
        results = found["results"]
        assert isinstance(results, list)
        top = results[0]
        assert top["result_type"] == "entity"
        assert top["entity_title"] == "Deploy runbook"
        assert top["source"] == "local_files"
        assert "blue-green" in " ".join(c["content"] for c in top["chunks"])

        entity = posted_call(server.url, server.dev_token, "get", {"entity_id": top["entity_id"]})[
            "entity"
        ]
        assert isinstance(entity, dict)
        assert entity["id"] == top["entity_id"]
        assert [c["chunk_index"] for c in entity["chunks"]] == list(range(len(entity["chunks"])))

        chunk_id = top["chunks"][0]["chunk_id"]
        chunk = posted_call(server.url, server.dev_token, "get_chunk", {"chunk_id": chunk_id})[
            "chunk"
        ]
        assert isinstance(chunk, dict)
        assert chunk["chunk_id"] == chunk_id
        assert chunk["entity_id"] == top["entity_id"]

        unchanged = json.loads(server.cli("index", str(notes)).stdout)
        assert unchanged["indexed"] == 0
        assert unchanged["unchanged"] == 2
    finally:
        stop_server(server)


@pytest.mark.protocol
def test_local_inbox_files_land_in_the_data_folder_and_sync_indexes_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        put = posted_call(
            server.url,
            server.dev_token,
            "inbox_put",
            {"content": "The kiln fires on Thursdays.", "title": "Kiln", "filename": "kiln"},
        )
        path = Path(str(put["path"]))
        assert path.parent == data / "inbox" / "local"
        assert path.read_text().endswith("The kiln fires on Thursdays.")

        synced = posted_call(server.url, server.dev_token, "sync", {})
        assert synced["connectors"][0]["stats"]["entities_seen"] == 1
        found = posted_call(server.url, server.dev_token, "search", {"query": "kiln thursdays"})
        assert found["results"][0]["entity_title"] == "Kiln"

        remembered = posted_call(
            server.url,
            server.dev_token,
            "remember",
            {"title": "Kiln owner", "body": "Mara owns the kiln schedule."},
        )
        recalled = posted_call(
            server.url, server.dev_token, "recall", {"query": "who owns the kiln"}
        )
        assert recalled["memories"][0]["body"] == "Mara owns the kiln schedule."
        assert remembered["status"] == "accepted"
    finally:
        stop_server(server)
