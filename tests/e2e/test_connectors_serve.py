"""Issue 29's "done when", end to end through `cairn serve` and the `cairn` CLI: a git
repository added with `cairn connectors add docs --kind git --url file://...` is synced by
`sync {"source": "docs"}` and found by `search {"source": "docs"}`; an edit and a deletion reach
the index at the next sync; an Obsidian folder added with `--kind obsidian --path DIR` is
searchable the same way; `sync_status` lists both; `list` and `remove` work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.functional.sync.conftest import GitRepo
from tests.protocol.conftest import free_port, posted_call, start_server, stop_server

pytestmark = pytest.mark.protocol


def _structured(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    content: dict[str, Any] = result["structuredContent"]
    return content


def _sources_found(url: str, token: str, query: str, source: str) -> list[str]:
    found = _structured(posted_call(url, token, "search", {"query": query, "source": source}))
    return [r["uri"] for r in found["results"]]


def test_git_and_obsidian_connectors_through_the_cli_and_the_sync_tools(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "handbook")
    repo.write(
        {
            "pager.md": "# Pager\n\nThe pager rotation hands over on Mondays at ten.\n",
            "ferry.md": "# Ferry\n\nThe staff ferry leaves the north pier at nine.\n",
        }
    )
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / "kiln.md").write_text("---\ntags: [pottery]\n---\nThe kiln fires at dawn. [[Glaze]]\n")
    server = start_server(tmp_path / "data", free_port())
    url, token = server.url, server.dev_token
    try:
        added = server.cli(
            "connectors", "add", "docs", "--kind", "git", "--url", repo.url, "--team", "local"
        )
        assert json.loads(added.stdout)["name"] == "docs"
        synced = _structured(posted_call(url, token, "sync", {"source": "docs"}))
        (docs,) = synced["connectors"]
        assert docs["source"] == "docs"
        assert docs["success"], docs
        assert any(u.endswith(":pager.md") for u in _sources_found(url, token, "pager", "docs"))

        repo.write(
            {
                "pager.md": "# Pager\n\nThe pager rotation hands over on Thursdays.\n",
                "ferry.md": None,
            }
        )
        again = _structured(posted_call(url, token, "sync", {"source": "docs"}))["connectors"][0]
        assert again["stats"]["entities_tombstoned"] == 1
        hits = _structured(
            posted_call(url, token, "search", {"query": "rotation thursdays", "source": "docs"})
        )["results"]
        assert "Thursdays" in json.dumps(hits)
        assert "Mondays" not in json.dumps(hits)
        gone = _sources_found(url, token, "staff ferry north pier", "docs")
        assert not [u for u in gone if u.endswith(":ferry.md")]

        server.cli("connectors", "add", "vault", "--kind", "obsidian", "--path", str(vault))
        vault_sync = _structured(posted_call(url, token, "sync", {"source": "vault"}))
        assert vault_sync["connectors"][0]["success"], vault_sync
        kiln = _structured(
            posted_call(url, token, "search", {"query": "kiln dawn", "source": "vault"})
        )["results"]
        assert kiln
        assert kiln[0]["source"] == "vault"

        status = _structured(posted_call(url, token, "sync_status", {}))["connectors"]
        by_source = {c["source"]: c for c in status}
        assert by_source["docs"]["kind"] == "git"
        assert by_source["docs"]["entities"] == 1
        assert by_source["vault"]["kind"] == "obsidian"
        assert by_source["vault"]["entities"] == 1
        assert by_source["docs"]["last_sync"]

        listed = server.cli("connectors", "list", "--team", "local")
        assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == [
            "docs",
            "vault",
        ]
        removed = server.cli("connectors", "remove", "vault")
        assert json.loads(removed.stdout)["documents_removed"] == 1
        refused = server.cli("connectors", "remove", "vault", check=False)
        assert refused.returncode == 2
        assert "no connector 'vault'" in refused.stderr
    finally:
        output = stop_server(server)
        repo.close()
    assert server.process.returncode == 0, output
