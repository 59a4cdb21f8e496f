"""The knowledge group's HTTP routes, mounted beside POST /mcp on the gateway app.

- `POST /ingest/events` — what shell hooks and importers call: a bearer token that may call
  `ingest_events` (checked by the gateway as over MCP: scope, allow-list or context, rate
  limit), a JSON body `{"events": [...]}` (at most 500 events, at most the gateway's
  body limit), answered `{"accepted", "duplicates", "redacted"}`. It is `ingest_events`
  without the JSON-RPC envelope.
- `POST /hooks/github/{team}` — GitHub's `workflow_run` / `workflow_job` deliveries, verified
  with `X-Hub-Signature-256` against the team's secret by the knowledge function: a bad or
  missing signature is a 401 and nothing is stored.

Both reach the knowledge function through `invoke` (in-process locally, Lambda in AWS), so the
gateway never touches the knowledge table or the webhook secret.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from shared.auth.principal import Principal
from shared.protocol.blocking import run_blocking
from shared.protocol.doors import SignedDelivery, ToolDoor
from shared.protocol.gateway import McpGateway
from shared.tools.envelope import Envelope, Reply
from shared.tools.validation import describe_validation_error

INGEST_PATH = "/ingest/events"
GITHUB_HOOK_PATH = "/hooks/github/{team}"
INGEST_SCOPE = "ingest"
INGEST_TOOL = "ingest_events"
WEBHOOK_CALLER = "github-webhook"  # the caller id of webhook deliveries (not a credential)
MAX_BODY_BYTES = 1_048_576
_TEAM = r"^[A-Za-z0-9_.-]{1,64}$"

Invoke = Callable[[Envelope], Reply]


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _reply(reply: Reply) -> JSONResponse:
    if reply.error is not None:
        status = {"unauthorized": 401, "not_found": 404}.get(reply.error.code, 400)
        body = {"error": reply.error.message, "field": reply.error.field}
        return JSONResponse(body, status_code=status)
    return JSONResponse(reply.result or {})


def knowledge_router(
    gateway: McpGateway, invoke: Invoke, *, max_body_bytes: int = MAX_BODY_BYTES
) -> APIRouter:
    """The two routes over the gateway (which authorizes ingest as its tool) and the knowledge
    function's invoker."""
    router = APIRouter()
    # The ingest route stands for `ingest_events`: the caller is authorized exactly as over
    # MCP (token, rate limit, allow-list or context, scope), by the declared door.
    ingest_door = ToolDoor(gateway, INGEST_TOOL)

    @router.post(INGEST_PATH)
    async def ingest(
        request: Request,
        principal: Principal = Depends(ingest_door),  # noqa: B008 (FastAPI's dependency form)
    ) -> Response:
        body = await request.body()
        if len(body) > max_body_bytes:
            return _error(413, f"the body exceeds {max_body_bytes} bytes; send smaller batches")
        # Imported at the first ingest: the knowledge models are not in the gateway's cold
        # start, which MCP requests pay.
        from shared.knowledge.models import IngestEventsInput

        try:
            arguments = IngestEventsInput.model_validate_json(body)
        except ValidationError as exc:
            field, problem = describe_validation_error(exc)
            return JSONResponse({"error": problem, "field": field}, status_code=400)
        envelope = Envelope(
            tool=INGEST_TOOL,
            arguments=arguments.model_dump(mode="json", exclude_unset=True),
            principal=principal,
            request_id=uuid.uuid4().hex,
        )
        return _reply(await run_blocking(invoke, envelope))

    @router.post(GITHUB_HOOK_PATH, dependencies=[Depends(SignedDelivery("github_webhook"))])
    async def github(request: Request) -> Response:
        # Read, not declared: a declared path parameter costs the gateway's cold start a
        # pydantic field (see shared.console.routes' static route).
        team = str(request.path_params["team"])
        if not re.match(_TEAM, team):
            return _error(404, "unknown team")
        body = await request.body()
        if len(body) > max_body_bytes:
            return _error(413, f"the body exceeds {max_body_bytes} bytes")
        from shared.knowledge.github import EVENT_HEADER, SIGNATURE_HEADER

        # Every delivery is verified, also the ones not recorded (GitHub's first `ping`), so a
        # wrong secret shows at set-up.
        event = request.headers.get(EVENT_HEADER, "")
        # No token: the delivery's signature, checked by the knowledge function, is the proof.
        principal = Principal(
            team=team,
            token_id=WEBHOOK_CALLER,
            token_name=WEBHOOK_CALLER,
            scopes=frozenset({INGEST_SCOPE}),
        )
        envelope = Envelope(
            tool="github_webhook",
            arguments={
                "event": event[:64],
                "signature": request.headers.get(SIGNATURE_HEADER),
                "body_base64": base64.b64encode(body).decode(),
            },
            principal=principal,
            request_id=uuid.uuid4().hex,
        )
        return _reply(await run_blocking(invoke, envelope))

    return router


def local_invoke(envelope: Envelope) -> Reply:
    """The knowledge function in-process (local mode): MCP tools and hooks alike."""
    from shared.knowledge.group import GROUP  # not in Lambda: local mode only
    from shared.knowledge.tools import function_group  # not in Lambda: local mode only
    from shared.tools.dispatch import execute  # not in Lambda: local mode only

    return execute(function_group(GROUP), envelope)
