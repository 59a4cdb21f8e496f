"""Memories in DynamoDB: the record under `MEMORY#<id>`, a key alias under `KEY#<key>` (a
`memory_put` key, unique per team) or `ENGRAM#<wallet>#<key>` (an engram key, unique per wallet).

The alias carries a copy of its active memory's record beside `memory_id`, so `memory_get` by
key is one GetItem. Every write of a keyed memory writes its alias in the same transaction: the
new copy while the memory is active and the alias names it (or none exists), a delete of the
alias when it leaves the active states. When the alias names another memory that half is
dropped and the record is written alone. An alias written before aliases carried their record
(only `memory_id`) is still read, with a second GetItem, until its memory's next write.

A memory with `expires_at` carries the TTL attribute, and so does its alias. DynamoDB's TTL
collects items hours to days late, so expiry is decided at read time: an expired record is
never returned by `get`, an expired alias never by `id_for_key`, and `create` takes over an
expired alias (the old record is left to TTL).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from shared.config.names import TTL_ATTRIBUTE
from shared.domain_events.adapters.outbox import DynamoOutbox
from shared.domain_events.models import DomainEvent
from shared.memory.models import Finding, Memory, MemoryFlag
from shared.memory.ports import KeyTaken, MemoryGone, MemoryPinned, StateChanged
from shared.storage.dynamo import (
    ConditionLost,
    batch_get,
    delete_if,
    put_if,
    query_all,
    team_pk,
    update_if,
)
from shared.storage.values import check_item_size, from_dynamo, to_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

MEMORY_PREFIX = "MEMORY#"
KEY_PREFIX = "KEY#"
ENGRAM_PREFIX = "ENGRAM#"
FINDING_PREFIX = "FINDING#"


def _memory_sk(memory_id: str) -> str:
    return MEMORY_PREFIX + memory_id


def _key_sk(key: str, wallet: str | None = None) -> str:
    # An engram's key is unique per wallet (seed 004), a memory_put key per team: two namespaces.
    return f"{ENGRAM_PREFIX}{wallet}#{key}" if wallet is not None else KEY_PREFIX + key


def _alias_sk(memory: Memory) -> str:
    assert memory.key is not None
    return _key_sk(memory.key, memory.wallet_address)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _now_epoch() -> int:
    return _epoch(datetime.now(UTC))


def _item(team: str, memory: Memory) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": team_pk(team),
        "sk": _memory_sk(memory.id),
        "team": team,
        **to_dynamo(memory.model_dump(mode="json", exclude_none=True), "metadata"),
    }
    if memory.expires_at is not None:
        item[TTL_ATTRIBUTE] = _epoch(memory.expires_at)
    check_item_size(item, "content")
    return item


def _alias(team: str, memory: Memory) -> dict[str, Any]:
    """The key's alias: names the memory and carries its record (see the module docstring)."""
    alias = {**_item(team, memory), "sk": _alias_sk(memory), "memory_id": memory.id}
    check_item_size(alias, "content")
    return alias


def _memory(item: dict[str, Any]) -> Memory:
    return Memory.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in Memory.model_fields}
    )


def _alias_expired(alias: dict[str, Any]) -> bool:
    # The TTL attribute is whole seconds (rounded down): "expired" once a whole second has
    # passed it, the same test `create`'s condition makes, so reads and writes agree.
    ttl = alias.get(TTL_ATTRIBUTE)
    return ttl is not None and int(ttl) < _now_epoch()


def _cancellations(exc: ClientError) -> list[str]:
    """Per item of a cancelled transaction, why: `None` (fine) or `ConditionalCheckFailed` ..."""
    if exc.response["Error"]["Code"] != "TransactionCanceledException":
        raise exc
    reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return [str(reason.get("Code", "None")) for reason in reasons]


def _status_condition(expected: frozenset[str]) -> tuple[str, dict[str, Any]]:
    """`ConditionExpression` and values: the stored status is one of `expected`. A filed
    record carries no `status` attribute (the JSON leaves the default out)."""
    values = {f":s{n}": status for n, status in enumerate(sorted(expected))}
    clauses = [f"#status IN ({', '.join(values)})"] if values else []
    if "filed" in expected:
        clauses.append("attribute_not_exists(#status)")
    return f"attribute_exists(pk) AND ({' OR '.join(clauses)})", values


