"""The documents table: entities and chunks, the source of truth the index is derived from.

Keys: `pk = TEAM#<team>`; `sk = ENTITY#<entity_id>` for an entity and
`sk = CHUNK#<entity_id>#<index:05d>` for its chunks, so one entity's chunks are one
contiguous, ordered key range (a single Query reads them, or any window of them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.config.names import TTL_ATTRIBUTE
from shared.search.models import ChunkItem, EntityItem
from shared.storage.dynamo import query_all, team_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

# A deleted entity's tombstone lingers this long (so connectors see the deletion), then TTL
# collects it.
TOMBSTONE_SECONDS = 30 * 24 * 3600

ENTITY_PREFIX = "ENTITY#"
CHUNK_PREFIX = "CHUNK#"


def entity_sk(entity_id: str) -> str:
    return f"{ENTITY_PREFIX}{entity_id}"


def chunk_sk(entity_id: str, index: int) -> str:
    """Zero-padded so chunks sort in order.

    >>> chunk_sk("abc", 2)
    'CHUNK#abc#00002'
    """
    return f"{CHUNK_PREFIX}{entity_id}#{index:05d}"


_ITEM_KEYS = ("pk", "sk", TTL_ATTRIBUTE)


def _strip(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in item.items() if k not in _ITEM_KEYS}


def _plain(value: Any) -> Any:
    # boto3 returns numbers as Decimal; the models want int.
    if isinstance(value, Decimal):
        return int(value)
    return value


def tombstone_expired(item: dict[str, Any], now: float) -> bool:
    """Whether a tombstone's TTL has passed (DynamoDB deletes expired items only eventually,
    so reads check it themselves)."""
    expires = item.get(TTL_ATTRIBUTE)
    return expires is not None and int(expires) <= now


class DynamoDocumentStore:
    """`DocumentStore` on the documents table (boto3 resource `Table` injected).

    `clock` (seconds since the epoch) dates tombstones and decides their expiry.
    """

    def __init__(self, table: Table, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._clock = clock

    def get_entity(self, team: str, entity_id: str) -> EntityItem | None:
        """The entity item (tombstones included until they expire), or None."""
        response = self._table.get_item(Key={"pk": team_pk(team), "sk": entity_sk(entity_id)})
        item = response.get("Item")
        if not item or tombstone_expired(dict(item), self._clock()):
            return None
        return EntityItem.model_validate(_strip(dict(item)))

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
            Key("pk").eq(team_pk(team)) & Key("sk").begins_with(f"{CHUNK_PREFIX}{entity_id}#")
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
        return [
            ChunkItem.model_validate(_strip(dict(item)))
            for item in query_all(self._table, KeyConditionExpression=condition)
        ]

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
                TTL_ATTRIBUTE: int(self._clock()) + TOMBSTONE_SECONDS,
            }
        )

    def iter_entities(self, team: str, source: str | None = None) -> Iterator[EntityItem]:
        """Live entities of `team` (optionally of one `source`), in id order."""
        condition: Any = Attr("deleted").ne(True)
        if source is not None:
            condition = condition & Attr("source").eq(source)
        for item in query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(ENTITY_PREFIX),
            FilterExpression=condition,
        ):
            yield EntityItem.model_validate(_strip(dict(item)))
