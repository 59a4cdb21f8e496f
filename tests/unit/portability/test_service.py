"""The portability service on the embedded store (no search index: its erasure and rebuild
are the index contract's and the end-to-end test's): a bad file writes nothing, artifact
bytes travel with the team, erasure takes the team's folders and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared import runtime
from shared.config.settings import Settings
from shared.handoffs.ports import OpenHandoffFilter
from shared.handoffs.wiring import build_handoff_store
from shared.knowledge.wiring import WEBHOOK_SECRETS_FILE, webhook_secret
from shared.portability.format import FormatError
from shared.portability.service import Portability
from shared.portability.wiring import build_portability
from tests.unit.storage.test_handoff_store_contract import handoff


@pytest.fixture
def portability(tmp_path: Path) -> Iterator[Portability]:
    runtime.configure(Settings(environment="local", storage="sqlite", data_dir=tmp_path))
    yield build_portability(with_index=False)
    runtime.configure(Settings())


def open_handoffs(team: str) -> list[str]:
    page = build_handoff_store().list_open(team, OpenHandoffFilter(), limit=50)
    return [h.id for h in page.items]


def export_to(portability: Portability, team: str, path: Path) -> list[str]:
    lines = list(portability.export(team))
    path.write_text("".join(lines))
    return lines


def test_a_file_bad_at_any_line_imports_nothing(portability: Portability, tmp_path: Path) -> None:
    for number in range(1, 4):
        build_handoff_store().create("alpha", handoff(number))
    lines = export_to(portability, "alpha", tmp_path / "good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join([*lines[:3], '{"kind": "handoffs", "row": {"nope": 1}}\n', *lines[3:]]))
    portability.delete_team("alpha")

    with pytest.raises(FormatError, match=r"line 4: .*nope"):
        portability.import_file(bad)

    assert open_handoffs("alpha") == []
    report = portability.import_file(tmp_path / "good.jsonl")
    assert report.to_dict()["read"] == {"handoffs": 3}
    assert sorted(open_handoffs("alpha")) == ["hof_0001", "hof_0002", "hof_0003"]


def test_artifact_bytes_travel_with_the_team_and_go_with_it(
    portability: Portability, tmp_path: Path
) -> None:
    artifacts = tmp_path / "artifacts"
    (artifacts / "alpha").mkdir(parents=True)
    (artifacts / "alpha" / "art_1").write_bytes(b"\x00\x01binary")
    (artifacts / "beta").mkdir(parents=True)
    (artifacts / "beta" / "art_2").write_bytes(b"beta's")
    (tmp_path / "inbox" / "alpha").mkdir(parents=True)
    (tmp_path / "inbox" / "alpha" / "note.md").write_text("x")
    lines = export_to(portability, "alpha", tmp_path / "a.jsonl")
    assert {"kind": "artifact_bytes", "artifact_id": "art_1", "base64": "AAFiaW5hcnk="} in [
        json.loads(text) for text in lines
    ]

    counts = portability.delete_team("alpha")

    assert counts == {"artifact_files": 1, "inbox_files": 1}
    assert not (artifacts / "alpha").exists()
    assert not (tmp_path / "inbox" / "alpha").exists()
    assert (artifacts / "beta" / "art_2").read_bytes() == b"beta's"
    assert portability.import_file(tmp_path / "a.jsonl").written == 1
    assert (artifacts / "alpha" / "art_1").read_bytes() == b"\x00\x01binary"
    assert portability.import_file(tmp_path / "a.jsonl").written == 0


def test_a_format_1_file_of_dynamodb_items_is_refused_naming_both(
    portability: Portability, tmp_path: Path
) -> None:
    path = tmp_path / "d.jsonl"
    lines = list(portability.export("alpha"))
    first = lines[0].replace('"backend":"sqlite"', '"backend":"dynamodb"')
    path.write_text(first.replace('"format_version":2', '"format_version":1') + lines[1])
    with pytest.raises(
        FormatError, match=r"exported from the dynamodb store in format 1; .*sqlite"
    ):
        portability.import_file(path)


def test_a_team_name_that_leaves_its_folder_is_refused(portability: Portability) -> None:
    with pytest.raises(ValueError, match="unusable team name"):
        portability.delete_team("..")


def test_team_delete_drops_its_entry_in_the_webhook_secrets_file(
    portability: Portability, tmp_path: Path
) -> None:
    secrets = tmp_path / WEBHOOK_SECRETS_FILE
    secrets.write_text(
        json.dumps({"alpha": "a", "beta": "b", "pull": {"alpha": {"token": "t", "repos": []}}})
    )

    assert portability.delete_team("alpha") == {"webhook_secrets": 1}

    assert json.loads(secrets.read_text()) == {"beta": "b", "pull": {}}
    assert webhook_secret("beta") == "b"
    assert portability.delete_team("alpha") == {}
