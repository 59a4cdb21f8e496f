"""Lambda entry point of the curator worker: files the pending memories the memories table's
stream reports, then looks for conflicts and duplicates around every memory written active
(wiring only; the curating is `shared.memory.curator`, the detection `shared.memory.detection`).

Each record is handled on its own: one that fails is reported in `batchItemFailures`, so Lambda
retries from it (bisecting the batch) and, after the mapping's retries, sends its stream
coordinates to the dead-letter queue, while the rest of the batch is done. Records that are not
a written memory are skipped; the mapping's filter already drops most of them before an invoke.
A redelivered record is harmless: the curator leaves a memory that is no longer pending alone,
and detection derives a finding's id from its members, so a finding is recorded once.
Log lines carry ids and the outcome, never a memory's content.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.coldstart import end_init
from shared.memory.detection import raised_at
from shared.memory.wiring import build_curator, build_detector
from shared.observability import lambda_handler, logger, metrics, tracer

MEMORY_SORT_KEY_PREFIX = "MEMORY#"
CURATED_EVENTS = frozenset({DynamoDBRecordEventName.INSERT, DynamoDBRecordEventName.MODIFY})

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def _written_memory(record: DynamoDBRecord) -> tuple[str, str, str] | None:
    """`(team, memory id, status)` when the record writes a pending or filed memory (filed is
    the default, which the item leaves out), else None."""
    stream = record.dynamodb
    if record.event_name not in CURATED_EVENTS or stream is None:
        return None
    image = stream.new_image
    sort_key = str(image.get("sk", ""))
    status = str(image.get("status", "filed"))
    if status not in {"pending", "filed"} or not sort_key.startswith(MEMORY_SORT_KEY_PREFIX):
        return None
    return str(image["team"]), str(image["id"]), status


@tracer.capture_method
def curate(record: DynamoDBRecord) -> str:
    """Curate the memory one stream record writes; returns what was done with it."""
    target = _written_memory(record)
    if target is None:
        logger.debug(
            "record skipped: not a written memory",
            extra={"event_id": record.event_id, "event_name": record.get("eventName")},
        )
        return "skipped"
    team, memory_id, status = target
    try:
        if status == "filed":
            return _detect(team, memory_id)
        outcome = build_curator().file(team, memory_id)
        if outcome.action == "filed":
            _detect(team, memory_id)
    except Exception as exc:
        # The type and where it was raised, not its text: an exception's text may quote the
        # item, and so the memory's content. The message itself names the memory and the cause
        # (a plain-text log shows no extra fields).
        logger.warning(
            f"curation of memory {memory_id} (team {team}) failed: {type(exc).__name__} at "
            f"{raised_at(exc)}; the record is reported as a batch item failure",
            extra={"memory_id": memory_id, "team": team, "error": type(exc).__name__},
        )
        raise
    metrics.add_metric(
        name=f"Memories{outcome.action.capitalize()}", unit=MetricUnit.Count, value=1
    )
    logger.info(
        "memory curated",
        extra={
            "action": outcome.action,
            "memory_id": memory_id,
            "team": team,
            "into": outcome.into,
            "links": len(outcome.links),
        },
    )
    return outcome.action


def _detect(team: str, memory_id: str) -> str:
    """Conflicts and duplicates around one active memory (idempotent)."""
    found = build_detector().detect(team, memory_id)
    for finding in found:
        metrics.add_metric(name=f"{finding.kind.capitalize()}Found", unit=MetricUnit.Count, value=1)
    logger.info(
        "memory checked for conflicts and duplicates",
        extra={"memory_id": memory_id, "team": team, "findings": [f.id for f in found]},
    )
    return "detected"


@lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=curate, processor=processor, context=context
    )


end_init()  # the last line of init: shared/coldstart.py
