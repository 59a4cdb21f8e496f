"""Lambda entry point of the knowledge enrichment worker (wiring only): the FIFO queue's
batches of newly ingested event ids become knowledge nodes, entities and index entries."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.knowledge.wiring import build_enricher
from shared.knowledge.worker import handle_batch
from shared.observability import logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_batch(event, build_enricher().enrich)
