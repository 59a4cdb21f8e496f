"""Lambda entry point of the sync runner: started by a team's EventBridge Scheduler schedule or
by a tool call's asynchronous invoke of a queued run (wiring only; the work is
`shared.sync.runner`). Log lines carry the team, the run id and counts only."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared import runtime
from shared.app.sync_service import build_sync_service
from shared.auth.wiring import build_token_store
from shared.coldstart import end_init
from shared.config.settings import Settings
from shared.observability import lambda_handler, logger
from shared.sync.runner import run_event

runtime.configure(Settings.from_env())


def _team_exists(team: str) -> bool:
    return bool(build_token_store().list_team(team))


@lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = run_event(event, sync=build_sync_service(), team_exists=_team_exists)
    logger.info("sync run", extra=result)
    return result


end_init()  # the last line of init: shared/coldstart.py