def _pin_condition(memory: Memory) -> tuple[str, dict[str, Any]]:
    """`ConditionExpression` and values: the stored pin is the one `memory` carries (`pinned`
    is stored only while true)."""
    if memory.pinned:
        return "pinned = :pinned", {":pinned": True}
    return "(attribute_not_exists(pinned) OR pinned = :pinned)", {":pinned": False}


# How often a whole-record write re-reads and retries after a pin changed under it.
PIN_RETRIES = 5


def _team_items(table: Table, team: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Every item of the team whose sort key starts with `prefix` (memories, findings)."""
    condition = Key("pk").eq(team_pk(team)) & Key("sk").begins_with(prefix)
    return query_all(table, KeyConditionExpression=condition)


class DynamoMemoryStore:
    """`MemoryStore` on the memories table (see `shared.config.tables.MEMORIES`)."""

    def __init__(self, table: Table, outbox: DynamoOutbox | None = None) -> None:
        self._table = table
        # Where a change's domain events go (the coordination table's log); only the
        # writes given events need it.
        self._outbox = outbox

    def get(self, team: str, memory_id: str) -> Memory | None:
        response = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _memory_sk(memory_id)}, ConsistentRead=True
        )
        item = response.get("Item")
        if not item:
            return None
        memory = _memory(item)
        return None if memory.is_expired(datetime.now(UTC)) else memory

    def get_many(self, team: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        keys = [{"pk": team_pk(team), "sk": _memory_sk(memory_id)} for memory_id in memory_ids]
        now = datetime.now(UTC)
        memories = (_memory(item) for item in batch_get(self._table, keys))
        return {memory.id: memory for memory in memories if not memory.is_expired(now)}

    def id_for_key(self, team: str, key: str, wallet: str | None = None) -> str | None:
        response = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _key_sk(key, wallet)}, ConsistentRead=True
        )
        item = response.get("Item")
        if not item or _alias_expired(item):
            return None
        return str(item["memory_id"])

    def get_by_key(self, team: str, key: str, wallet: str | None = None) -> Memory | None:
        alias = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _key_sk(key, wallet)}, ConsistentRead=True
        ).get("Item")
        if not alias or _alias_expired(alias):
            return None
        if "id" not in alias:
            # Written before aliases carried the record: read it by id, once more.
            stored = self.get(team, str(alias["memory_id"]))
            if stored is None:  # the record went (TTL, a raced delete): a dangling alias
                self.drop_alias(team, key, wallet, str(alias["memory_id"]))
            return stored
        memory = _memory(alias)
        return None if memory.is_expired(datetime.now(UTC)) else memory

    def create(self, team: str, memory: Memory, *, events: Sequence[DomainEvent] = ()) -> None:
        puts: list[dict[str, Any]] = [
            {"Put": {"TableName": self._table.name, "Item": _item(team, memory)}}
        ]
        if memory.key is not None:
            puts.append(
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": _alias(team, memory),
                        # Free, or held by an expired memory TTL has not collected yet.
                        "ConditionExpression": "attribute_not_exists(pk) OR #ttl < :now",
                        "ExpressionAttributeNames": {"#ttl": TTL_ATTRIBUTE},
                        "ExpressionAttributeValues": {":now": _now_epoch()},
                    }
                }
            )
        if events:
            # The outbox: the events are in the log exactly when the memory is stored.
            puts += _outbox(self._outbox).items(team, events)
        try:
            # The record and its key alias are written together or not at all.
            self._table.meta.client.transact_write_items(TransactItems=puts)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise KeyTaken(memory.key or memory.id) from exc
            raise

    def load(self, team: str, memories: Iterable[Memory]) -> None:
        """Write `memories` and their key aliases into a table that holds none of them, without
        conditions or events (`BatchWriteItem`, 25 items a request): for filling a table (the
        store bench's moto reference). `create` is a transaction a memory, and moto copies
        every table a transaction touches, which made seeding 1,000 memories take minutes and
        gigabytes."""
        with self._table.batch_writer() as batch:
            for memory in memories:
                batch.put_item(Item=_item(team, memory))
                if memory.key is not None:
                    batch.put_item(Item=_alias(team, memory))

    def _alias_write(self, team: str, memory: Memory) -> dict[str, Any]:
        """The alias's half of a write of keyed `memory`: while it is active, the alias gets its
        new copy (when the alias names it, or is missing); else the alias goes (when it names
        it). A key that moved on to another memory is left alone (`_transact` drops the half)."""
        if memory.active:
            return {
                "Put": {
                    "TableName": self._table.name,
                    "Item": _alias(team, memory),
                    "ConditionExpression": "attribute_not_exists(pk) OR memory_id = :id",
                    "ExpressionAttributeValues": {":id": memory.id},
                }
            }
        return {
            "Delete": {
                "TableName": self._table.name,
                "Key": {"pk": team_pk(team), "sk": _alias_sk(memory)},
                "ConditionExpression": "memory_id = :id",
                "ExpressionAttributeValues": {":id": memory.id},
            }
        }

    def _alias_copy_update(
        self, team: str, memory: Memory, expression: str, values: dict[str, Any]
    ) -> dict[str, Any]:
        """The same `expression` applied to the copy of `memory`'s record on its key alias, as
        one `TransactWriteItems` element: only an alias carrying this record (an old one reads
        it by id; one naming another memory, or gone with a retraction, is left alone)."""
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": {"pk": team_pk(team), "sk": _alias_sk(memory)},
                "UpdateExpression": expression,
                "ConditionExpression": "memory_id = :id AND attribute_exists(#id)",
                "ExpressionAttributeNames": {"#id": "id"},
                "ExpressionAttributeValues": {**values, ":id": memory.id},
            }
        }

    def _transact(self, required: list[dict[str, Any]], optional: list[dict[str, Any]]) -> bool:
        """One transaction of `required` and `optional` writes; an optional write whose
        condition fails is left out and the rest retried. False when a required write's
        condition failed (nothing written)."""
        while True:
            try:
                self._table.meta.client.transact_write_items(
                    TransactItems=[*required, *optional]  # type: ignore[list-item]
                )
            except ClientError as exc:
                reasons = _cancellations(exc)
                failed = {n for n, code in enumerate(reasons) if code == "ConditionalCheckFailed"}
                if not failed or any(n < len(required) for n in failed):
                    if failed:
                        return False
                    raise  # a conflict with another transaction, a throttle ...
                optional = [w for n, w in enumerate(optional, len(required)) if n not in failed]
                continue
            return True

    def set_pinned(self, team: str, memory_id: str, pinned: bool) -> Memory:
        # Only the pin changes, on the record and on the alias's copy in one transaction:
        # content written since the caller's read is kept. `pinned` is stored only while true.
        expression = "SET pinned = :pinned" if pinned else "REMOVE pinned"
        values: dict[str, Any] = {":pinned": True} if pinned else {}
        record: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": {"pk": team_pk(team), "sk": _memory_sk(memory_id)},
            "UpdateExpression": expression,
            "ConditionExpression": "attribute_exists(pk)",
        }
        if values:
            record["ExpressionAttributeValues"] = values
        current = self._stored(team, memory_id)
        if current is None:
            raise MemoryGone(memory_id)
        alias: list[dict[str, Any]] = []
        if current.key is not None:
            alias.append(self._alias_copy_update(team, current, expression, values))
        if not self._transact([{"Update": record}], alias):
            raise MemoryGone(memory_id)
        stored = self._stored(team, memory_id)
        if stored is None:  # deleted right after the pin
            raise MemoryGone(memory_id)
        return stored

    def delete(self, team: str, memory: Memory, *, unless_pinned: bool = False) -> None:
        key = {"pk": team_pk(team), "sk": _memory_sk(memory.id)}
        record: dict[str, Any] = {"TableName": self._table.name, "Key": key}
        if unless_pinned:  # `pinned` is stored only while true
            record["ConditionExpression"] = "attribute_not_exists(pinned) OR pinned = :false"
            record["ExpressionAttributeValues"] = {":false": False}
        alias: list[dict[str, Any]] = []
        if memory.key is not None:
            alias.append(
                {
                    "Delete": {
                        "TableName": self._table.name,
                        "Key": {"pk": team_pk(team), "sk": _alias_sk(memory)},
                        # Only drop the alias if it still points at this memory.
                        "ConditionExpression": "memory_id = :id",
                        "ExpressionAttributeValues": {":id": memory.id},
                    }
                }
            )
        # Record and alias go together; an alias that moved on is left out (`_transact`). Any
        # other failure raises rather than deleting the record alone: an alias left behind
        # would carry the deleted record's copy and go on answering memory_get by key.
        if not self._transact([{"Delete": record}], alias):
            # Only the record's own condition can fail here: it is pinned (a missing record
            # passes `attribute_not_exists`, as deleting nothing should).
            raise MemoryPinned(memory.id)

    def drop_alias(self, team: str, key: str, wallet: str | None, memory_id: str) -> None:
        try:
            delete_if(
                self._table,
                {"pk": team_pk(team), "sk": _key_sk(key, wallet)},
                "memory_id = :id",
                values={":id": memory_id},
            )
        except ConditionLost:
            return  # the key moved on to another memory (or is gone): nothing to drop

    def add_flag(self, team: str, memory_id: str, flag: MemoryFlag) -> Memory | None:
        append = "SET flags = list_append(if_not_exists(flags, :none), :flag)"
        values = {":none": [], ":flag": [flag.model_dump(mode="json")]}
        current = self._stored(team, memory_id)
        if current is not None and current.key is not None and current.active:
            # The alias's copy gets the flag in the same transaction (atomic appends to both,
            # so concurrent flags land in one order on each); the reply is read back after.
            record = {
                "Update": {
                    "TableName": self._table.name,
                    "Key": {"pk": team_pk(team), "sk": _memory_sk(memory_id)},
                    "UpdateExpression": append,
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeValues": values,
                }
            }
            alias = self._alias_copy_update(team, current, append, values)
            if not self._transact([record], [alias]):
                return None
            return self._stored(team, memory_id)
        try:
            updated = update_if(
                self._table,
                {"pk": team_pk(team), "sk": _memory_sk(memory_id)},
                append,
                "attribute_exists(pk)",
                values=values,
            )
        except ConditionLost:
            return None
        return _memory(updated)

    def transition(self, team: str, memory: Memory, expected: frozenset[str]) -> Memory:
        # `pinned` belongs to `set_pinned`: the write is conditioned on the pin `memory`
        # carries too, and when a pin or unpin landed since the caller's read it is re-read
        # and carried over, so writing back the copy read never undoes it.
        for _ in range(PIN_RETRIES):
            if self._transition_once(team, memory, expected):
                return memory
            stored = self._stored(team, memory.id)
            if stored is None or stored.status not in expected:
                raise StateChanged(stored)
            memory = memory.model_copy(update={"pinned": stored.pinned})
        raise StateChanged(self._stored(team, memory.id))

    def _transition_once(self, team: str, memory: Memory, expected: frozenset[str]) -> bool:
        """One conditional write of `memory` (status in `expected`, pin as carried); False
        when the condition failed (nothing written)."""
        status, values = _status_condition(expected)
        pin, pin_values = _pin_condition(memory)
        condition = f"{status} AND {pin}"
        values = {**values, **pin_values}
        if memory.key is None:
            try:
                put_if(
                    self._table,
                    _item(team, memory),
                    condition,
                    names={"#status": "status"},
                    values=values,
                )
            except ConditionLost:
                return False
            return True
        record = {
            "Put": {
                "TableName": self._table.name,
                "Item": _item(team, memory),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": values,
            }
        }
        # The alias's copy changes with the record, or goes with a memory leaving the active
        # states (a retracted key is free), in the same transaction.
        return self._transact([record], [self._alias_write(team, memory)])

    def supersede(self, team: str, old: Memory, expected: frozenset[str], new: Memory) -> None:
        for _ in range(PIN_RETRIES):  # the stored pin is kept, as in `transition`
            if self._supersede_once(team, old, expected, new):
                return
            stored = self._stored(team, old.id)
            if stored is None or stored.status not in expected:
                raise StateChanged(stored)
            old = old.model_copy(update={"pinned": stored.pinned})
        raise StateChanged(self._stored(team, old.id))

    def _supersede_once(
        self, team: str, old: Memory, expected: frozenset[str], new: Memory
    ) -> bool:
        status, values = _status_condition(expected)
        pin, pin_values = _pin_condition(old)
        writes: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": _item(team, old),
                    "ConditionExpression": f"{status} AND {pin}",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {**values, **pin_values},
                }
            },
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": _item(team, new),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        if new.key is not None:
            writes.append({"Put": {"TableName": self._table.name, "Item": _alias(team, new)}})
        optional: list[dict[str, Any]] = []
        if old.key is not None and (new.key is None or _alias_sk(old) != _alias_sk(new)):
            # The old key's alias carries the old (now closed) copy: it goes, if still its.
            optional.append(self._alias_write(team, old))
        # The old version closes and the new one appears together or not at all.
        return self._transact(writes, optional)

    def _stored(self, team: str, memory_id: str) -> Memory | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _memory_sk(memory_id)}, ConsistentRead=True
        ).get("Item")
        return _memory(item) if item else None

    def iter_recent(self, team: str) -> Iterator[Memory]:
        # The memories table has no index by update time: this reads the whole team. A GSI
        # (team, updated_at) would make it a page; it needs a backfill of deployed items first.
        return iter(sorted(self.iter_team(team), key=lambda m: (m.updated_at, m.id), reverse=True))

    def iter_team(self, team: str) -> Iterator[Memory]:
        return map(_memory, _team_items(self._table, team, MEMORY_PREFIX))


def _outbox(outbox: DynamoOutbox | None) -> DynamoOutbox:
    if outbox is None:
        raise ValueError("domain events given to a store built without an outbox")
    return outbox


class DynamoFindingStore:
    """`FindingStore` in the memories table: one item per finding under `FINDING#<id>` (the
    curator's stream filter only passes `MEMORY#` items, so findings never re-trigger it)."""

    def __init__(self, table: Table, outbox: DynamoOutbox | None = None) -> None:
        self._table = table
        # Where a change's domain events go (the coordination table's log); only the
        # writes given events need it.
        self._outbox = outbox

    def _item(self, team: str, finding: Finding) -> dict[str, Any]:
        return {
            "pk": team_pk(team),
            "sk": FINDING_PREFIX + finding.id,
            "team": team,
            **to_dynamo(finding.model_dump(mode="json", exclude_none=True)),
        }

    def add(self, team: str, finding: Finding, *, events: Sequence[DomainEvent] = ()) -> bool:
        try:
            if events:
                _outbox(self._outbox).write(
                    team,
                    {
                        "Put": {
                            "TableName": self._table.name,
                            "Item": self._item(team, finding),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    events,
                )
            else:
                put_if(self._table, self._item(team, finding), "attribute_not_exists(pk)")
        except ConditionLost:
            return False
        return True

    def get(self, team: str, finding_id: str) -> Finding | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": FINDING_PREFIX + finding_id}, ConsistentRead=True
        ).get("Item")
        return _finding(item) if item else None

    def iter_team(self, team: str) -> Iterator[Finding]:
        return map(_finding, _team_items(self._table, team, FINDING_PREFIX))

    def settle(self, team: str, finding: Finding) -> None:
        try:
            put_if(
                self._table,
                self._item(team, finding),
                "#status = :open",
                names={"#status": "status"},
                values={":open": "open"},
            )
        except ConditionLost as exc:
            raise StateChanged(_finding(exc.item) if exc.item else None) from exc


def _finding(item: dict[str, Any]) -> Finding:
    return Finding.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in Finding.model_fields}
    )
