"""The model port's adapters: Bedrock Converse (stubbed client), an OpenAI-compatible endpoint
(a closed local port), and a setting that names no model — each failure is ModelUnavailable,
which `ask` turns into seed 003's `Error:` string."""

from __future__ import annotations

import socket

import boto3
import pytest
from botocore.stub import Stubber

from shared.knowledge.adapters.models import (
    BedrockChatModel,
    MisconfiguredModel,
    OpenAICompatibleChatModel,
    model_from_setting,
)
from shared.knowledge.ports import ModelUnavailable


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bedrock_converse_returns_the_text_and_a_service_error_is_unavailable() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    model = BedrockChatModel(client, "anthropic.claude-3-haiku-20240307-v1:0")
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "Answer [1]"}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            },
        )
        stub.add_client_error("converse", "AccessDeniedException", "no model access")
        assert model.complete("system", "prompt") == "Answer [1]"
        with pytest.raises(ModelUnavailable, match="no model access"):
            model.complete("system", "prompt")


def test_an_unreachable_openai_compatible_endpoint_is_unavailable() -> None:
    model = OpenAICompatibleChatModel(f"http://127.0.0.1:{_closed_port()}/v1", "llama3.1")
    with pytest.raises(ModelUnavailable):
        model.complete("system", "prompt")


@pytest.mark.parametrize("setting", ["llama3", "openai:llama3", "openai:x@ftp://h", "bedrock:"])
def test_a_setting_naming_no_model_answers_unavailable(setting: str) -> None:
    model = model_from_setting(setting, "us-east-1")
    assert isinstance(model, MisconfiguredModel)
    with pytest.raises(ModelUnavailable, match="CAIRN_KNOWLEDGE_MODEL"):
        model.complete("s", "p")


def test_settings_pick_the_adapter() -> None:
    assert model_from_setting(None, "us-east-1") is None
    assert isinstance(model_from_setting("bedrock:m", "us-east-1"), BedrockChatModel)
    openai = model_from_setting("openai:llama3.1@http://127.0.0.1:11434/v1", "us-east-1")
    assert isinstance(openai, OpenAICompatibleChatModel)
    assert openai.name == "openai:llama3.1@http://127.0.0.1:11434/v1"
