"""The event log's item in the coordination table: `TEAM#<team>` / `EVENT#<time>#<id>`.

Owned here, by the outbox that writes it in a store's transaction; the event log's DynamoDB
adapter (`shared.orchestrator.events.adapters.dynamodb`) appends and reads the same items.
"""

from __future__ import annotations

from typing import Any

from shared.config.names import TTL_ATTRIBUTE
from shared.domain_events.log import Event, expires_at
from shared.storage.dynamo import team_pk
from shared.storage.times import sortable
from shared.storage.values import to_dynamo


def event_item(team: str, event: Event) -> dict[str, Any]:
    """The log's item for `event` (what a store's transaction puts as its outbox, and what
    the log's own `append` puts)."""
    return {
        "pk": team_pk(team),
        "sk": f"EVENT#{sortable(event.published_at)}#{event.event_id}",
        "event_id": event.event_id,
        "event_type": event.event_type,
        "payload": to_dynamo(event.payload, "payload"),
        "published_by": event.published_by,
        "published_at": event.published_at.isoformat(),
        TTL_ATTRIBUTE: int(expires_at(event).timestamp()),
    }
