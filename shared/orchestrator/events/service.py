"""The team's event log in the coordination table: `TEAM#<team>` / `EVENT#<time>#<id>`.

Events are kept 7 days (DynamoDB TTL collects them; a poll never returns an older one). The sort
key begins with the publication time (UTC, microseconds), so a poll is one Query for keys after
`since`, oldest first.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared import runtime
from shared.auth.principal import Principal
from shared.config import names
from shared.dynamo_values import from_dynamo, to_dynamo
from shared.orchestrator.events.models import Event
from shared.tools.errors import InvalidArgument

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

RETENTION = timedelta(days=7)
MAX_PAYLOAD_BYTES = 65_536
_AFTER_ALL_IDS = "~"  # sorts after every event id: `since` itself is excluded


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventService:
    def __init__(self, table: Table, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._clock = clock

    def publish(self, principal: Principal, event_type: str, payload: dict[str, Any]) -> str:
        size = len(json.dumps(payload).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise InvalidArgument(
                f"`payload` is {size} bytes; at most {MAX_PAYLOAD_BYTES}", field="payload"
            )
        now = datetime.fromtimestamp(self._clock(), tz=UTC)
        event_id = f"evt-{secrets.token_hex(12)}"
        self._table.put_item(
            Item={
                "pk": f"TEAM#{principal.team}",
                "sk": f"EVENT#{_stamp(now)}#{event_id}",
                "event_id": event_id,
                "event_type": event_type,
                "payload": to_dynamo(payload, "payload"),
                "published_by": principal.actor,
                "published_at": now.isoformat(),
                names.TTL_ATTRIBUTE: int((now + RETENTION).timestamp()),
            }
        )
        return event_id

    def poll(
        self,
        principal: Principal,
        *,
        since: datetime | None,
        event_type: str | None,
        limit: int,
    ) -> list[Event]:
        now = datetime.fromtimestamp(self._clock(), tz=UTC)
        oldest = now - RETENTION
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        # Nothing is older than the retention or newer than now: clamp (also keeps far-future
        # dates, which cannot be converted to UTC near year 9999, out of the arithmetic).
        if since is None or since < oldest:
            since = oldest
        elif since > now:
            return []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(f"TEAM#{principal.team}")
            & Key("sk").between(f"EVENT#{_stamp(since)}#{_AFTER_ALL_IDS}", "EVENT#~"),
        }
        if event_type is not None:
            kwargs["FilterExpression"] = Attr("event_type").eq(event_type)
        found: list[Event] = []
        while len(found) < limit:
            page = self._table.query(**kwargs)
            for item in page.get("Items", []):
                found.append(Event.model_validate(from_dynamo(dict(item))))
                if len(found) == limit:
                    break
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found


def build_event_service() -> EventService:
    return EventService(runtime.table(names.TABLE_COORDINATION))
