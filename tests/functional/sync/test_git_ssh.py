"""The git connector over an ssh:// URL, through dulwich's real ssh path: it runs the machine's
`ssh` (here a shim first on PATH, standing in for ssh and the remote's sshd) with the
`git-upload-pack '<path>'` command, which the shim serves from a local repository."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from shared.tools.errors import InvalidArgument
from tests.functional.sync.conftest import Connectors, guide_repo

# What a remote's sshd does with the command: a shell runs it (git's upload-pack on the path).
# Without git on this machine, dulwich's upload-pack serves it instead.
_SHIM = """#!/bin/sh
for arg in "$@"; do printf '%s\\037' "$arg"; done >> {log}
printf '\\n' >> {log}
eval "command=\\${{$#}}"
if command -v git-upload-pack > /dev/null; then exec sh -c "$command"; fi
exec {python} -c '{served}' "$command"
"""
_SERVED = (
    "import shlex, sys; from dulwich.server import FileSystemBackend, UploadPackHandler, "
    "serve_command; program, path = shlex.split(sys.argv[1]); "
    "sys.exit(serve_command(UploadPackHandler, [program, path], FileSystemBackend(chr(47))))"
)


@pytest.fixture
def ssh_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shim `ssh` first on PATH; the log of its invocations."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ssh.log"
    shim = bin_dir / "ssh"
    shim.write_text(
        _SHIM.format(python=shlex.quote(sys.executable), log=shlex.quote(str(log)), served=_SERVED)
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    return log


def test_an_ssh_url_syncs_through_the_machines_ssh(
    connectors: Connectors, tmp_path: Path, ssh_log: Path
) -> None:
    repo = guide_repo(tmp_path / "repo")
    url = f"ssh://git@git.example:2222{repo.path.resolve()}"
    connectors.sync.connector_add("local", name="docs", kind="git", config={"url": url})

    first = connectors.run("docs")["connectors"][0]
    repo.write({"guide.md": "# Guide\n\nThe keeper now logs the tides at dawn.\n"})
    second = connectors.run("docs")["connectors"][0]
    again = connectors.run("docs")["connectors"][0]

    assert first["success"], first
    assert connectors.found("lighthouse tides", "docs") == ["guide.md"]
    assert second["success"], second
    assert "(1 changed)" in second["message"]
    assert again["message"] == "Unchanged since the last sync"
    calls = [line.split("\x1f")[:-1] for line in ssh_log.read_text().splitlines()]
    assert len(calls) >= 3  # a ref listing per sync, and the fetches
    for argv in calls:
        assert argv[:2] == ["-o", "BatchMode=yes"]  # never waits on a prompt
        assert argv[argv.index("-p") : argv.index("-p") + 2] == ["-p", "2222"]
        assert "git@git.example" in argv
        assert shlex.split(argv[-1]) == ["git-upload-pack", str(repo.path.resolve())]
    repo.close()


def test_an_ssh_remote_without_the_repository_fails_naming_its_connector(
    connectors: Connectors, ssh_log: Path
) -> None:
    url = "ssh://git@git.example/nowhere/repo.git"
    connectors.sync.connector_add("local", name="docs", kind="git", config={"url": url})

    (result,) = connectors.run("docs")["connectors"]

    assert result["success"] is False
    assert result["message"].startswith("connector 'docs' (git): cannot read the branches of ")


def test_an_ssh_url_takes_keys_not_a_token_or_a_password(connectors: Connectors) -> None:
    for config in (
        {"url": "ssh://git@git.example/acme/handbook.git", "token_env": "HANDBOOK_TOKEN"},
        {"url": "ssh://git:hunter2@git.example/acme/handbook.git"},
    ):
        with pytest.raises(InvalidArgument) as refused:
            connectors.sync.connector_add("local", name="docs", kind="git", config=config)
        assert "hunter2" not in str(refused.value)


def test_an_ssh_url_is_refused_outside_local_mode(connectors: Connectors) -> None:
    from shared.sync.connectors import register_connector

    store = connectors.sync._connector_store()
    with pytest.raises(InvalidArgument) as refused:
        register_connector(
            store,
            "alpha",
            name="docs",
            kind="git",
            config={"url": "ssh://git@git.example/acme/handbook.git"},
            replace=False,
            by="test",
            now=connectors.sync.now(),
            local=False,
        )
    assert refused.value.field == "url"
    assert "local mode only" in str(refused.value)
