"""Lambda entry point of the knowledge worker (wiring only): the FIFO queue's batches of newly
ingested event ids become knowledge nodes, entities and index entries; the schedule's
`{"knowledge": "ci_pull"}` pulls GitHub Actions runs of the repos configured for it."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.app.wiring import build_enricher, build_knowledge_service
from shared.coldstart import end_init
from shared.knowledge.github import api_fetcher
from shared.knowledge.wiring import ci_pull_targets
from shared.knowledge.worker import handle_batch, run_ci_pull
from shared.observability import lambda_handler

CI_PULL = {"knowledge": "ci_pull"}


@lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event == CI_PULL:
        service = build_knowledge_service()
        return run_ci_pull(
            ci_pull_targets(),
            lambda team, repo, token: service.pull_ci(team, repo, api_fetcher(token)),
        )
    return handle_batch(event, build_enricher().enrich)


end_init()  # the last line of init: shared/coldstart.py
