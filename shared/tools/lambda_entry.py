"""The Lambda handler of a tool group: parse the envelope, execute, return the reply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import lambda_handler, logger, metrics
from shared.tools.dispatch import execute
from shared.tools.envelope import Envelope
from shared.tools.registry import ToolGroup

GroupHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def make_group_handler(group: ToolGroup[Any]) -> GroupHandler:
    """One handler per group function; all of them are this same wiring."""

    @lambda_handler
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        envelope = Envelope.model_validate(event)
        logger.append_keys(
            tool=envelope.tool, team=envelope.principal.team, request_id=envelope.request_id
        )
        reply = execute(group, envelope)
        outcome = reply.error.code if reply.error else "ok"
        metrics.add_dimension(name="tool", value=envelope.tool)
        metrics.add_metric(name="ToolInvocations", unit="Count", value=1)
        logger.info("tool executed", extra={"outcome": outcome})
        return reply.model_dump(mode="json")

    return handler
