"""Builds the services' `DomainEvents` and the DynamoDB outbox (the one place both are chosen).

A service hands each change's events to the store method that makes the change, which writes
them to the team's event log in the same transaction (`adapters.outbox`): locally that is
where they end (`event.poll` reads them); in AWS the log is the outbox the event publisher
forwards to the bus from the coordination table's stream, so no group function calls
EventBridge itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.domain_events.emitter import DomainEvents

if TYPE_CHECKING:
    from shared.domain_events.adapters.outbox import DynamoOutbox


@runtime.cached
def build_domain_events() -> DomainEvents:
    return DomainEvents()


def build_dynamo_outbox() -> DynamoOutbox:
    """What a DynamoDB store writes a change's events with: the coordination table's log."""
    from shared.domain_events.adapters.outbox import DynamoOutbox

    return DynamoOutbox(runtime.table(names.TABLE_COORDINATION))
