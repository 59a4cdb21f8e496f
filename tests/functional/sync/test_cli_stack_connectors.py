"""`cairn connectors --stack`: the stack's sync table (moto), found by its output; the same
checks as the local server; remove with --keep-documents forgets the connector alone, and
without it the stack's sync runner removes the connector, its schedule and its documents."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from shared import runtime
from shared.app.sync_service import build_sync_service
from shared.auth.wiring import build_token_store
from shared.cli.connectors import ConnectorAdminError, StackConnectors
from shared.config import names
from shared.config.settings import Settings
from shared.sync.adapters.dynamodb_connectors import DynamoConnectorStore
from shared.sync.runner import run_event
from shared.tools.errors import InvalidArgument
from tests.functional.conftest import Harness, no_error
from tests.functional.sync.conftest import guide_repo, scheduled_docs
from tests.functional.test_cli_stack import _cloudformation
from tests.functional.test_sync_runs import _Capture
from tests.functional.test_sync_schedules import GROUP, ROLE, RUNNER

STACK = "cairn-dev-tester"


def test_add_list_and_remove_write_the_stacks_sync_table(aws: Settings) -> None:
    outputs = {names.Outputs.SYNC_TABLE: aws.table(names.TABLE_SYNC)}
    admin = StackConnectors(STACK, cloudformation=_cloudformation(STACK, outputs))
    try:
        added = admin.add(
            {
                "team": "acme",
                "name": "docs",
                "kind": "git",
                "config": {"url": "https://git.example.com/handbook.git", "branch": "main"},
                "replace": False,
            }
        )
        listed = admin.list("acme")
        with pytest.raises(InvalidArgument, match="local mode only"):
            admin.add(
                {
                    "team": "acme",
                    "name": "v",
                    "kind": "obsidian",
                    "config": {"path": "/x"},
                    "replace": False,
                }
            )
        with pytest.raises(ConnectorAdminError, match="SyncRunnerArn"):
            admin.remove("acme", "docs", keep_documents=False)  # no runner to remove them
        removed = admin.remove("acme", "docs", keep_documents=True)

        store = DynamoConnectorStore(boto3.resource("dynamodb").Table(aws.table(names.TABLE_SYNC)))
    finally:
        runtime.configure(Settings())

    assert added["name"] == "docs"
    assert added["settings"]["url"] == "https://git.example.com/handbook.git"
    assert [r["name"] for r in listed] == ["docs"]
    assert removed["removed"] is True
    assert store.list("acme") == []


def _lambda(invoked: list[dict[str, Any]], *, fails: bool = False) -> Any:
    """The Lambda API answering the asynchronous invoke (202), keeping its event."""
    client = boto3.client("lambda", region_name="us-east-1")
    stubber = Stubber(client)
    params = {"FunctionName": RUNNER, "InvocationType": "Event", "Payload": _Capture(invoked)}
    if fails:
        stubber.add_client_error("invoke", "ServiceException", expected_params=params)
    else:
        payload = StreamingBody(io.BytesIO(b""), 0)
        stubber.add_response("invoke", {"StatusCode": 202, "Payload": payload}, params)
    stubber.activate()
    return client


def test_remove_on_a_stack_has_its_sync_runner_remove_the_documents_and_schedule(
    in_aws: Harness, bucket: str, tmp_path: Path
) -> None:
    repo = guide_repo(tmp_path / "repo")
    build_sync_service().connector_add("alpha", name="docs", kind="git", config={"url": repo.url})
    build_sync_service().connector_add("alpha", name="keep", kind="git", config={"url": repo.url})
    alpha = in_aws.token(team="alpha")
    no_error(in_aws.call(alpha, "sync", {}))
    no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "1h", "source": "docs"}))
    deployed = runtime.settings()
    outputs = {
        names.Outputs.SYNC_TABLE: deployed.table(names.TABLE_SYNC),
        names.Outputs.SYNC_RUNNER_ARN: RUNNER,
    }
    invoked: list[dict[str, Any]] = []

    def admin(lambda_client: Any) -> StackConnectors:
        cloudformation = _cloudformation(STACK, outputs)
        return StackConnectors(STACK, cloudformation=cloudformation, lambda_client=lambda_client)

    with pytest.raises(ConnectorAdminError, match="nothing was removed"):
        admin(_lambda([], fails=True)).remove("alpha", "docs", keep_documents=False)
    with pytest.raises(ConnectorAdminError, match="no connector 'nope'"):
        admin(_lambda([])).remove("alpha", "nope", keep_documents=False)
    answer = admin(_lambda(invoked)).remove("alpha", "docs", keep_documents=False)
    runtime.configure(deployed)  # the stack's runner, as deployed, receives the event
    (event,) = invoked
    tokens = build_token_store()
    done = run_event(
        event, sync=build_sync_service(), team_exists=lambda t: bool(tokens.list_team(t))
    )

    assert answer["removing"] is True
    assert event == {"run": {"team": "alpha", "run_id": answer["run_id"]}}
    assert done["state"] == "succeeded"
    assert done["documents_removed"] == 1
    runs = no_error(in_aws.call(alpha, "sync_status", {}))["runs"]
    assert [(r["kind"], r["source"], r["state"]) for r in runs[:2]] == [
        ("remove_connector", "docs", "succeeded"),
        ("remove_connector", "docs", "failed"),  # the start that failed changed nothing
    ]
    found = no_error(in_aws.call(alpha, "search", {"query": "lighthouse tides"}))["results"]
    assert [r["source"] for r in found] == ["keep"]
    assert [c.name for c in build_sync_service().connector_list("alpha")] == ["keep"]
    assert "connectors" not in no_error(in_aws.call(alpha, "sync_schedule_get", {}))
    repo.close()


def test_remove_keeping_documents_on_a_stack_still_deletes_the_connectors_schedule(
    in_aws: Harness, tmp_path: Path
) -> None:
    repo, alpha = scheduled_docs(in_aws, tmp_path / "repo")
    no_error(in_aws.call(alpha, "sync_schedule_set", {"every": "2h"}))
    deployed = runtime.settings()
    outputs = {
        names.Outputs.SYNC_TABLE: deployed.table(names.TABLE_SYNC),
        names.Outputs.SYNC_RUNNER_ARN: RUNNER,
        names.Outputs.SYNC_SCHEDULE_GROUP: GROUP,
        names.Outputs.SYNC_SCHEDULER_ROLE_ARN: ROLE,
    }
    admin = StackConnectors(STACK, cloudformation=_cloudformation(STACK, outputs))

    removed = admin.remove("alpha", "docs", keep_documents=True)

    assert removed["removed"] is True
    listed = boto3.client("scheduler").list_schedules(GroupName=GROUP)["Schedules"]
    assert [s["Name"] for s in listed] == ["sync-alpha"]  # the team's own stays
    repo.close()
