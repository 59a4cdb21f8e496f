"""The buckets and token secrets connectors may read: only those the deployment names (context
`connector_buckets`, `connector_secrets`), granted to the sync group and the runner; none by
default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.config import ConfigError, DeployConfig
from shared.config import names
from tests.infra.support import Synth, nag_findings, synthesize

SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:handbook-token-AbCdEf"


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        tmp_path_factory.mktemp("cdk-connectors"),
        env="dev",
        developer="tester",
        connector_buckets="acme-wiki, acme-docs",
        connector_secrets=SECRET,
    )


def _connector_statements(synth: Synth, function: str) -> list[dict[str, object]]:
    """The function's statements on the connectors' buckets or secret."""
    return [
        s
        for s in synth.statements_of(function)
        if "s3:::acme-" in json.dumps(s["Resource"]) or SECRET in json.dumps(s["Resource"])
    ]


def test_the_named_buckets_and_secrets_only_are_granted_to_both_sync_functions(
    granted: Synth,
) -> None:
    for function in (names.GROUP_SYNC, names.WORKER_SYNC_RUNNER):
        statements = _connector_statements(granted, function)
        text = json.dumps(statements)
        assert "s3:::acme-wiki/*" in text
        assert "s3:::acme-docs" in text
        assert SECRET in text
        for statement in statements:
            assert "*" not in json.dumps(statement["Resource"]).replace("/*", "")
    assert nag_findings(granted.stack) == []


def test_no_connector_grant_by_default(dev: Synth) -> None:
    for function in (names.GROUP_SYNC, names.WORKER_SYNC_RUNNER):
        assert _connector_statements(dev, function) == []


def test_a_bad_bucket_or_secret_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="connector_buckets"):
        DeployConfig.from_context({"connector_buckets": "Bad_Bucket!"}.get)
    with pytest.raises(ConfigError, match="connector_secrets"):
        DeployConfig.from_context({"connector_secrets": "not-an-arn"}.get)
    config = DeployConfig.from_context({"connector_buckets": "a-b,c.d"}.get)
    assert config.connector_buckets == ("a-b", "c.d")
