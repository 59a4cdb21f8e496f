"""Seed 000's artifact tools on moto: records in the coordination table, bytes in S3 or a folder."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from shared import runtime
from shared.app.groups import load_group
from shared.auth.principal import Principal
from shared.config import names
from shared.config.settings import Settings
from shared.orchestrator.artifacts.adapters import FolderArtifactBlobs, S3ArtifactBlobs
from shared.orchestrator.artifacts.models import MAX_CONTENT_BYTES, ArtifactListInput
from shared.orchestrator.artifacts.ports import ArtifactBlobs, BlobExists, BlobMissing
from shared.orchestrator.artifacts.wiring import build_artifact_service
from shared.orchestrator.ports import ActiveAgent
from shared.orchestrator.tasks.wiring import build_task_service
from shared.tools.errors import InvalidArgument
from tests.functional.conftest import PEPPER, Harness, no_error


def _error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    error: dict[str, Any] = result["error"]
    return error


def _task(harness: Harness, token: str, **fields: Any) -> str:
    task_id: str = no_error(harness.call(token, "task.create", {"name": "build", **fields}))["id"]
    return task_id


BOSS = Principal(team="alpha", token_id="tok_boss", token_name="boss", scopes=frozenset())


class NoAgents:
    def active_agent(self, team: str, agent_id: str) -> ActiveAgent | None:
        return None


def _local_task(tmp_path: Path) -> str:
    """Switch to local mode (bytes under `tmp_path`) on the same moto tables; a new task's id."""
    runtime.configure(Settings(environment="local", token_pepper=PEPPER, data_dir=tmp_path))
    return build_task_service(NoAgents()).create(BOSS, name="job").id


def _objects(bucket: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket)
    return [entry["Key"] for entry in listed.get("Contents", [])]


