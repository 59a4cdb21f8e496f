"""One server per data folder: a second `cairn serve` on a folder another serves refuses to
start, names the running one, and leaves its record alone; `cairn index` without a server
refuses to write a folder a server holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.local.discovery import read_record
from shared.local.folder_lock import FolderLock
from tests.protocol.conftest import free_port, start_server, stop_server


@pytest.mark.protocol
def test_a_second_server_on_the_same_folder_refuses_and_names_the_first(tmp_path: Path) -> None:
    # Given a running server on a data folder
    data_dir = tmp_path / "data"
    first = start_server(data_dir)
    try:
        record = read_record(data_dir)
        assert record is not None
        assert record.port == first.port

        # When a second server starts on the same folder (on another port)
        second = subprocess.run(
            [sys.executable, "-m", "shared.cli", "serve"],
            env={**os.environ, "CAIRN_PORT": str(free_port()), "CAIRN_DATA_DIR": str(data_dir)},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

        # Then it exits non-zero naming the first's pid and port, and the record is untouched
        assert second.returncode == 1, second.stderr
        assert f"pid {first.process.pid}" in second.stderr
        assert f"127.0.0.1:{first.port}" in second.stderr
        assert read_record(data_dir) == record
        assert first.cli("tokens", "list", "--team", "local").returncode == 0
    finally:
        output = stop_server(first)
    assert first.process.returncode == 0, output
    assert read_record(data_dir) is None  # removed by the server that wrote it


@pytest.mark.protocol
def test_index_without_a_server_refuses_a_folder_another_process_holds(tmp_path: Path) -> None:
    # Given a folder held by a process that serves nothing (no server answers)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A note\n\nglacier moraine\n")
    lock = FolderLock(data_dir)
    lock.acquire()
    env = {**os.environ, "CAIRN_PORT": str(free_port()), "CAIRN_DATA_DIR": str(data_dir)}
    try:
        # When `cairn index` finds no server to go through
        refused = _cairn_index(notes, env)
    finally:
        lock.release()

    # Then it refuses and says who holds the folder; once free, it indexes directly
    assert refused.returncode != 0
    assert f"pid {os.getpid()}" in refused.stderr
    assert "cannot index directly" in refused.stderr
    done = _cairn_index(notes, env)
    assert done.returncode == 0, done.stderr


@pytest.mark.protocol
def test_a_folder_is_free_again_once_its_server_stopped(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    stop_server(start_server(data_dir, port))
    again = start_server(data_dir, port)
    output = stop_server(again)
    assert again.process.returncode == 0, output


def _cairn_index(notes: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shared.cli", "index", str(notes)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
