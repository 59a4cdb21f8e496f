"""Lambda entry point of the sync runner: started by a team's EventBridge Scheduler schedule
(wiring only; the work is `shared.sync.runner`). Log lines carry the team and counts only."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared import runtime
from shared.auth.wiring import build_token_store
from shared.config.settings import Settings
from shared.observability import logger, metrics, tracer
from shared.search.wiring import build_search_service
from shared.sync.runner import run_scheduled_sync
from shared.sync.wiring import build_sync_service

runtime.configure(Settings.from_env())


def _team_exists(team: str) -> bool:
    return bool(build_token_store().list_team(team))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = run_scheduled_sync(
        event,
        sync=build_sync_service(),
        search=build_search_service(),
        team_exists=_team_exists,
    )
    logger.info("scheduled sync", extra={k: v for k, v in result.items() if k != "connectors"})
    return result
