"""`cairn connectors --stack`: the stack's sync table (moto), found by its output; the same
checks as the local server; remove only with --keep-documents there."""

from __future__ import annotations

import pytest

from shared import runtime
from shared.cli.connectors import ConnectorAdminError, StackConnectors
from shared.config import names
from shared.config.settings import Settings
from shared.sync.adapters.dynamodb_connectors import DynamoConnectorStore
from shared.tools.errors import InvalidArgument
from tests.functional.test_cli_stack import _cloudformation

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
        with pytest.raises(ConnectorAdminError, match="--keep-documents"):
            admin.remove("acme", "docs", keep_documents=False)
        removed = admin.remove("acme", "docs", keep_documents=True)
        import boto3

        store = DynamoConnectorStore(boto3.resource("dynamodb").Table(aws.table(names.TABLE_SYNC)))
    finally:
        runtime.configure(Settings())

    assert added["name"] == "docs"
    assert added["settings"]["url"] == "https://git.example.com/handbook.git"
    assert [r["name"] for r in listed] == ["docs"]
    assert removed["removed"] is True
    assert store.list("acme") == []
