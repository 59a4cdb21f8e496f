"""Policy as code: cdk-nag clean, no wildcard actions, cfn-lint clean."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from tests.infra.support import Synth

pytestmark = pytest.mark.infra

WILDCARD_SERVICES = ("dynamodb", "s3", "aoss", "es", "lambda", "secretsmanager", "kms", "sqs")


def _findings(synth: Synth) -> list[str]:
    annotations = Annotations.from_stack(synth.stack)
    pattern = Match.string_like_regexp("AwsSolutions-.*")
    messages = annotations.find_error("*", pattern) + annotations.find_warning("*", pattern)
    return [f"{m.id}: {str(m.entry.data)[:200]}" for m in messages]


def test_cdk_nag_reports_no_unsuppressed_findings(synth: Synth) -> None:
    assert _findings(synth) == []


def test_every_nag_suppression_gives_a_reason(synth: Synth) -> None:
    for logical_id, resource in synth.resources.items():
        for suppression in (
            resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        ):
            assert len(suppression.get("reason", "")) >= 20, (logical_id, suppression)


def _identity_statements(synth: Synth) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for resource in synth.resources.values():
        props = resource.get("Properties", {})
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            statements += props["PolicyDocument"]["Statement"]
        if resource["Type"] == "AWS::IAM::Role":
            for policy in props.get("Policies", []):
                statements += policy["PolicyDocument"]["Statement"]
    return statements


def test_no_identity_policy_allows_a_wildcard_action(synth: Synth) -> None:
    statements = _identity_statements(synth)
    assert statements
    for statement in statements:
        if statement["Effect"] != "Allow":
            continue
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        for action in actions:
            assert action != "*", statement
            service, _, verb = action.partition(":")
            assert verb != "*", f"{action} in {json.dumps(statement)[:300]}"
            assert not (service in WILDCARD_SERVICES and "*" in verb), action


def test_cfn_lint_passes_on_the_synthesized_templates(dev: Synth, prod: Synth) -> None:
    templates = [str(p) for s in (dev, prod) for p in Path(s.outdir).glob("*.template.json")]
    assert len(templates) == 2
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), *templates],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
