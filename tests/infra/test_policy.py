"""Policy as code: cdk-nag clean, narrow suppressions, no wildcard actions, cfn-lint clean.

Each check is a helper that lists violations; the tests run it on the real templates (expecting
none) and on a small deliberately violating stack (expecting the violation), so a check that
could never fail would show.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack, Stage
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from infra.nag import suppress
from tests.infra.support import Synth, WorkflowsOnly, checked_stack, nag_findings

pytestmark = pytest.mark.infra

WILDCARD_SERVICES = ("dynamodb", "s3", "aoss", "es", "lambda", "secretsmanager", "kms", "sqs")
# Rules whose findings name the policy or the `Resource::…` they are about: a suppression of
# these must list them in `appliesTo`, never silence the rule for the whole resource.
APPLIES_TO_RULES = ("AwsSolutions-IAM4", "AwsSolutions-IAM5")
# Resource-based policies of the data services, by resource type: the property holding them.
RESOURCE_POLICIES = {
    "AWS::KMS::Key": "KeyPolicy",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
}
# `arn:<partition>:iam::<this account>:root`, as CDK writes the account principal.
ACCOUNT_ROOT = {
    "AWS": {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"],
        ]
    }
}
REASON = "A reason long enough for the reason check to pass."


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_cdk_nag_reports_no_unsuppressed_findings(synth: Synth) -> None:
    assert nag_findings(synth.stack) == []


def test_cdk_nag_reports_no_unsuppressed_findings_on_a_workflow_state_machine(
    workflows_stack: WorkflowsOnly,
) -> None:
    # The cairn stack has no state machine yet: this checks add_state_machine's suppressions.
    assert nag_findings(workflows_stack.stack) == []


@pytest.mark.parametrize("synthesized_before", [False, True])
def test_the_nag_findings_helper_reports_a_violating_resource(synthesized_before: bool) -> None:
    # Given a nag-checked stack with a queue that accepts plain-HTTP requests
    stack = checked_stack("Violating")
    sqs.Queue(stack, "PlainHttpQueue", encryption=sqs.QueueEncryption.SQS_MANAGED)
    if synthesized_before:  # as `synthesize` does: the helper then reads that synthesis
        stage = Stage.of(stack)
        assert stage is not None
        stage.synth()
    # When collecting findings the way the real test does
    findings = nag_findings(stack)
    # Then the missing TLS enforcement is reported
    assert any("AwsSolutions-SQS4" in f and "PlainHttpQueue" in f for f in findings), findings


def _suppressions(resources: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (logical_id, suppression)
        for logical_id, resource in resources.items()
        for suppression in (
            resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        )
    ]


def _blanket_iam_suppressions(resources: dict[str, dict[str, Any]]) -> list[str]:
    """IAM4/IAM5 suppressions without a non-empty `appliesTo` list of non-empty entries."""
    return [
        f"{logical_id}: {suppression['id']}"
        for logical_id, suppression in _suppressions(resources)
        if suppression["id"] in APPLIES_TO_RULES
        and not (suppression.get("applies_to") and all(suppression["applies_to"]))
    ]


@pytest.fixture(params=["dev", "prod", "workflows_stack"])
def checked_resources(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """The resources of every nag-checked template: both environments and the workflows stack."""
    built: Synth | WorkflowsOnly = request.getfixturevalue(request.param)
    if isinstance(built, Synth):
        return built.resources  # the template read once per session, not once per test
    resources: dict[str, dict[str, Any]] = built.template.to_json()["Resources"]
    return resources


def test_every_nag_suppression_gives_a_reason(
    checked_resources: dict[str, dict[str, Any]],
) -> None:
    suppressions = _suppressions(checked_resources)
    assert suppressions
    for logical_id, suppression in suppressions:
        assert len(suppression.get("reason", "")) >= 20, (logical_id, suppression)


def test_every_iam_suppression_names_the_findings_it_applies_to(
    checked_resources: dict[str, dict[str, Any]],
) -> None:
    assert any(s["id"] in APPLIES_TO_RULES for _, s in _suppressions(checked_resources))
    assert _blanket_iam_suppressions(checked_resources) == []


def test_a_blanket_iam_suppression_is_caught() -> None:
    # Given a role whose IAM5 findings are all suppressed, whatever they are
    stack = Stack()
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    suppress(role, "IAM5", REASON)
    # Then the check names it
    resources = Template.from_stack(stack).to_json()["Resources"]
    cfn_role = role.node.default_child
    assert isinstance(cfn_role, iam.CfnRole)
    assert _blanket_iam_suppressions(resources) == [
        f"{stack.resolve(cfn_role.logical_id)}: AwsSolutions-IAM5"
    ]


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
        for action in _list(statement["Action"]):
            assert action != "*", statement
            service, _, verb = action.partition(":")
            assert verb != "*", f"{action} in {json.dumps(statement)[:300]}"
            assert not (service in WILDCARD_SERVICES and "*" in verb), action


def _wildcard_resource_grants(resources: dict[str, dict[str, Any]]) -> list[str]:
    """Allow statements of data-service resource policies with a `*` or `service:*` action."""
    found: list[str] = []
    for logical_id, resource in resources.items():
        key = RESOURCE_POLICIES.get(resource["Type"])
        if key is None:
            continue
        for statement in resource["Properties"][key]["Statement"]:
            if statement["Effect"] != "Allow":
                continue  # Deny `s3:*`/`sqs:*` to `*` without TLS is the TLS-only guard
            wildcards = [a for a in _list(statement["Action"]) if a == "*" or a.endswith(":*")]
            if not wildcards:
                continue
            # The one exception: CDK's default key policy gives the account root `kms:*`, which
            # is what lets IAM policies grant use of the key at all (without it the key would
            # be unmanageable). Any other principal with `kms:*` is still a finding.
            if (
                resource["Type"] == "AWS::KMS::Key"
                and wildcards == ["kms:*"]
                and statement.get("Principal") == ACCOUNT_ROOT
            ):
                continue
            found.append(f"{logical_id}: {wildcards} to {json.dumps(statement.get('Principal'))}")
    return found


def test_no_data_resource_policy_grants_a_wildcard_action(synth: Synth) -> None:
    policies = {t for r in synth.resources.values() if (t := r["Type"]) in RESOURCE_POLICIES}
    assert {"AWS::KMS::Key", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy"} <= policies
    assert _wildcard_resource_grants(synth.resources) == []


def test_a_wildcard_resource_grant_is_caught_and_only_the_default_root_statement_passes() -> None:
    # Given a bucket and a key that grant every action of their service to someone
    stack = Stack()
    bucket = s3.Bucket(stack, "Bucket", enforce_ssl=True)
    bucket.add_to_resource_policy(
        iam.PolicyStatement(
            actions=["s3:*"],
            principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
            resources=[bucket.arn_for_objects("*")],
        )
    )
    key = kms.Key(stack, "Key")
    key.add_to_resource_policy(
        iam.PolicyStatement(
            actions=["kms:*"], principals=[iam.AccountPrincipal("222222222222")], resources=["*"]
        )
    )
    # When checking the template
    found = _wildcard_resource_grants(Template.from_stack(stack).to_json()["Resources"])
    # Then both grants are named, and the key's default account-root statement is not
    assert len(found) == 2, found
    assert any("s3:*" in f and "logging.s3" in f for f in found)
    assert any("kms:*" in f and "222222222222" in f for f in found)


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


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_cdk_nag_is_clean_when_the_cli_fixes_the_account_and_region(
    env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `cdk synth` / `cdk deploy` pass the caller's account and region, which resolves
    # `AWS::Region` / `AWS::AccountId` in ARNs to literals: a suppression that spells them as
    # `<AWS::Region>` no longer matches its finding and the deploy fails on nag.
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-east-1")
    from tests.infra.support import synthesize

    synth = synthesize(tmp_path, env=env)
    assert synth.stack.region == "us-east-1"
    assert nag_findings(synth.stack) == []
