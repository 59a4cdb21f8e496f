"""The local server's data folder is private to its user, and every route answers only requests
addressed to a loopback host (never building a URL from a host it did not check)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from shared import runtime
from shared.config.settings import Settings
from shared.console.security import csrf_token
from shared.local.runtime import LocalRuntime
from tests.functional.conftest import local_runtime

BASE = "http://127.0.0.1:8765"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalRuntime]:
    with local_runtime(tmp_path / "data") as started:
        yield started


def test_a_new_data_folder_is_0700_and_its_files_0600(local: LocalRuntime) -> None:
    local.provision_dev_token(None)
    assert _mode(local.data_dir) == 0o700
    files = [path for path in local.data_dir.rglob("*") if path.is_file()]
    assert any(path.name == "cairn.db" for path in files)
    assert {path.name: _mode(path) for path in files if _mode(path) & 0o077} == {}
    folders = [path for path in local.data_dir.rglob("*") if path.is_dir()]
    assert {path.name: _mode(path) for path in folders if _mode(path) & 0o077} == {}


def test_an_existing_loose_folder_is_tightened_at_start_with_a_line_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a data folder an older version left readable by others
    data_dir = tmp_path / "data"
    (data_dir / "artifacts").mkdir(parents=True)
    (data_dir / "artifacts" / "a.bin").write_bytes(b"team data")
    (data_dir / "notes.json").write_text("{}")
    for path, mode in (
        (data_dir, 0o755),
        (data_dir / "artifacts", 0o775),
        (data_dir / "artifacts" / "a.bin", 0o644),
        (data_dir / "notes.json", 0o664),
    ):
        path.chmod(mode)

    # When the server starts on it
    local = LocalRuntime(data_dir)
    local.start()
    try:
        said = capsys.readouterr().err
    finally:
        local.stop()
        runtime.configure(Settings())

    # Then every entry is private, and the start said how many it tightened
    assert _mode(data_dir) == 0o700
    assert _mode(data_dir / "artifacts") == 0o700
    assert _mode(data_dir / "artifacts" / "a.bin") == 0o600
    assert _mode(data_dir / "notes.json") == 0o600
    assert "made 4 file(s) and folder(s)" in said
    assert str(data_dir) in said


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/healthz"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/console/login"),
        ("POST", "/ingest/events"),
        ("GET", "/_local/tokens?team=local"),
        ("GET", "/mcp"),
    ],
)
def test_every_route_refuses_a_request_addressed_to_another_host(
    local: LocalRuntime, method: str, path: str
) -> None:
    assert local.app is not None
    client = TestClient(local.app, base_url=BASE)

    rebound = client.request(method, path, headers={"Host": "attacker.example"})
    forwarded = client.request(method, path, headers={"X-Forwarded-Host": "attacker.example"})

    assert rebound.status_code == 403
    assert forwarded.status_code == 403


def test_the_metadata_names_the_checked_loopback_host(local: LocalRuntime) -> None:
    assert local.app is not None
    client = TestClient(local.app, base_url=BASE)

    metadata = client.get("/.well-known/oauth-protected-resource/mcp")

    assert metadata.status_code == 200
    assert metadata.json()["resource"] == f"{BASE}/mcp"


def test_logout_from_another_site_is_refused_like_every_other_form(local: LocalRuntime) -> None:
    assert local.app is not None
    secret = local.provision_dev_token(None).secret
    client = TestClient(local.app, base_url=BASE, cookies={"cairn_console": secret})
    form = {"csrf": csrf_token(secret)}

    cross_site = client.post(
        "/console/logout",
        data=form,
        headers={"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
        follow_redirects=False,
    )
    no_csrf = client.post("/console/logout", data={}, follow_redirects=False)
    same_site = client.post(
        "/console/logout", data=form, headers={"Origin": BASE}, follow_redirects=False
    )

    assert cross_site.status_code == 403
    assert no_csrf.status_code == 403
    assert same_site.status_code == 303
