"""The event log in the coordination table: `TEAM#<team>` / `EVENT#<time>#<id>` (the item is
the outbox's, `shared.domain_events.adapters.log_item`, which stores write in their own
transactions; this adapter appends and reads them).

The sort key begins with the publication time (UTC, microseconds), so a read is one Query for
keys after `since`, oldest first. Items carry the TTL attribute (publication + `RETENTION`);
DynamoDB's TTL is lazy, so reads also drop expired items.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.config.names import TTL_ATTRIBUTE
from shared.domain_events.adapters.log_item import event_item
from shared.domain_events.log import Event
from shared.storage.dynamo import query_all, team_pk
from shared.storage.times import sortable
from shared.storage.values import from_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

_AFTER_ALL_IDS = "~"  # sorts after every event id: events at `since` itself are excluded


class DynamoEventLog:
    """`EventLog` on the coordination table (see `shared.config.tables.COORDINATION`)."""

    def __init__(self, table: Table, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._clock = clock

    def append(self, team: str, event: Event, *, durable: bool = True) -> None:
        del durable  # a put is durable when DynamoDB acknowledges it
        self._table.put_item(Item=event_item(team, event))

    def read_after(
        self, team: str, since: datetime, event_type: str | None, limit: int
    ) -> list[Event]:
        # The TTL is whole seconds: an event published after `now - RETENTION` has a TTL of at
        # least int(now), so `>=` keeps every event still within the retention.
        unexpired = Attr(TTL_ATTRIBUTE).gte(int(self._clock()))
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(team_pk(team))
            & Key("sk").between(f"EVENT#{sortable(since)}#{_AFTER_ALL_IDS}", "EVENT#~"),
            "FilterExpression": unexpired
            if event_type is None
            else unexpired & Attr("event_type").eq(event_type),
        }
        items = islice(query_all(self._table, **kwargs), limit)
        return [Event.model_validate(from_dynamo(dict(item))) for item in items]
