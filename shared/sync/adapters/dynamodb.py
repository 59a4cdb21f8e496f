"""Connector state and the sync lock in the sync table (`TEAM#<team>` / `LOCK#sync`,
`TEAM#<team>` / `CONNECTOR#<source>`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from shared.config.names import TTL_ATTRIBUTE
from shared.dynamo_values import query_all

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

_LOCK_SK = "LOCK#sync"


def _pk(team: str) -> str:
    return f"TEAM#{team}"


class DynamoSyncState:
    """`SyncState` on the sync table. The lock is a lease: an expired one can be taken over."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def acquire_lock(self, team: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        expires = int(now.timestamp()) + lease_seconds
        try:
            self._table.put_item(
                Item={
                    "pk": _pk(team),
                    "sk": _LOCK_SK,
                    "holder": holder,
                    "lease_expires": expires,
                    # DynamoDB TTL only collects a lock a crashed sync never released.
                    TTL_ATTRIBUTE: expires + 3_600,
                },
                ConditionExpression="attribute_not_exists(pk) OR lease_expires < :now",
                ExpressionAttributeValues={":now": int(now.timestamp())},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def release_lock(self, team: str, holder: str) -> None:
        try:
            self._table.delete_item(
                Key={"pk": _pk(team), "sk": _LOCK_SK},
                ConditionExpression="holder = :me",  # never release a lock taken over meanwhile
                ExpressionAttributeValues={":me": holder},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def record_sync(self, team: str, source: str, finished_at: datetime) -> None:
        self._table.put_item(
            Item={
                "pk": _pk(team),
                "sk": f"CONNECTOR#{source}",
                "source": source,
                "last_sync": finished_at.isoformat(),
            }
        )

    def last_syncs(self, team: str) -> dict[str, datetime]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(_pk(team)) & Key("sk").begins_with("CONNECTOR#"),
        )
        return {
            str(item["source"]): datetime.fromisoformat(str(item["last_sync"])) for item in items
        }
