"""The git connector through a local repository: first sync, an edit, a deletion, an
unchanged commit (nothing done), a force-push, a branch change, binary and oversized files, a
repository that vanishes, and another team's connectors kept apart."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shared.tools.errors import InvalidArgument
from tests.functional.sync.conftest import Connectors, GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    made = GitRepo(tmp_path / "repo")
    made.write(
        {
            "README.md": "# Handbook\n\nThe pager rotation hands over on Mondays.\n",
            "docs/deploy.md": "---\ntags: [ops, deploy]\n---\n# Deploying\n\nCanary first.\n",
            "docs/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0binary",
            ".github/ci.md": "hidden file, never read\n",
        },
        "first",
    )
    return made


def test_a_git_connector_syncs_edits_deletions_and_nothing_when_unchanged(
    connectors: Connectors, repo: GitRepo
) -> None:
    connectors.sync.connector_add(
        "local", name="docs", kind="git", config={"url": repo.url, "branch": "main"}
    )
    first = connectors.run("docs")
    (result,) = first["connectors"]
    assert result["source"] == "docs", result
    assert result["success"], result
    assert result["stats"]["entities_seen"] == 3  # README, deploy and the png (skipped)
    assert "1 binary" in result["message"]
    assert connectors.source_ids("docs") == {"README.md", "docs/deploy.md"}
    assert connectors.found("pager rotation mondays", "docs")[0] == "README.md"
    deploy = next(
        e
        for e in connectors.search.documents.iter_entities("local", "docs")
        if e.source_id == "docs/deploy.md"
    )
    assert deploy.tags == ["ops", "deploy"]
    assert deploy.title == "Deploying"

    again = connectors.run("docs")["connectors"][0]
    assert again["success"]
    assert again["message"] == "Unchanged since the last sync"
    assert again["stats"]["chunks_written"] == 0

    repo.write(
        {
            "README.md": "# Handbook\n\nThe pager rotation now hands over on Fridays.\n",
            "docs/deploy.md": None,
        },
        "edit and delete",
    )
    edited = connectors.run("docs")["connectors"][0]
    assert edited["success"], edited
    assert edited["stats"]["entities_tombstoned"] == 1
    assert connectors.source_ids("docs") == {"README.md"}
    assert connectors.found("fridays", "docs") == ["README.md"]
    status = connectors.status("docs")
    assert status["kind"] == "git"
    assert status["entities"] == 1
    assert status["counts"]["indexed"] == 1
    assert status["counts"]["skipped_binary"] == 1
    assert "last_error" not in status


def test_a_force_push_and_a_branch_change_are_followed(
    connectors: Connectors, repo: GitRepo
) -> None:
    connectors.sync.connector_add("local", name="docs", kind="git", config={"url": repo.url})
    first = repo.head()
    repo.write({"notes.md": "# Notes\n\nRewritten history drops this.\n"}, "extra")
    connectors.run("docs")
    assert "notes.md" in connectors.source_ids("docs")
    # Force-push: the branch goes back to the first commit and grows another way, so the
    # synced commit is no longer on it.
    repo.reset_hard(first)
    repo.write({"README.md": None, "other.md": "# Other\n\nOnly this.\n"}, "forced")
    forced = connectors.run("docs")["connectors"][0]
    assert forced["success"], forced
    assert connectors.source_ids("docs") == {"docs/deploy.md", "other.md"}

    # Another branch, by replacing the connector's settings: its files, the rest tombstoned.
    repo.repo.refs[b"refs/heads/release"] = repo.head()
    repo.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/release")
    repo.write({"release.md": "# Release\n\nShips on the third Tuesday.\n", "other.md": None})
    connectors.sync.connector_add(
        "local",
        name="docs",
        kind="git",
        config={"url": repo.url, "branch": "release"},
        replace=True,
    )
    switched = connectors.run("docs")["connectors"][0]
    assert switched["success"], switched
    assert connectors.source_ids("docs") == {"docs/deploy.md", "release.md"}


def test_a_vanished_repository_fails_alone_and_keeps_what_was_indexed(
    connectors: Connectors, repo: GitRepo, tmp_path: Path
) -> None:
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "kiln.md").write_text("The kiln fires at dawn.\n")
    connectors.sync.connector_add("local", name="docs", kind="git", config={"url": repo.url})
    connectors.sync.connector_add(
        "local", name="vault", kind="obsidian", config={"path": str(notes)}
    )
    connectors.run()
    repo.close()
    shutil.rmtree(repo.path)

    results = {c["source"]: c for c in connectors.run()["connectors"]}
    assert results["inbox"]["success"]
    assert results["vault"]["success"]
    failed = results["docs"]
    assert not failed["success"]
    assert failed["stats"]["errors"] == 1
    assert failed["message"].startswith("connector 'docs' (git): cannot read the branches of")
    assert "no git repository there" in failed["message"]
    assert connectors.source_ids("docs") == {"README.md", "docs/deploy.md"}  # kept
    assert connectors.status("docs")["last_error"] == failed["message"]


def test_a_missing_branch_is_named(connectors: Connectors, repo: GitRepo) -> None:
    connectors.sync.connector_add(
        "local", name="docs", kind="git", config={"url": repo.url, "branch": "nope"}
    )
    (result,) = connectors.run("docs")["connectors"]
    assert result["message"] == (
        f"connector 'docs' (git): the repository {repo.url} has no branch 'nope'"
    )


def test_teams_see_and_sync_only_their_own_connectors(
    connectors: Connectors, repo: GitRepo
) -> None:
    connectors.sync.connector_add("alpha", name="docs", kind="git", config={"url": repo.url})
    assert [r.name for r in connectors.sync.connector_list("alpha")] == ["docs"]
    assert connectors.sync.connector_list("beta") == []
    with pytest.raises(InvalidArgument) as refused:
        connectors.run("docs", team="beta")
    assert refused.value.field == "source"
    beta = connectors.run(team="beta")["connectors"]
    assert [c["source"] for c in beta] == ["inbox"]
    connectors.run(team="alpha")
    assert connectors.source_ids("docs", team="alpha") == {"README.md", "docs/deploy.md"}
    assert connectors.source_ids("docs", team="beta") == set()
    assert "docs" not in {c.source for c in connectors.sync.status(connectors.principal("beta"))}


def test_bad_settings_are_refused_naming_the_field(connectors: Connectors) -> None:
    with pytest.raises(InvalidArgument) as secret_url:
        connectors.sync.connector_add(
            "local", name="docs", kind="git", config={"url": "https://u:hunter2@example.com/r"}
        )
    assert secret_url.value.field == "url"
    assert "hunter2" not in str(secret_url.value)
    with pytest.raises(InvalidArgument) as kind:
        connectors.sync.connector_add("local", name="docs", kind="svn", config={})
    assert kind.value.field == "kind"
    with pytest.raises(InvalidArgument) as name:
        connectors.sync.connector_add("local", name="inbox", kind="folder", config={"path": "/"})
    assert name.value.field == "name"
    connectors.sync.connector_add("local", name="docs", kind="local_files", config={"path": "/x"})
    with pytest.raises(InvalidArgument) as taken:
        connectors.sync.connector_add("local", name="docs", kind="folder", config={"path": "/y"})
    assert "already has a connector" in str(taken.value)
