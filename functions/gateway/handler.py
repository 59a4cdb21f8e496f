"""Lambda entry point of the gateway: its ASGI app under Mangum (wiring only).

Everything is built at import time, once per container (and captured by SnapStart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.config import Config
from mangum import Mangum

from shared import runtime
from shared.app.gateway import build_console_oauth, build_gateway, create_app
from shared.app.toolsets import TOOLSETS
from shared.auth.origin import build_origin_guard
from shared.auth.wiring import build_token_service
from shared.coldstart import end_init
from shared.config import names
from shared.config.settings import Settings
from shared.observability import logger, metrics, tracer
from shared.tools.invoker import LambdaInvoker

if TYPE_CHECKING:
    from fastapi import FastAPI

settings = Settings.from_env()
runtime.configure(settings)
# The time budget (docs/infra/functions-and-bundling.md): API Gateway gives up at 29 s, this
# function at 28, a group at 24. The gateway stops waiting for a group at 26 s so it still answers
# with an MCP error, and never retries an invoke: a retried tool call could run a write twice.
GROUP_INVOKE_CONFIG = Config(
    connect_timeout=2, read_timeout=26, retries={"total_max_attempts": 1, "mode": "standard"}
)
invoker = LambdaInvoker(
    boto3.client("lambda", config=GROUP_INVOKE_CONFIG), settings.group_functions
)
tokens = build_token_service(settings)
# Into the SnapStart snapshot with the rest: no sampled request loads the X-Ray SDK.
tracer.load()
app = create_app(
    build_gateway(settings, invoker, tokens, toolsets=TOOLSETS),
    console_oauth=build_console_oauth(settings),
)


def _knowledge_routes(api: FastAPI) -> None:
    # Seed 003's capture routes: the knowledge function verifies and stores, not the gateway.
    # Imported with FastAPI when a console or capture route is first hit, not at cold start.
    from shared.knowledge.http import knowledge_router

    api.include_router(
        knowledge_router(
            app.gateway,
            lambda envelope: invoker.invoke(names.GROUP_KNOWLEDGE, envelope, read_only=False),
        )
    )


app.add_routes(_knowledge_routes)
_asgi = Mangum(app, lifespan="off")
# Behind CloudFront (api=cloudfront) only requests carrying its secret origin header get past
# this point; None when the stack has no CloudFront front.
origin_guard = build_origin_guard(
    settings.origin_secret_arn,
    lambda arn: str(boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]),
)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if origin_guard is not None and (refused := origin_guard.refusal(event)) is not None:
        # The execute-api URL, not CloudFront: never reaches the app (or a tool).
        logger.warning("refused a request that bypassed CloudFront", path=event.get("rawPath"))
        return refused
    response: dict[str, Any] = _asgi(event, context)  # type: ignore[arg-type]
    return response


end_init()  # the last line of init: shared/coldstart.py
