"""Many developers, one account: every dev stack is one developer's, and a region holds 10
CloudWatch Logs resource policies. Twelve dev stacks in one app add none between them."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.config import DeployConfig
from infra.stack import CairnStack
from tests.infra.support import ROOT

# Twelve whole stacks: minutes on the build machine.
pytestmark = pytest.mark.bench

DEVELOPERS = 12
ACCOUNT_LOG_RESOURCE_POLICIES = 10


def test_twelve_dev_stacks_stay_under_the_accounts_log_resource_policy_limit(
    tmp_path: Path,
) -> None:
    flags = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(context={**flags, "bundle": "false"}, outdir=str(tmp_path))
    stacks = []
    for number in range(DEVELOPERS):
        developer = f"developer{number}"
        context = {"env": "dev", "developer": developer, "bundle": "false"}
        config = DeployConfig.from_context(context.get)
        stacks.append(
            CairnStack(app, config.stack_name, config=config, stack_name=config.stack_name)
        )
    policies = [
        logical_id
        for stack in stacks
        for logical_id, resource in Template.from_stack(stack).to_json()["Resources"].items()
        if resource["Type"] == "AWS::Logs::ResourcePolicy"
    ]
    assert len({stack.stack_name for stack in stacks}) == DEVELOPERS
    assert len(policies) < ACCOUNT_LOG_RESOURCE_POLICIES
    assert policies == []
