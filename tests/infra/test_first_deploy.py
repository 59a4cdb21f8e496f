"""The before-first-deploy checks (infra/first_deploy.py): SNS on moto; CloudFormation's stack
resources and CodeDeploy's deployment groups through botocore stubs of their responses (moto
does not create a stack's custom resources or CodeDeploy groups)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra.first_deploy import (
    FAIL,
    PASS,
    SKIP,
    check_alarm_delivery,
    check_canary,
    check_index_template,
    check_oauth_audience,
    main,
    run_checks,
)
from shared.config import names
from tests.fake_aws import fake_aws

REGION = "us-east-1"
STACK = "cairn-staging"
MCP_URL = "https://d111.cloudfront.net/mcp"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.signature"


def _resource(cfn_type: str, physical: str, status: str = "CREATE_COMPLETE") -> dict[str, Any]:
    return {
        "StackName": STACK,
        "LogicalResourceId": physical.replace("-", ""),
        "PhysicalResourceId": physical,
        "ResourceType": cfn_type,
        "ResourceStatus": status,
        "Timestamp": "2026-11-28T00:00:00Z",
    }


def _stubbed_cloudformation(*responses: tuple[str, dict[str, Any]]) -> Any:
    client = boto3.client("cloudformation", region_name=REGION)
    stubber = Stubber(client)
    for method, response in responses:
        stubber.add_response(method, response)
    stubber.activate()
    return client


def _resources(*resources: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("describe_stack_resources", {"StackResources": list(resources)})


def test_the_index_template_passes_complete_and_fails_with_the_reason() -> None:
    done = _stubbed_cloudformation(_resources(_resource("Custom::SearchIndexTemplate", "t")))
    assert check_index_template(done, STACK).status == PASS
    failed = _resource("Custom::SearchIndexTemplate", "t", "CREATE_FAILED")
    failed["ResourceStatusReason"] = "403 from aoss: not in the data access policy"
    check = check_index_template(_stubbed_cloudformation(_resources(failed)), STACK)
    assert check.status == FAIL
    assert "403 from aoss" in check.detail


def test_the_oauth_audience_must_name_the_mcp_url_and_the_issuer() -> None:
    outputs = {names.Outputs.MCP_URL: MCP_URL, names.Outputs.OAUTH_ISSUER: ISSUER}
    assert check_oauth_audience({names.Outputs.MCP_URL: MCP_URL}, None).status == SKIP
    assert check_oauth_audience(outputs, None).status == SKIP
    good = _jwt({"iss": ISSUER, "aud": [MCP_URL], "client_id": "abc"})
    assert check_oauth_audience(outputs, good).status == PASS
    # What Cognito issues by default: client_id, no aud.
    cognito = check_oauth_audience(outputs, _jwt({"iss": ISSUER, "client_id": "abc"}))
    assert cognito.status == FAIL
    assert "client_id='abc'" in cognito.detail
    elsewhere = check_oauth_audience(outputs, _jwt({"iss": "https://other", "aud": MCP_URL}))
    assert elsewhere.status == FAIL
    assert "not the stack's issuer" in elsewhere.detail
    assert check_oauth_audience(outputs, "not-a-jwt").status == FAIL


@pytest.fixture
def sns() -> Iterator[Any]:
    with fake_aws(region=REGION):
        yield boto3.client("sns", region_name=REGION)


def test_alarm_delivery_needs_a_confirmed_subscription(sns: Any) -> None:
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    outputs = {names.Outputs.ALARM_TOPIC: topic}
    none = check_alarm_delivery(sns, outputs)
    assert (none.status, "alarm_email" in none.detail) == (FAIL, True)
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint="arn:aws:sqs:us-east-1:1:oncall")
    assert check_alarm_delivery(sns, outputs).status == PASS


def test_alarm_delivery_fails_while_the_subscription_is_pending() -> None:
    client = boto3.client("sns", region_name=REGION)
    stubber = Stubber(client)
    pending = {
        "SubscriptionArn": "PendingConfirmation",
        "Owner": "1",
        "Protocol": "email",
        "Endpoint": "oncall@example.com",
        "TopicArn": "arn:aws:sns:us-east-1:1:alarms",
    }
    stubber.add_response("list_subscriptions_by_topic", {"Subscriptions": [pending]})
    stubber.activate()
    check = check_alarm_delivery(client, {names.Outputs.ALARM_TOPIC: pending["TopicArn"]})
    assert (check.status, "none confirmed" in check.detail) == (FAIL, True)


def _stubbed_codedeploy(last: dict[str, Any] | None) -> Any:
    client = boto3.client("codedeploy", region_name=REGION)
    stubber = Stubber(client)
    info: dict[str, Any] = {
        "deploymentConfigName": "CodeDeployDefault.LambdaCanary10Percent5Minutes"
    }
    if last is not None:
        info["lastAttemptedDeployment"] = last
    stubber.add_response("get_deployment_group", {"deploymentGroupInfo": info})
    stubber.activate()
    return client


def _canary_stack() -> Any:
    listed = _resources(
        _resource("AWS::CodeDeploy::DeploymentGroup", "gateway-rollout"),
        _resource("AWS::CodeDeploy::Application", "cairn-app"),
    )
    return _stubbed_cloudformation(listed, listed)


def test_the_canary_passes_when_its_last_deployment_succeeded() -> None:
    ok = check_canary(
        _canary_stack(), _stubbed_codedeploy({"deploymentId": "d-1", "status": "Succeeded"}), STACK
    )
    assert ok.status == PASS
    rolled_back = check_canary(
        _canary_stack(), _stubbed_codedeploy({"deploymentId": "d-2", "status": "Stopped"}), STACK
    )
    assert (rolled_back.status, "Stopped" in rolled_back.detail) == (FAIL, True)
    assert check_canary(_canary_stack(), _stubbed_codedeploy(None), STACK).status == SKIP


class _Session:
    def __init__(self, **clients: Any) -> None:
        self._clients = clients

    def client(self, service: str) -> Any:
        return self._clients[service]


def test_run_checks_prints_each_and_fails_the_run_on_a_failure(
    sns: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    outputs = [
        {"OutputKey": names.Outputs.MCP_URL, "OutputValue": MCP_URL},
        {"OutputKey": names.Outputs.ALARM_TOPIC, "OutputValue": topic},
    ]
    described = {
        "Stacks": [
            {
                "StackName": STACK,
                "CreationTime": "2026-11-28T00:00:00Z",
                "StackStatus": "CREATE_COMPLETE",
                "Outputs": outputs,
            }
        ]
    }
    resources = _resources(
        _resource("Custom::SearchIndexTemplate", "t"),
        _resource("AWS::CodeDeploy::DeploymentGroup", "gateway-rollout"),
        _resource("AWS::CodeDeploy::Application", "cairn-app"),
    )
    cloudformation = _stubbed_cloudformation(
        ("describe_stacks", described), resources, resources, resources
    )
    session = _Session(
        cloudformation=cloudformation,
        sns=sns,
        codedeploy=_stubbed_codedeploy({"deploymentId": "d-1", "status": "Succeeded"}),
    )
    checks = run_checks(session, STACK)
    assert [(c.name, c.status) for c in checks] == [
        ("index template", PASS),
        ("oauth audience", SKIP),
        ("alarm delivery", FAIL),  # no subscription yet
        ("canary", PASS),
    ]
    monkeypatch.setattr(
        "boto3.session.Session",
        lambda **_: _Session(
            cloudformation=_stubbed_cloudformation(
                ("describe_stacks", described), resources, resources, resources
            ),
            sns=sns,
            codedeploy=_stubbed_codedeploy({"deploymentId": "d-1", "status": "Succeeded"}),
        ),
    )
    assert main(["--stack", STACK]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "PASS index template: the custom resource is CREATE_COMPLETE"
    assert printed[-1] == "3 of 4 passed or skipped, 1 failed"
