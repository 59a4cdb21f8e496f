"""Review findings, pinned: input DynamoDB cannot store is a field error, never a 500; dangling
aliases heal; the curator absorbs only what `remember` wrote."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from shared.config import names
from shared.config.settings import Settings
from tests.functional.conftest import Harness
from tests.jsonrpc import tools_call
from tests.unit.test_handoff_sections import VALID


def _error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    error: dict[str, Any] = result["error"]
    return error


def test_float_metadata_is_stored_and_read_back(harness: Harness) -> None:
    token = harness.token()

    put = harness.call(
        token, "memory_put", {"key": "k", "content": "c", "metadata": {"confidence": 0.9, "n": 3}}
    )
    got = harness.call(token, "memory_get", {"key": "k"})

    assert put["isError"] is False
    assert got["memory"]["metadata"] == {"confidence": 0.9, "n": 3}


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("event.publish", {"event_type": "x", "payload": {"x": 10**40}}, "payload"),
        ("event.publish", {"event_type": "x", "payload": {"x": 1e200}}, "payload"),
        ("task.create", {"name": "t", "input_data": {"x": 1e-200}}, "input_data"),
        ("memory_put", {"key": "k", "content": "c", "metadata": {"x": 1e300}}, "metadata"),
    ],
)
def test_numbers_dynamodb_cannot_store_are_field_errors(
    harness: Harness, tool: str, arguments: dict[str, Any], field: str
) -> None:
    assert _error(harness.call(harness.token(), tool, arguments))["field"] == field


def test_cost_counts_are_bounded(harness: Harness) -> None:
    token = harness.token(agent_id="a1")
    result = harness.call(
        token,
        "cost.report",
        {"agent_id": "a1", "model": "m", "provider": "p", "tokens_input": 10**40},
    )
    assert _error(result)["field"] == "tokens_input"


def test_keys_over_dynamodbs_byte_limit_are_field_errors(harness: Harness) -> None:
    token = harness.token()
    emoji_key = "😀" * 300  # 300 characters, 1,200 bytes

    put = harness.call(token, "memory_put", {"key": emoji_key, "content": "c"})
    got = harness.call(token, "memory_get", {"key": emoji_key})

    assert _error(put)["field"] == "key"
    assert _error(got)["field"] == "key"


def test_a_wallet_with_a_separator_is_refused(harness: Harness) -> None:
    result = harness.call(
        harness.token(),
        "engram_create",
        {"wallet_address": "alice#evil", "engram_type": "knowledge", "key": "k", "content": "{}"},
    )
    assert _error(result)["field"] == "wallet_address"


def test_records_over_the_item_limit_are_field_errors_and_nothing_is_written(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token()
    # ~570 KB of UTF-8 under the character limits.
    document = VALID + "字" * 190_000
    memory = "😀" * 100_000

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        # Sent as UTF-8 (not \u escapes), as a client would, to stay under the 1 MiB body cap.
        message = tools_call(tool, arguments)
        reply = harness.post(json.dumps(message, ensure_ascii=False).encode(), token)
        assert reply.status == 200, reply.body
        assert reply.body is not None
        result: dict[str, Any] = reply.body["result"]
        return result

    handoff = call("store_handoff", {"title": "t", "document_md": document})
    put = call("memory_put", {"key": "big", "content": memory})

    assert _error(handoff)["field"] == "document_md"
    assert _error(put)["field"] == "content"
    for table in (names.TABLE_HANDOFFS, names.TABLE_MEMORIES):
        assert boto3.resource("dynamodb").Table(aws.table(table)).scan()["Items"] == []


def test_a_dangling_key_alias_heals_instead_of_blocking_the_key(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha")
    first = harness.call(token, "memory_put", {"key": "k", "content": "v1"})["memory"]
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_MEMORIES))
    # DynamoDB TTL removes a record and its alias independently: the record first, here.
    table.delete_item(Key={"pk": "TEAM#alpha", "sk": f"MEMORY#{first['id']}"})

    again = harness.call(token, "memory_put", {"key": "k", "content": "v2"})

    assert again["isError"] is False
    assert harness.call(token, "memory_get", {"key": "k"})["memory"]["content"] == "v2"


def test_the_curator_never_absorbs_an_engram_or_a_keyed_memory(
    harness: Harness, aws: Settings
) -> None:
    token = harness.token(team="alpha")
    body = json.dumps({"fact": "deploys freeze on fridays"})
    engram = harness.call(
        token,
        "engram_create",
        {"wallet_address": "0xa", "key": "policy", "engram_type": "knowledge", "content": body},
    )
    keyed = harness.call(token, "memory_put", {"key": "freeze", "content": "Deploys freeze."})

    harness.call(token, "remember", {"title": "policy", "body": body, "tags": ["ops"]})
    harness.call(token, "remember", {"title": "freeze", "body": "Deploys freeze."})

    kept_engram = harness.call(token, "memory_get", {"id": engram["engram"]["id"]})["memory"]
    kept_keyed = harness.call(token, "memory_get", {"key": "freeze"})["memory"]
    assert kept_engram["tags"] == []
    assert "merged_from" not in kept_engram
    assert "merged_from" not in kept_keyed
    assert kept_keyed["id"] == keyed["memory"]["id"]
    records = [
        i
        for i in boto3.resource("dynamodb").Table(aws.table(names.TABLE_MEMORIES)).scan()["Items"]
        if str(i["sk"]).startswith("MEMORY#")
    ]
    assert len(records) == 4


def test_sync_immediately_needs_the_sync_scope_but_the_file_is_kept(
    harness: Harness, aws: Settings
) -> None:
    boto3.client("s3", region_name=aws.region).create_bucket(Bucket=aws.artifacts_bucket)
    ingest_only = harness.token(team="alpha", scopes=("ingest",))
    both = harness.token(team="alpha", scopes=("ingest", "sync", "search"))

    refused = harness.call(ingest_only, "inbox_put", {"content": "x", "sync_immediately": True})
    done = harness.call(both, "inbox_put", {"content": "kiln notes", "sync_immediately": True})

    assert _error(refused)["field"] == "sync_immediately"
    assert "indexed at the next sync" in _error(refused)["message"]
    assert done["synced"] is True
    stored = boto3.client("s3").list_objects_v2(Bucket=aws.artifacts_bucket)["KeyCount"]
    assert stored == 2


def test_a_poll_since_the_far_future_is_empty_not_an_error(harness: Harness) -> None:
    token = harness.token()
    harness.call(token, "event.publish", {"event_type": "x", "payload": {}})

    result = harness.call(token, "event.poll", {"since": "9999-12-31T23:59:59-05:00"})

    assert result["isError"] is False
    assert result["events"] == []


def test_engram_search_filters_by_query_text(harness: Harness) -> None:
    token = harness.token()
    for key, content in (("risk", '{"level": "high"}'), ("chains", '["solana"]')):
        harness.call(
            token,
            "engram_create",
            {"wallet_address": "0xa", "key": key, "engram_type": "preference", "content": content},
        )

    found = harness.call(token, "engram_search", {"query": "SOLANA"})["engrams"]

    assert [e["key"] for e in found] == ["chains"]
