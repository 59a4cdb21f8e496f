"""The Bedrock contradiction judge: its Converse call, its reading of the answer, and the rule
set as fallback (botocore's Stubber: no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from shared import runtime
from shared.config.settings import Settings
from shared.memory.adapters.bedrock_judge import BedrockJudge
from shared.memory.detection import Verdict
from shared.memory.wiring import build_detector

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


def _answer(text: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 50, "outputTokens": 2, "totalTokens": 52},
        "metrics": {"latencyMs": 120},
    }


@pytest.fixture
def stubbed() -> tuple[BedrockJudge, Stubber]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    return BedrockJudge(client, MODEL), Stubber(client)


def test_the_model_finds_a_contradiction_the_rules_cannot(
    stubbed: tuple[BedrockJudge, Stubber],
) -> None:
    judge, stub = stubbed
    a, b = "The service is written in Go.", "The service is a Python codebase."
    stub.add_response(
        "converse",
        _answer("CONTRADICTION"),
        {"modelId": MODEL, "messages": ANY, "inferenceConfig": ANY},
    )
    with stub:
        verdict = judge(a, b, 0.7, True)
    assert verdict.kind == "conflict"
    assert "model" in verdict.signals


def test_an_identical_body_or_an_unrelated_pair_never_calls_the_model(
    stubbed: tuple[BedrockJudge, Stubber],
) -> None:
    judge, stub = stubbed
    with stub:  # no response queued: any call would fail the test
        same = judge("Backups run at 02:00.", "backups run at 02:00.", 1.0, False)
        far = judge("Lunch is at noon.", "The VPN needs 2FA.", 0.1, False)
    assert same.kind == "duplicate"
    assert far == Verdict(None, far.signals)


def test_a_failed_or_unreadable_answer_falls_back_to_the_rules(
    stubbed: tuple[BedrockJudge, Stubber],
) -> None:
    judge, stub = stubbed
    a, b = "Deploys are frozen on Fridays.", "Deploys are not frozen on Fridays."
    stub.add_client_error("converse", service_error_code="ThrottlingException")
    stub.add_response("converse", _answer("Maybe, it depends."))
    with stub:
        throttled = judge(a, b, 0.9, True)
        unreadable = judge(a, b, 0.9, True)
    assert throttled.kind == unreadable.kind == "conflict"  # the negation rule
    assert "model" not in throttled.signals


def test_the_curator_uses_the_model_only_when_one_is_configured(tmp_path: Path) -> None:
    try:
        runtime.configure(Settings(environment="test", storage="sqlite", data_dir=tmp_path))
        assert not isinstance(build_detector().judge_pair, BedrockJudge)
        runtime.configure(
            Settings(
                environment="test", storage="sqlite", data_dir=tmp_path, curator_model_id=MODEL
            )
        )
        assert isinstance(build_detector().judge_pair, BedrockJudge)
    finally:
        runtime.configure(Settings())
