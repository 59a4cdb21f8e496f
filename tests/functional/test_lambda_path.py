"""The AWS dispatch path: the gateway invokes the group function through the Lambda API.

botocore's Stubber stands in for the Lambda service only; the payload it returns is what the real
memory function handler produced for the envelope the gateway sent.
"""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from functions.memory.handler import handler as memory_handler
from shared.config.settings import Settings
from shared.protocol.gateway import McpGateway
from shared.protocol.wiring import build_token_service
from shared.tools.groups import load_catalog
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


def test_tools_call_reaches_the_group_function_through_lambda_invoke(aws: Settings) -> None:
    client = boto3.client("lambda", region_name="us-east-1")
    invoker = LambdaInvoker(client, {"memory": "cairn-memory-fn"})
    tokens = build_token_service(aws)
    harness = Harness(McpGateway(load_catalog(), invoker, tokens), tokens)
    token = harness.token(team="alpha", agent_id="agent-9")
    sent: list[dict[str, Any]] = []

    def run_real_handler(request: Any, **_: Any) -> None:
        sent.append(json.loads(request.body))

    client.meta.events.register("before-send.lambda.Invoke", run_real_handler)
    with Stubber(client) as stub:
        # The stubbed response must be known up front: compute it with the real handler.
        envelope = {
            "tool": "memory_put",
            "arguments": {"key": "k", "content": "via lambda"},
            "principal": tokens.authenticate(token)[0].model_dump(mode="json"),
            "request_id": "r-1",
        }
        reply = memory_handler(envelope, _Context())
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": _body(reply)},
            {
                "FunctionName": "cairn-memory-fn",
                "InvocationType": "RequestResponse",
                "Payload": ANY,
            },
        )
        result = harness.call(token, "memory_put", {"key": "k", "content": "via lambda"})
        stub.assert_no_pending_responses()
    assert result["isError"] is False
    assert result["memory"]["created_by"] == "agent-9"  # type: ignore[index]


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
