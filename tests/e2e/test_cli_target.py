"""Every CLI command finds its target one way: a deployed stack when one is named, else the local
server recorded in the data folder (or on $CAIRN_PORT / the default port); with neither, the
error says both ways out. Real `cairn serve` and `cairn` processes; CAIRN_PORT is left out of
the CLI's environment on purpose, as after `make serve` in another shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.protocol.conftest import free_port, posted_call, start_server, stop_server


def _cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"CAIRN_PORT", "CAIRN_STACK_NAME", "CAIRN_DEV_TOKEN"}
    }
    return subprocess.run(
        [sys.executable, "-m", "shared.cli", *args],
        env={**base, "CAIRN_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.protocol
def test_tokens_and_index_find_the_server_by_the_port_in_its_data_folder(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pager.md").write_text("# Pager\n\nThe pager rotation hands over on Mondays at 10.\n")
    server = start_server(data_dir, free_port())  # never the default port: it may be in use
    try:
        record = json.loads((data_dir / "server.json").read_text())
        assert record["port"] == server.port
        assert record["pid"] == server.process.pid

        listed = _cli(data_dir, "tokens", "list", "--team", "local")
        assert listed.returncode == 0, listed.stderr
        names = [json.loads(line)["name"] for line in listed.stdout.splitlines()]
        assert names == ["dev"]

        indexed = _cli(data_dir, "index", str(notes))
        assert indexed.returncode == 0, indexed.stderr
        assert json.loads(indexed.stdout)["chunks"] == 1
        # Not a terminal: plain progress lines on stderr, one per stage's end at least.
        assert "files: 1/1 files" in indexed.stderr
        assert "embedding: 1/1 chunks" in indexed.stderr
        found = posted_call(
            server.url,
            server.dev_token,
            "search",
            {"query": "when does the pager rotation hand over"},
        )
        assert "Mondays at 10" in json.dumps(found)
    finally:
        output = stop_server(server)
    assert server.process.returncode == 0, output
    assert not (data_dir / "server.json").exists()  # a clean stop forgets the port


def test_with_no_server_and_no_stack_the_error_says_both_ways(tmp_path: Path) -> None:
    nobody = str(free_port())  # nothing listens there
    done = _cli(tmp_path / "data", "tokens", "list", "--team", "local", CAIRN_PORT=nobody)

    assert done.returncode == 2
    assert "no cairn server is running" in done.stderr
    assert "./cairn serve" in done.stderr
    assert "--stack NAME" in done.stderr
    assert "CAIRN_STACK_NAME=NAME" in done.stderr
    assert "cairn-prod" not in done.stderr  # no stack is guessed


def test_a_stale_record_of_a_killed_server_is_skipped(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "server.json").write_text(json.dumps({"port": free_port(), "pid": 999999}))
    nobody = str(free_port())

    tokens = _cli(data_dir, "tokens", "list", "--team", "local", CAIRN_PORT=nobody)
    assert tokens.returncode == 2
    assert "no cairn server is running" in tokens.stderr

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("The stale record does not stop direct indexing.")
    indexed = _cli(data_dir, "index", str(notes), CAIRN_PORT=nobody)
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["indexed"] == 1


@pytest.mark.protocol
def test_a_server_of_another_data_folder_is_named_with_the_fix(tmp_path: Path) -> None:
    server = start_server(tmp_path / "served", free_port())
    try:
        other = tmp_path / "other"
        other.mkdir()
        (other / "admin.key").write_text("not-that-servers-key")
        done = _cli(other, "tokens", "list", "--team", "local", CAIRN_PORT=str(server.port))
    finally:
        stop_server(server)
    assert done.returncode == 2
    assert f"the server on port {server.port} refused the admin key" in done.stderr
    assert "CAIRN_DATA_DIR" in done.stderr


def test_a_bad_cairn_port_is_named(tmp_path: Path) -> None:
    done = _cli(tmp_path, "tokens", "list", "--team", "local", CAIRN_PORT="eighty")
    assert done.returncode == 2
    assert "CAIRN_PORT must be a port number" in done.stderr
