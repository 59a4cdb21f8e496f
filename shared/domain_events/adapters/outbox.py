"""The transactional outbox: a store writes a change's domain events in the change's own
transaction, so an event is in the team's event log exactly when its change is stored.

A store method that makes a reportable transition takes the events its service built
(`events=`) and hands them here with the change:

- **SQLite** (`sqlite_outbox.SqliteOutbox`): inside the store's `BEGIN IMMEDIATE` write, beside its
  `UPDATE … WHERE <condition>`; a refused condition rolls the whole transaction back.
- **DynamoDB** (`DynamoOutbox.write`): one `TransactWriteItems` of the change (an `Update` or
  `Put` with its condition, on any table) and a `Put` of each event into the coordination
  table's log, which the publisher drains from that table's stream. A refused condition
  cancels the transaction: `ConditionLost(item as it was)`, exactly as `update_if` raises.

What it costs in DynamoDB: a transaction bills two write units per item (the change and each
event), where the change and a separate append billed one each. What it buys: a function that
dies between the two writes no longer keeps the change and loses its event (docs/events.md).
A change with no events keeps its plain conditional write.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.adapters.log_item import event_item
from shared.domain_events.models import DomainEvent, check_one_team
from shared.storage.dynamo import ConditionLost, put_if, update_if

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

__all__ = ["DynamoOutbox"]

# Two transactions on one item at once: DynamoDB cancels one with `TransactionConflict` rather
# than queueing it. Retried (the condition then decides, as it would have for plain writes).
CONFLICT_ATTEMPTS = 6
_DESERIALIZER = TypeDeserializer()


class DynamoOutbox:
    """Writes a change and its events in one `TransactWriteItems`; `log` is the coordination
    table (the event log's), `change`'s table may be any other."""

    def __init__(
        self,
        log: Table,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._log = log
        self._client = log.meta.client
        self._sleep = sleep

    def items(self, team: str, events: Sequence[DomainEvent]) -> list[dict[str, Any]]:
        """The `TransactWriteItems` elements that put `events` into the log: for a store
        whose change is a transaction already (a memory and its key alias)."""
        check_one_team(team, events)
        return [
            {
                "Put": {
                    "TableName": self._log.name,
                    "Item": event_item(team, as_log_event(event)),
                    # Ids are random: a repeat is a bug, never an overwrite.
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            for event in events
        ]

    def write(
        self,
        team: str,
        change: dict[str, Any],
        events: Sequence[DomainEvent],
    ) -> None:
        """`change` is one `TransactWriteItems` element (`{"Update": {...}}` or `{"Put": …}`,
        with `TableName` and its `ConditionExpression`); `ConditionLost(old item)` when that
        condition does not hold, and then no event is written either."""
        operation = dict(next(iter(change.values())))
        operation["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        items: list[Any] = [{next(iter(change)): operation}, *self.items(team, events)]
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                # A token per attempt: the SDK's own retries of one attempt (a timeout after
                # DynamoDB applied it) are then idempotent instead of failing the condition on
                # their own write.
                self._client.transact_write_items(
                    TransactItems=items, ClientRequestToken=uuid.uuid4().hex
                )
                return
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                reasons: list[dict[str, Any]] = exc.response.get(  # type: ignore[assignment]
                    "CancellationReasons", []
                )
                first = reasons[0] if reasons else {}
                if first.get("Code") == "ConditionalCheckFailed":
                    old = first.get("Item")
                    item = (
                        {k: _DESERIALIZER.deserialize(v) for k, v in old.items()} if old else None
                    )
                    raise ConditionLost(item) from exc
                conflict = any(r.get("Code") == "TransactionConflict" for r in reasons)
                if not conflict or attempt == CONFLICT_ATTEMPTS - 1:
                    raise
                self._sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 - jitter only

    def put_if(
        self,
        table: Table,
        team: str,
        item: dict[str, Any],
        condition: str,
        events: Sequence[DomainEvent],
        *,
        values: dict[str, Any] | None = None,
    ) -> None:
        """`dynamo.put_if` with the change's events in one transaction (a plain conditional put
        when there are none); `ConditionLost(old item)` when `condition` does not hold."""
        if not events:
            put_if(table, item, condition, values=values)
            return
        put: dict[str, Any] = {
            "TableName": table.name,
            "Item": item,
            "ConditionExpression": condition,
        }
        if values:
            put["ExpressionAttributeValues"] = values
        self.write(team, {"Put": put}, events)

    def update_if(
        self,
        table: Table,
        team: str,
        key: dict[str, str],
        update: str,
        condition: str,
        events: Sequence[DomainEvent],
        *,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`dynamo.update_if` with the change's events in one transaction (a plain conditional
        update when there are none), returning the new item; `ConditionLost(old item)` when
        `condition` does not hold. A transaction returns no item: it is read back (strongly
        consistent), and `ConditionLost(None)` if it is gone by then."""
        if not events:
            return update_if(table, key, update, condition, names=names, values=values)
        operation: dict[str, Any] = {
            "TableName": table.name,
            "Key": key,
            "UpdateExpression": update,
            "ConditionExpression": condition,
        }
        if names:
            operation["ExpressionAttributeNames"] = names
        if values:
            operation["ExpressionAttributeValues"] = values
        self.write(team, {"Update": operation}, events)
        written = table.get_item(Key=key, ConsistentRead=True).get("Item")
        if written is None:
            raise ConditionLost(None)
        return dict(written)