def test_text_round_trips_with_and_without_content(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha", agent_id="agt_writer")
    task_id = _task(harness, token, workflow_id="wf_1")
    text = "# Report\nAll green. ✓"

    put = no_error(
        harness.call(
            token,
            "artifact.put",
            {
                "task_id": task_id,
                "name": "report.md",
                "artifact_type": "report",
                "content": text,
                "mime_type": "text/markdown",
                "metadata": {"pages": 1, "ratio": 0.5},
                "role": "output",
            },
        )
    )["artifact"]
    bare = no_error(harness.call(token, "artifact.get", {"artifact_id": put["artifact_id"]}))
    full = no_error(
        harness.call(
            token, "artifact.get", {"artifact_id": put["artifact_id"], "include_content": True}
        )
    )

    assert put["artifact_id"].startswith("art_")
    assert len(put["artifact_id"]) == 28
    assert put["workflow_id"] == "wf_1"
    assert put["created_by"] == "agt_writer"
    assert put["size_bytes"] == len(text.encode())
    assert put["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert put["storage"] == f"s3://{bucket}/artifacts/alpha/{put['artifact_id']}"
    assert "content" not in put
    assert bare["artifact"] == put
    assert full["artifact"]["content"] == text
    assert "content_base64" not in full["artifact"]
    assert full["artifact"]["metadata"] == {"pages": 1, "ratio": 0.5}
    head = boto3.client("s3").head_object(
        Bucket=bucket, Key=f"artifacts/alpha/{put['artifact_id']}"
    )
    assert head["ContentType"] == "text/markdown"


def test_binary_content_round_trips_byte_for_byte(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    task_id = _task(harness, token)
    data = bytes(range(256)) * 4

    put = no_error(
        harness.call(
            token,
            "artifact.put",
            {
                "task_id": task_id,
                "name": "blob.bin",
                "artifact_type": "binary",
                "content_base64": base64.b64encode(data).decode(),
            },
        )
    )["artifact"]
    got = no_error(
        harness.call(
            token, "artifact.get", {"artifact_id": put["artifact_id"], "include_content": True}
        )
    )["artifact"]

    assert put["mime_type"] == "application/octet-stream"
    assert put["size_bytes"] == len(data)
    assert put["sha256"] == hashlib.sha256(data).hexdigest()
    assert base64.b64decode(got["content_base64"]) == data
    assert "content" not in got


def test_declared_text_that_is_not_utf8_comes_back_as_base64(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    task_id = _task(harness, token)
    latin1 = "café".encode("latin-1")
    put = harness.call(
        token,
        "artifact.put",
        {
            "task_id": task_id,
            "name": "notes.txt",
            "artifact_type": "notes",
            "content_base64": base64.b64encode(latin1).decode(),
            "mime_type": "text/plain",
        },
    )

    got = harness.call(
        token,
        "artifact.get",
        {"artifact_id": no_error(put)["artifact"]["artifact_id"], "include_content": True},
    )["artifact"]

    assert base64.b64decode(got["content_base64"]) == latin1


def test_a_content_url_is_stored_as_a_reference_only(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    task_id = _task(harness, token)
    url = "https://example.invalid/builds/42/log.txt"

    put = no_error(
        harness.call(
            token,
            "artifact.put",
            {"task_id": task_id, "name": "log", "artifact_type": "log", "content_url": url},
        )
    )["artifact"]
    got = no_error(
        harness.call(
            token, "artifact.get", {"artifact_id": put["artifact_id"], "include_content": True}
        )
    )["artifact"]

    assert put["content_url"] == url
    assert put["storage"] is None
    assert put["size_bytes"] is None
    assert put["sha256"] is None
    assert "content" not in got
    assert "content_base64" not in got
    assert _objects(bucket) == []


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({}, "content"),
        ({"content": "a", "content_url": "https://example.invalid/a"}, "content_url"),
        ({"content": "a", "content_base64": "YQ=="}, "content_base64"),
        ({"content_base64": "not base64!"}, "content_base64"),
        ({"content_url": "no scheme here"}, "content_url"),
    ],
)
def test_content_must_be_exactly_one_valid_kind(
    harness: Harness, bucket: str, given: dict[str, Any], field: str
) -> None:
    token = harness.token(team="alpha")
    task_id = _task(harness, token)

    error = _error(
        harness.call(
            token, "artifact.put", {"task_id": task_id, "name": "x", "artifact_type": "t", **given}
        )
    )

    assert error["field"] == field
    assert field in error["message"]
    assert _objects(bucket) == []
    assert no_error(harness.call(token, "artifact.list", {"task_id": task_id}))["artifacts"] == []


@pytest.mark.parametrize("field", ["content", "content_base64"])
def test_oversized_content_is_refused_and_nothing_is_written(
    harness: Harness, bucket: str, field: str
) -> None:
    # Through the service: the gateway's own 1 MiB request cap would answer 413 first.
    token = harness.token(team="alpha")
    task_id = _task(harness, token)
    service = build_artifact_service()
    over = b"x" * (MAX_CONTENT_BYTES + 1)
    value = over.decode() if field == "content" else base64.b64encode(over).decode()

    with pytest.raises(InvalidArgument) as refused:
        service.put(BOSS, task_id=task_id, name="big", artifact_type="t", **{field: value})

    assert refused.value.field == field
    assert "5 MiB" in refused.value.message
    assert _objects(bucket) == []
    assert service.list_artifacts(BOSS, ArtifactListInput(task_id=task_id)) == []


def test_exactly_five_mib_is_accepted(aws: Settings, tmp_path: Path) -> None:
    task_id = _local_task(tmp_path)
    data = b"\xff" * MAX_CONTENT_BYTES

    stored = build_artifact_service().put(
        BOSS,
        task_id=task_id,
        name="big",
        artifact_type="t",
        content_base64=base64.b64encode(data).decode(),
    )

    assert stored.size_bytes == MAX_CONTENT_BYTES
    assert (tmp_path / "artifacts" / "alpha" / stored.artifact_id).read_bytes() == data


def test_an_unknown_task_is_a_404_naming_task_id(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")

    error = _error(
        harness.call(
            token,
            "artifact.put",
            {"task_id": "tsk_nope", "name": "x", "artifact_type": "t", "content": "a"},
        )
    )

    assert error["status"] == 404
    assert error["field"] == "task_id"
    assert "tsk_nope" in error["message"]
    assert _objects(bucket) == []


def test_get_of_an_unknown_id_is_null(harness: Harness) -> None:
    token = harness.token(team="alpha")

    got = no_error(harness.call(token, "artifact.get", {"artifact_id": "art_nope"}))

    assert got["artifact"] is None


def test_list_by_task_and_by_workflow_newest_first(harness: Harness, bucket: str) -> None:
    token = harness.token(team="alpha")
    first = _task(harness, token, workflow_id="wf_1")
    second = _task(harness, token, workflow_id="wf_1")
    other = _task(harness, token, workflow_id="wf_2")

    def put(task_id: str, name: str) -> str:
        artifact_id: str = no_error(
            harness.call(
                token,
                "artifact.put",
                {"task_id": task_id, "name": name, "artifact_type": "t", "content": name},
            )
        )["artifact"]["artifact_id"]
        return artifact_id

    a, b, c, d = put(first, "a"), put(first, "b"), put(second, "c"), put(other, "d")

    def names(**filters: str) -> list[str]:
        listed = no_error(harness.call(token, "artifact.list", filters))["artifacts"]
        assert all("content" not in item for item in listed)
        return [item["artifact_id"] for item in listed]

    assert names(task_id=first) == [b, a]
    assert names(workflow_id="wf_1") == [c, b, a]
    assert names(workflow_id="wf_2") == [d]
    assert names(task_id=first, workflow_id="wf_2") == []
    unfiltered = _error(harness.call(token, "artifact.list", {}))
    assert unfiltered["field"] == "task_id"


def test_another_team_can_neither_get_nor_list(harness: Harness, bucket: str) -> None:
    alpha = harness.token(team="alpha")
    beta = harness.token(team="beta")
    task_id = _task(harness, alpha, workflow_id="wf_1")
    artifact_id = no_error(
        harness.call(
            alpha,
            "artifact.put",
            {"task_id": task_id, "name": "secret", "artifact_type": "t", "content": "s"},
        )
    )["artifact"]["artifact_id"]

    got = no_error(harness.call(beta, "artifact.get", {"artifact_id": artifact_id}))
    by_task = no_error(harness.call(beta, "artifact.list", {"task_id": task_id}))
    by_workflow = no_error(harness.call(beta, "artifact.list", {"workflow_id": "wf_1"}))
    put = _error(
        harness.call(
            beta,
            "artifact.put",
            {"task_id": task_id, "name": "x", "artifact_type": "t", "content": "x"},
        )
    )

    assert got["artifact"] is None
    assert by_task["artifacts"] == []
    assert by_workflow["artifacts"] == []
    assert put["status"] == 404


def test_scopes_write_for_put_read_for_get_and_list(harness: Harness, bucket: str) -> None:
    reader = harness.token(team="alpha", scopes=("artifact.read",))

    reply = harness.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "artifact.put",
                "arguments": {"task_id": "t", "name": "x", "artifact_type": "t", "content": "x"},
            },
        },
        reader,
    )

    assert reply.status == 403
    assert no_error(harness.call(reader, "artifact.list", {"task_id": "t"}))["artifacts"] == []
    assert {
        name: load_group(names.GROUP_ORCHESTRATOR).tools[name].annotations.read_only
        for name in ("artifact.put", "artifact.get", "artifact.list")
    } == {"artifact.put": False, "artifact.get": True, "artifact.list": True}


def test_local_mode_with_a_data_dir_keeps_the_bytes_in_a_folder(
    aws: Settings, tmp_path: Path
) -> None:
    task_id = _local_task(tmp_path)

    stored = build_artifact_service().put(
        BOSS, task_id=task_id, name="n", artifact_type="t", content="kept across restarts"
    )
    again = build_artifact_service().get(BOSS, stored.artifact_id, include_content=True)

    path = tmp_path / "artifacts" / "alpha" / stored.artifact_id
    assert stored.storage == str(path)
    assert path.read_text() == "kept across restarts"
    assert again is not None
    assert again.content == "kept across restarts"


# -- The two blob adapters behind one port --------------------------------------------------


@pytest.fixture(params=["s3", "folder"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactBlobs]:
    if request.param == "folder":
        yield FolderArtifactBlobs(tmp_path / "artifacts")
        return
    aws: Settings = request.getfixturevalue("aws")
    client = boto3.client("s3", region_name=aws.region)
    client.create_bucket(Bucket=aws.artifacts_bucket)
    yield S3ArtifactBlobs(client, aws.artifacts_bucket)


def test_blob_adapters_round_trip_bytes_and_refuse_to_overwrite(blobs: ArtifactBlobs) -> None:
    data = b"\x00\x01binary\xff"

    where = blobs.put("alpha", "art_1", data, "application/octet-stream")
    with pytest.raises(BlobExists):
        blobs.put("alpha", "art_1", b"replacement", "application/octet-stream")

    assert where.endswith("artifacts/alpha/art_1")
    assert blobs.get("alpha", "art_1") == data
    with pytest.raises(BlobMissing):
        blobs.get("beta", "art_1")
    with pytest.raises(ValueError, match="unusable team"):
        blobs.put("../beta", "art_2", data, "application/octet-stream")
