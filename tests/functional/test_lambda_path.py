"""The AWS dispatch path: the gateway invokes the group function through the Lambda API.

Only the Lambda service is stood in for: a `before-send` hook hands the Invoke request the
gateway built to the real memory function handler (the round trip), and botocore's Stubber
answers where a test needs a canned reply (a crash).
"""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody
from botocore.stub import Stubber

from functions.memory.handler import handler as memory_handler
from shared.app.groups import load_catalog
from shared.auth.wiring import build_token_service
from shared.config.settings import Settings
from shared.protocol.gateway import McpGateway
from shared.tools.invoker import LambdaInvoker
from tests.functional.conftest import Harness


class _Context:
    function_name = "cairn-memory"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-memory"
    aws_request_id = "req-1"


def _body(payload: dict[str, Any]) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


class _RawBody(io.BytesIO):
    """A raw HTTP body as botocore reads it: streamed for parsing, read for a blob payload."""

    def stream(self, **_: Any) -> Any:
        yield self.getvalue()


def _route_invoke_to(handler: Any, context: object, sent: list[dict[str, Any]]) -> Any:
    """A `before-send` hook: the Invoke request the gateway built goes to the real handler."""

    def route(request: Any, **_: Any) -> AWSResponse:
        event = json.loads(request.body)
        sent.append(event)
        reply = handler(event, context)
        return AWSResponse(request.url, 200, {}, _RawBody(json.dumps(reply).encode()))

    return route


def test_tools_call_reaches_the_group_function_through_lambda_invoke(aws: Settings) -> None:
    client = boto3.client("lambda", region_name="us-east-1")
    invoker = LambdaInvoker(client, {"memory": "cairn-memory-fn"})
    tokens = build_token_service(aws)
    harness = Harness(McpGateway(load_catalog(), invoker, tokens), tokens)
    token = harness.token(team="alpha", agent_id="agent-9")
    sent: list[dict[str, Any]] = []
    # Only the Lambda service is replaced: its transport hands the gateway's real request body
    # to the real memory function handler, which runs against moto's DynamoDB.
    client.meta.events.register_first(
        "before-send.lambda.Invoke", _route_invoke_to(memory_handler, _Context(), sent)
    )

    put = harness.call(token, "memory_put", {"key": "k", "content": "via lambda"})
    got = harness.call(token, "memory_get", {"key": "k"})

    assert put["isError"] is False
    assert put["memory"]["created_by"] == "agent-9"
    assert got["memory"]["content"] == "via lambda"
    assert [event["tool"] for event in sent] == ["memory_put", "memory_get"]
    assert sent[0]["principal"]["team"] == "alpha"
    assert "created_by" not in sent[0]["arguments"]


def test_the_envelope_carries_tool_validated_arguments_principal_and_request_id(
    aws: Settings,
) -> None:
    client = boto3.client("lambda", region_name="us-east-1")
    tokens = build_token_service(aws)
    harness = Harness(
        McpGateway(load_catalog(), LambdaInvoker(client, {"memory": "fn"}), tokens), tokens
    )
    token = harness.token(team="alpha", agent_id="agent-9")
    captured: dict[str, Any] = {}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke", {"StatusCode": 200, "Payload": _body({"result": {"memory": None}})}, None
        )
        original = client.invoke

        def capture(**kwargs: Any) -> Any:
            captured.update(json.loads(kwargs["Payload"]))
            return original(**kwargs)

        client.invoke = capture  # type: ignore[method-assign]
        harness.call(token, "memory_get", {"key": "k"})
    assert captured["tool"] == "memory_get"
    assert captured["arguments"] == {"key": "k"}
    assert captured["principal"]["team"] == "alpha"
    assert captured["principal"]["agent_id"] == "agent-9"
    assert len(captured["request_id"]) == 32


def test_a_crashed_group_function_is_an_internal_error_not_a_tool_result(aws: Settings) -> None:
    client = boto3.client("lambda", region_name="us-east-1")
    tokens = build_token_service(aws)
    harness = Harness(
        McpGateway(load_catalog(), LambdaInvoker(client, {"memory": "fn"}), tokens), tokens
    )
    token = harness.token()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": _body({"errorMessage": "boom"}),
            },
            None,
        )
        reply = harness.post(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"key": "k"}},
            },
            token,
        )
    assert reply.body is not None
    assert reply.body["error"]["code"] == -32603
    assert "boom" not in json.dumps(reply.body)
