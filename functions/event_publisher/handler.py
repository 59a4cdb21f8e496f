"""Lambda entry point of the event publisher: the domain events the coordination table's
stream reports (appended to a team's event log) go onto the stack's EventBridge bus (wiring
only; the forwarding is `shared.domain_events.publisher`).

The mapping's filter invokes it only for inserted event-log items of a `cairn.` type. A batch
EventBridge keeps refusing is reported from its first refused record (`batchItemFailures`):
Lambda retries from there, then sends the record's stream coordinates to the dead-letter
queue. Log lines carry counts and ids, never an event's detail.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared import runtime
from shared.coldstart import end_init
from shared.config.names import Env
from shared.config.settings import Settings
from shared.domain_events.adapters.eventbridge import EventBridgeSink
from shared.domain_events.publisher import domain_event, publish_records
from shared.observability import lambda_handler, logger, metrics

runtime.configure(Settings.from_env())


@runtime.cached
def _sink() -> EventBridgeSink:
    import boto3

    return EventBridgeSink(
        boto3.client("events", region_name=runtime.settings().region),
        os.environ[Env.EVENT_BUS_NAME],
    )


@lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    records = event.get("Records", [])
    retry_from = publish_records(records, _sink())
    forwarded = sum(domain_event(record) is not None for record in records)
    metrics.add_metric(name="DomainEventsSeen", unit=MetricUnit.Count, value=forwarded)
    if retry_from:
        metrics.add_metric(name="DomainEventsRefused", unit=MetricUnit.Count, value=1)
        logger.warning("EventBridge refused events; retrying from", extra={"from": retry_from})
    logger.info("domain events forwarded", extra={"records": len(records), "events": forwarded})
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in retry_from]}


end_init()  # the last line of init: shared/coldstart.py
