"""`TeamData` on DynamoDB: a team's items are those in its partition `TEAM#<team>` or carrying
its `team` attribute (tokens, keyed by their hash, carry it), and its allow-list contexts
(`CONTEXT#<team>#<name>`), in every table cairn owns.

Export and delete scan each table with that filter: a whole-table read, paid once per export or
erasure (rare, administrative), in exchange for covering every store with nothing to forget.
Import puts each item unless its key is there already (`attribute_not_exists(pk)`), so a second
run changes nothing; each item is one atomic put.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from shared.config import names
from shared.storage.dynamo import team_pk
from shared.storage.team_data import TOKEN_KIND, BadRecord, Record, exported_token
from shared.storage.values import from_dynamo, to_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

# Scratch: rate-limit windows (`RATE#…`) and a team's sync lock are not exported.
_SCRATCH_SK = ("RATE", "LOCK")
_TOKEN_SK = "TOKEN"


def _rename(value: Any, old: str, new: str) -> Any:
    """A key attribute moved from team `old` to `new` (`TEAM#old…`, `CONTEXT#old#…`)."""
    if not isinstance(value, str) or old == new:
        return value
    for prefix in (team_pk(old), f"CONTEXT#{old}#"):
        if (
            value == prefix
            or value.startswith(prefix + "#")
            or (prefix.endswith("#") and value.startswith(prefix))
        ):
            return value.replace(old, new, 1)
    return value


def _expired(item: dict[str, Any], now: int) -> bool:
    """Past its TTL but not yet collected: every read already treats it as gone."""
    expiry = item.get(names.TTL_ATTRIBUTE)
    return expiry is not None and int(expiry) <= now


class DynamoTeamData:
    """`TeamData` over the tables of `tables` (logical id → table)."""

    backend = "dynamodb"

    def __init__(self, tables: Mapping[str, Table]) -> None:
        self._tables = dict(tables)

    def _items(self, table: Table, team: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "FilterExpression": Attr("pk").eq(team_pk(team))
            | Attr("team").eq(team)
            # A team's own allow-list contexts carry neither (`CONTEXT#<team>#<name>`).
            | Attr("pk").begins_with(f"CONTEXT#{team}#"),
            "ConsistentRead": True,
        }
        while True:
            page = table.scan(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def export_team(self, team: str) -> Iterator[Record]:
        now = int(time.time())
        for logical, table in sorted(self._tables.items()):
            for item in self._items(table, team):
                sk = str(item.get("sk", ""))
                if sk.startswith(_SCRATCH_SK) or _expired(item, now):
                    continue
                if logical == names.TABLE_TOKENS and sk == _TOKEN_SK:
                    yield exported_token(from_dynamo(item))
                    continue
                yield {"kind": logical, "item": from_dynamo(item)}

    def check_record(self, record: Record) -> None:
        self._item(record, "", "")

    def _item(self, record: Record, team: str, old: str) -> tuple[Table, dict[str, Any]] | None:
        kind = record.get("kind")
        if kind == TOKEN_KIND:
            return None
        if not isinstance(kind, str) or kind not in self._tables:
            raise BadRecord(f"`kind` {kind!r} is no table of this store")
        item = record.get("item")
        if not isinstance(item, dict) or "pk" not in item or "sk" not in item:
            raise BadRecord(f"a {kind} record needs `item`, an object with `pk` and `sk`")
        moved = {k: _rename(v, old, team) for k, v in item.items()}
        if moved.get("team") == old:
            moved["team"] = team
        return self._tables[kind], to_dynamo(moved, "item")

    def import_records(
        self, team: str, records: Sequence[Record], exported_team: str | None = None
    ) -> int:
        old = exported_team or team
        puts = [put for r in records if (put := self._item(r, team, old)) is not None]
        written = 0
        for table, item in puts:
            try:
                table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                continue
            written += 1
        return written

    def delete_team(self, team: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for logical, table in sorted(self._tables.items()):
            keys = [{"pk": i["pk"], "sk": i["sk"]} for i in self._items(table, team)]
            tokens = sum(1 for k in keys if logical == names.TABLE_TOKENS and k["sk"] == _TOKEN_SK)
            with table.batch_writer() as batch:
                for key in keys:
                    batch.delete_item(Key=key)
            if tokens:
                counts[TOKEN_KIND] = tokens
            if len(keys) - tokens:
                counts[logical] = len(keys) - tokens
        return counts
