"""Memories in DynamoDB: the record under `MEMORY#<id>`, a key alias under `KEY#<key>`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from shared.config.names import TTL_ATTRIBUTE
from shared.dynamo_values import check_item_size, from_dynamo, query_all, to_dynamo
from shared.memory.models import Memory, MemoryFlag
from shared.memory.ports import KeyTaken, MemoryGone

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


def _pk(team: str) -> str:
    return f"TEAM#{team}"


def _memory_sk(memory_id: str) -> str:
    return f"MEMORY#{memory_id}"


def _key_sk(key: str, wallet: str | None = None) -> str:
    # An engram's key is unique per wallet (seed 004), a memory_put key per team: two namespaces.
    return f"ENGRAM#{wallet}#{key}" if wallet is not None else f"KEY#{key}"


def _alias_sk(memory: Memory) -> str:
    assert memory.key is not None
    return _key_sk(memory.key, memory.wallet_address)


def _item(team: str, memory: Memory) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": _pk(team),
        "sk": _memory_sk(memory.id),
        "team": team,
        **to_dynamo(memory.model_dump(mode="json", exclude_none=True), "metadata"),
    }
    if memory.expires_at is not None:
        item[TTL_ATTRIBUTE] = int(memory.expires_at.timestamp())
    check_item_size(item, "content")
    return item


def _memory(item: dict[str, Any]) -> Memory:
    return Memory.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in Memory.model_fields}
    )


class DynamoMemoryStore:
    """`MemoryStore` on the memories table (see `shared.config.tables.MEMORIES`)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._client = table.meta.client

    def get(self, team: str, memory_id: str) -> Memory | None:
        response = self._table.get_item(
            Key={"pk": _pk(team), "sk": _memory_sk(memory_id)}, ConsistentRead=True
        )
        item = response.get("Item")
        return _memory(item) if item else None

    def id_for_key(self, team: str, key: str, wallet: str | None = None) -> str | None:
        response = self._table.get_item(
            Key={"pk": _pk(team), "sk": _key_sk(key, wallet)}, ConsistentRead=True
        )
        item = response.get("Item")
        return str(item["memory_id"]) if item else None

    def create(self, team: str, memory: Memory) -> None:
        puts: list[dict[str, Any]] = [
            {"Put": {"TableName": self._table.name, "Item": _item(team, memory)}}
        ]
        if memory.key is not None:
            alias: dict[str, Any] = {
                "pk": _pk(team),
                "sk": _alias_sk(memory),
                "memory_id": memory.id,
            }
            if memory.expires_at is not None:
                alias[TTL_ATTRIBUTE] = int(memory.expires_at.timestamp())
            puts.append(
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": alias,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        try:
            # The record and its key alias are written together or not at all.
            self._table.meta.client.transact_write_items(TransactItems=puts)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise KeyTaken(memory.key or memory.id) from exc
            raise

    def replace(self, team: str, memory: Memory) -> None:
        try:
            self._table.put_item(
                Item=_item(team, memory), ConditionExpression="attribute_exists(pk)"
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise MemoryGone(memory.id) from exc
            raise
        if memory.key is not None:
            alias: dict[str, Any] = {
                "pk": _pk(team),
                "sk": _alias_sk(memory),
                "memory_id": memory.id,
            }
            if memory.expires_at is not None:
                alias[TTL_ATTRIBUTE] = int(memory.expires_at.timestamp())
            self._table.put_item(Item=alias)

    def delete(self, team: str, memory: Memory) -> None:
        deletes: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": {"pk": _pk(team), "sk": _memory_sk(memory.id)},
                }
            }
        ]
        if memory.key is not None:
            deletes.append(
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": {"pk": _pk(team), "sk": _alias_sk(memory)},
                        # Only drop the alias if it still points at this memory.
                        "ConditionExpression": "memory_id = :id",
                        "ExpressionAttributeValues": {":id": memory.id},
                    }
                }
            )
        try:
            self._table.meta.client.transact_write_items(TransactItems=deletes)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            self._table.delete_item(Key={"pk": _pk(team), "sk": _memory_sk(memory.id)})

    def drop_alias(self, team: str, key: str, wallet: str | None, memory_id: str) -> None:
        try:
            self._table.delete_item(
                Key={"pk": _pk(team), "sk": _key_sk(key, wallet)},
                ConditionExpression="memory_id = :id",
                ExpressionAttributeValues={":id": memory_id},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def add_flag(self, team: str, memory_id: str, flag: MemoryFlag) -> Memory | None:
        try:
            response = self._table.update_item(
                Key={"pk": _pk(team), "sk": _memory_sk(memory_id)},
                UpdateExpression="SET flags = list_append(if_not_exists(flags, :none), :flag)",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={
                    ":none": [],
                    ":flag": [flag.model_dump(mode="json")],
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        return _memory(response["Attributes"])

    def iter_team(self, team: str) -> Iterator[Memory]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(_pk(team)) & Key("sk").begins_with("MEMORY#"),
        }
        for item in query_all(self._table, **kwargs):
            yield _memory(item)
