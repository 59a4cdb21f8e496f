"""Lambda entry point of the workflow step dispatcher: each message of the dispatch queue is a
step a state machine reached; it becomes an agent task carrying the step's callback (wiring
only; the logic is `shared.workflows.dispatcher`).

A message that fails is reported in `batchItemFailures`, so SQS redelivers only it and, after
the queue's receive limit, moves it to the dead-letter queue (alarmed). Log lines carry ids,
never the token or the step's inputs.
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
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.app.reactions import build_workflow_service
from shared.coldstart import end_init
from shared.observability import lambda_handler, logger, metrics, tracer
from shared.workflows.dispatcher import dispatch

processor = BatchProcessor(event_type=EventType.SQS)


@tracer.capture_method
def dispatch_record(record: SQSRecord) -> str:
    try:
        message = dispatch(build_workflow_service(), record.body)
    except Exception as exc:
        logger.warning(
            "step dispatch failed; the message is reported as a batch item failure",
            extra={"message_id": record.message_id, "error": type(exc).__name__},
        )
        raise
    metrics.add_metric(name="WorkflowStepsDispatched", unit=MetricUnit.Count, value=1)
    logger.info(
        "step dispatched",
        extra={"team": message.team, "execution_id": message.execution_id, "step": message.step},
    )
    return message.step


@lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=dispatch_record, processor=processor, context=context
    )


end_init()  # the last line of init: shared/coldstart.py
