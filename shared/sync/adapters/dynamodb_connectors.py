"""The team's registered connectors in the sync table: `TEAM#<team>` / `SOURCE#<name>` (the
record's settings in `body`, its last status in `status`) and, per item it last synced,
`TEAM#<team>` / `ITEM#<name>#<item id>` (`item`, `version`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key

from shared.connectors.models import ConnectorRecord, ConnectorStatus
from shared.storage.dynamo import ConditionLost, put_if, query_all, team_pk, update_if
from shared.sync.ports import ConnectorExists

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

_SOURCE = "SOURCE#"
_ITEM = "ITEM#"
# A sort key holds at most 1024 bytes: a longer item id is keyed by its hash (and kept whole in
# `item`).
_LONGEST_KEYED_ID = 900


def _item_sk(name: str, item: str) -> str:
    if len(item.encode()) > _LONGEST_KEYED_ID:
        item = "~" + hashlib.sha256(item.encode()).hexdigest()
    return f"{_ITEM}{name}#{item}"


class DynamoConnectorStore:
    """`ConnectorStore` on the sync table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def _key(self, team: str, name: str) -> dict[str, str]:
        return {"pk": team_pk(team), "sk": _SOURCE + name}

    def add(self, team: str, record: ConnectorRecord, *, replace: bool = False) -> None:
        body = record.model_dump_json(exclude={"status"})
        if replace:
            # Settings only: the status (and cursor) stay with the name.
            self._table.update_item(
                Key=self._key(team, record.name),
                UpdateExpression="SET body = :body, #status = if_not_exists(#status, :status)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":body": body,
                    ":status": record.status.model_dump_json(),
                },
            )
            return
        try:
            put_if(
                self._table,
                {
                    **self._key(team, record.name),
                    "body": body,
                    "status": record.status.model_dump_json(),
                },
                "attribute_not_exists(pk)",
            )
        except ConditionLost as exc:
            raise ConnectorExists(record.name) from exc

    @staticmethod
    def _record(item: Mapping[str, Any]) -> ConnectorRecord:
        record = ConnectorRecord.model_validate_json(str(item["body"]))
        status = ConnectorStatus.model_validate_json(str(item.get("status") or "{}"))
        return record.model_copy(update={"status": status})

    def get(self, team: str, name: str) -> ConnectorRecord | None:
        item = self._table.get_item(Key=self._key(team, name), ConsistentRead=True).get("Item")
        return None if item is None else self._record(item)

    def list(self, team: str) -> list[ConnectorRecord]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with(_SOURCE),
            ConsistentRead=True,
        )
        return [self._record(item) for item in items]

    def remove(self, team: str, name: str) -> bool:
        gone = self._table.delete_item(Key=self._key(team, name), ReturnValues="ALL_OLD")
        self._delete_items(team, name, None)
        return bool(gone.get("Attributes"))

    def record_status(self, team: str, name: str, status: ConnectorStatus) -> bool:
        try:
            update_if(
                self._table,
                self._key(team, name),
                "SET #status = :status",
                "attribute_exists(pk)",
                names={"#status": "status"},
                values={":status": status.model_dump_json()},
            )
        except ConditionLost:
            return False
        return True

    def _item_rows(self, team: str, name: str) -> Iterable[dict[str, Any]]:
        return query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(f"{_ITEM}{name}#"),
            ConsistentRead=True,
        )

    def item_versions(self, team: str, name: str) -> dict[str, str]:
        return {str(row["item"]): str(row["version"]) for row in self._item_rows(team, name)}

    def _delete_items(self, team: str, name: str, items: Iterable[str] | None) -> None:
        keys = (
            [_item_sk(name, item) for item in items]
            if items is not None
            else [str(row["sk"]) for row in self._item_rows(team, name)]
        )
        with self._table.batch_writer() as batch:
            for sort_key in keys:
                batch.delete_item(Key={"pk": team_pk(team), "sk": sort_key})

    def update_item_versions(
        self, team: str, name: str, changed: Mapping[str, str], removed: Iterable[str]
    ) -> None:
        with self._table.batch_writer(overwrite_by_pkeys=["pk", "sk"]) as batch:
            for item, version in changed.items():
                batch.put_item(
                    Item={
                        "pk": team_pk(team),
                        "sk": _item_sk(name, item),
                        "item": item,
                        "version": version,
                    }
                )
        with suppress(ValueError):  # nothing to delete
            self._delete_items(team, name, list(removed))
