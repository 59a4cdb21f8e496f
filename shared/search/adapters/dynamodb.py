"""The documents table: entities and chunks, the source of truth the index is derived from.

Keys: `pk = TEAM#<team>`; `sk = ENTITY#<entity_id>` for an entity and
`sk = CHUNK#<entity_id>#<index:05d>` for its chunks, so one entity's chunks are one
contiguous, ordered key range (a single Query reads them, or any window of them).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.config.names import TTL_ATTRIBUTE
from shared.search.models import ChunkItem, EntityItem

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

# A deleted entity's tombstone lingers this long (so connectors see the deletion), then TTL
# collects it.
TOMBSTONE_SECONDS = 30 * 24 * 3600


def team_pk(team: str) -> str:
    return f"TEAM#{team}"


def entity_sk(entity_id: str) -> str:
    return f"ENTITY#{entity_id}"


def chunk_sk(entity_id: str, index: int) -> str:
    """Zero-padded so chunks sort in order.

    >>> chunk_sk("abc", 2)
    'CHUNK#abc#00002'
    """
    return f"CHUNK#{entity_id}#{index:05d}"


_ITEM_KEYS = ("pk", "sk", TTL_ATTRIBUTE)


def _strip(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in item.items() if k not in _ITEM_KEYS}


def _plain(value: Any) -> Any:
    # boto3 returns numbers as Decimal; the models want int.
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value)
    return value


class DynamoDocumentStore:
    """`DocumentStore` on the documents table (boto3 resource `Table` injected)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def get_entity(self, team: str, entity_id: str) -> EntityItem | None:
        """The entity item (tombstones included), or None."""
        response = self._table.get_item(Key={"pk": team_pk(team), "sk": entity_sk(entity_id)})
        item = response.get("Item")
        return EntityItem.model_validate(_strip(dict(item))) if item else None

    def put_entity(self, team: str, entity: EntityItem, chunks: Sequence[ChunkItem]) -> None:
        """Write the entity and its chunks; chunks beyond the new count are removed."""
        pk = team_pk(team)
        previous = self.get_entity(team, entity.id)
        with self._table.batch_writer() as batch:
            for chunk in chunks:
                batch.put_item(
                    Item={
                        "pk": pk,
                        "sk": chunk_sk(entity.id, chunk.chunk_index),
                        **chunk.model_dump(exclude_none=True),
                    }
                )
            if previous is not None:
                for index in range(len(chunks), previous.chunk_count):
                    batch.delete_item(Key={"pk": pk, "sk": chunk_sk(entity.id, index)})
        # The entity goes last: a reader that sees the new entity also sees all its chunks.
        self._table.put_item(
            Item={"pk": pk, "sk": entity_sk(entity.id), **entity.model_dump(exclude_none=True)}
        )

    def chunks(self, team: str, entity_id: str) -> list[ChunkItem]:
        """Every chunk of the entity, in order."""
        return self._query_chunks(
            Key("pk").eq(team_pk(team)) & Key("sk").begins_with(f"CHUNK#{entity_id}#")
        )

    def chunk_range(self, team: str, entity_id: str, first: int, last: int) -> list[ChunkItem]:
        """Chunks `first..last` inclusive (out-of-range indexes are simply absent)."""
        first = max(first, 0)
        if last < first:
            return []
        return self._query_chunks(
            Key("pk").eq(team_pk(team))
            & Key("sk").between(chunk_sk(entity_id, first), chunk_sk(entity_id, last))
        )

    def _query_chunks(self, condition: Any) -> list[ChunkItem]:
        items: list[ChunkItem] = []
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition}
        while True:
            response = self._table.query(**kwargs)
            items.extend(ChunkItem.model_validate(_strip(dict(i))) for i in response["Items"])
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def mark_deleted(self, team: str, entity_id: str, when: str) -> None:
        """Tombstone the entity (TTL collects it later) and delete its chunks."""
        entity = self.get_entity(team, entity_id)
        if entity is None:
            return
        pk = team_pk(team)
        with self._table.batch_writer() as batch:
            for index in range(entity.chunk_count):
                batch.delete_item(Key={"pk": pk, "sk": chunk_sk(entity_id, index)})
        tombstone = entity.model_copy(
            update={"deleted": True, "chunk_count": 0, "updated_at": when}
        )
        self._table.put_item(
            Item={
                "pk": pk,
                "sk": entity_sk(entity_id),
                **tombstone.model_dump(exclude_none=True),
                TTL_ATTRIBUTE: int(time.time()) + TOMBSTONE_SECONDS,
            }
        )

    def iter_entities(self, team: str, source: str | None = None) -> Iterator[EntityItem]:
        """Live entities of `team` (optionally of one `source`), in id order."""
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(team_pk(team)) & Key("sk").begins_with("ENTITY#")
        }
        condition: Any = Attr("deleted").ne(True)
        if source is not None:
            condition = condition & Attr("source").eq(source)
        kwargs["FilterExpression"] = condition
        while True:
            response = self._table.query(**kwargs)
            for item in response["Items"]:
                yield EntityItem.model_validate(_strip(dict(item)))
            if "LastEvaluatedKey" not in response:
                return
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
