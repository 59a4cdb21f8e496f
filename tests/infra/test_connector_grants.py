"""The buckets and token secrets connectors may read: only those the deployment names (context
`connector_buckets`, `connector_secrets`), granted to the functions that run connectors; none
by default. Only the Sync construct, in a nag-checked stack of its own (a fast synth); the
stack wires it to the sync group and the runner (infra/stack.py)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from infra.config import ConfigError, DeployConfig
from infra.nag import add_checks
from infra.sync import Sync
from tests.infra.support import nag_findings

SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:handbook-token-AbCdEf"


def _granted(buckets: tuple[str, ...], secrets: tuple[str, ...]) -> tuple[Stack, str]:
    app = App()
    add_checks(app)
    stack = Stack(app, "Connectors")
    functions = [
        lambda_.Function(
            stack,
            name,
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(e, c): return {}"),
        )
        for name in ("SyncGroup", "Runner")
    ]
    sync = Sync(stack, "Sync", config=DeployConfig(environment="dev", developer="tester"))
    sync.allow_connectors(functions, buckets=buckets, secrets=secrets)
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return stack, json.dumps(policies)


def test_the_named_buckets_and_secrets_only_are_granted() -> None:
    stack, policies = _granted(("acme-wiki", "acme-docs"), (SECRET,))

    for bucket in ("acme-wiki", "acme-docs"):
        assert f":s3:::{bucket}/*" in policies
        assert f':s3:::{bucket}"' in policies
    assert policies.count(SECRET) == 2  # the sync group and the runner
    assert "s3:*" not in policies
    assert '"Resource": "*"' not in policies
    assert [f for f in nag_findings(stack) if "IAM5" in f] == []


def test_no_connector_grant_by_default() -> None:
    _, policies = _granted((), ())
    assert "s3:GetObject" not in policies
    assert "secretsmanager" not in policies


def test_a_bad_bucket_or_secret_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="connector_buckets"):
        DeployConfig.from_context({"connector_buckets": "Bad_Bucket!"}.get)
    with pytest.raises(ConfigError, match="connector_secrets"):
        DeployConfig.from_context({"connector_secrets": "not-an-arn"}.get)
    config = DeployConfig.from_context({"connector_buckets": "a-b,c.d"}.get)
    assert config.connector_buckets == ("a-b", "c.d")
