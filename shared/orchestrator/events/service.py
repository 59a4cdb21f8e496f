"""The team's event log: validation and time logic; the log itself is an `EventLog` port.

Events are kept 7 days (`RETENTION`; a poll never returns an older one). A poll reads the events
published strictly after `since`, oldest first.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from shared.auth.principal import Principal
from shared.domain_events.log import RETENTION, Event
from shared.domain_events.models import RESERVED_PREFIX
from shared.orchestrator.events.models import EventPollInput
from shared.orchestrator.events.ports import EventLog
from shared.tools.errors import InvalidArgument

MAX_PAYLOAD_BYTES = 65_536
logger = logging.getLogger("cairn.events")
# Called with (team, the published event) after each event.publish.
PublishListener = Callable[[str, Event], None]


class EventService:
    def __init__(self, log: EventLog, clock: Callable[[], float] = time.time) -> None:
        self._log = log
        self._clock = clock
        self._publish_listeners: list[PublishListener] = []

    def on_publish(self, listener: PublishListener) -> None:
        """The workflow trigger seam: call `listener(team, event)` after each publish (event
        triggers start their workflows). A listener's failure is logged, not raised: the
        event is stored either way."""
        self._publish_listeners.append(listener)

    def publish(self, principal: Principal, event_type: str, payload: dict[str, Any]) -> str:
        if event_type.startswith(RESERVED_PREFIX):
            # cairn's own domain events share the log; an agent may not forge one (they are
            # forwarded to the team's EventBridge bus, where rules trust their source).
            raise InvalidArgument(
                f"`event_type` {event_type!r} is reserved: types beginning with "
                f"{RESERVED_PREFIX!r} are cairn's domain events; pick another prefix",
                field="event_type",
            )
        size = len(json.dumps(payload).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise InvalidArgument(
                f"`payload` is {size} bytes; at most {MAX_PAYLOAD_BYTES}", field="payload"
            )
        now = datetime.fromtimestamp(self._clock(), tz=UTC)
        event_id = f"evt-{secrets.token_hex(12)}"
        event = Event(
            event_id=event_id,
            event_type=event_type,
            payload=payload,
            published_by=principal.actor,
            published_at=now,
        )
        self._log.append(principal.team, event)
        for listener in self._publish_listeners:
            try:
                listener(principal.team, event)
            except Exception:
                logger.exception("an event publish listener failed", extra={"event_id": event_id})
        return event_id

    def poll(self, principal: Principal, asked: EventPollInput) -> list[Event]:
        since = asked.since
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
        return self._log.read_after(principal.team, since, asked.event_type, asked.limit)
