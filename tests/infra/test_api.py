"""API: REST API routes to the gateway alias, logging, throttling, domain and WAF."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from infra.api import STAGE
from tests.infra.support import RETENTION_DAYS, Synth

pytestmark = pytest.mark.infra


def _routes(synth: Synth) -> set[tuple[str, str]]:
    """(HTTP method, full path) of every method, rebuilt from the resource tree."""
    resources = synth.of_type("AWS::ApiGateway::Resource")
    api_id = synth.logical_id(synth.stack.api.rest_api)

    def path(ref: dict) -> str:
        if "Fn::GetAtt" in ref:  # the root resource
            assert ref["Fn::GetAtt"] == [api_id, "RootResourceId"]
            return ""
        props = resources[ref["Ref"]]["Properties"]
        return f"{path(props['ParentId'])}/{props['PathPart']}"

    return {
        (m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"]) or "/")
        for m in synth.of_type("AWS::ApiGateway::Method").values()
    }


def test_the_api_exposes_mcp_and_the_protected_resource_metadata(synth: Synth) -> None:
    assert _routes(synth) == {
        ("POST", "/mcp"),
        ("GET", "/mcp"),
        ("DELETE", "/mcp"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        # Seed 003's capture routes (infra/knowledge.py), to the gateway as well.
        ("POST", "/ingest/events"),
        ("POST", "/hooks/github/{team}"),
        # The web console (shared/console): pages, static files and form posts.
        ("GET", "/console"),
        ("GET", "/console/{proxy+}"),
        ("POST", "/console/{proxy+}"),
    }


def test_every_route_proxies_to_the_gateway_alias_without_an_authorizer(synth: Synth) -> None:
    alias = next(iter(synth.of_type("AWS::Lambda::Alias")))
    for method in synth.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        assert props["AuthorizationType"] == "NONE"  # the gateway authenticates (MCP errors)
        assert props["Integration"]["Type"] == "AWS_PROXY"
        assert alias in json.dumps(props["Integration"]["Uri"])


def test_the_stage_logs_access_traces_and_throttles(synth: Synth) -> None:
    synth.template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": STAGE,
            "TracingEnabled": True,
            "AccessLogSetting": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp("requestId"),
            },
            "MethodSettings": Match.array_with(
                [
                    Match.object_like(
                        {
                            "HttpMethod": "*",
                            "ResourcePath": "/*",
                            "LoggingLevel": "ERROR",
                            "DataTraceEnabled": False,
                            "ThrottlingRateLimit": 50,
                            "ThrottlingBurstLimit": 100,
                        }
                    )
                ]
            ),
        },
    )


@pytest.mark.parametrize(("env", "days"), RETENTION_DAYS.items())
def test_access_logs_go_to_a_log_group_kept_as_long_as_the_environment_says(
    request: pytest.FixtureRequest, env: str, days: int
) -> None:
    synth: Synth = request.getfixturevalue(env)
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    destination = json.dumps(stage["Properties"]["AccessLogSetting"]["DestinationArn"])
    (log_group,) = (
        group
        for logical_id, group in synth.of_type("AWS::Logs::LogGroup").items()
        if json.dumps({"Ref": logical_id}) in destination
    )
    assert log_group["Properties"]["RetentionInDays"] == days


def test_access_logs_never_include_the_authorization_header(synth: Synth) -> None:
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    log_format = stage["Properties"]["AccessLogSetting"]["Format"].lower()
    assert "authorization" not in log_format
    assert "requestbody" not in log_format


def test_dev_has_no_waf_or_custom_domain(dev: Synth) -> None:
    dev.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    dev.template.resource_count_is("AWS::ApiGateway::DomainName", 0)


def test_prod_puts_a_waf_acl_with_a_rate_rule_on_the_stage(prod: Synth) -> None:
    (acl_id, acl) = next(iter(prod.of_type("AWS::WAFv2::WebACL").items()))
    assert acl["Properties"]["Scope"] == "REGIONAL"
    assert any("RateBasedStatement" in r["Statement"] for r in acl["Properties"]["Rules"])
    (association,) = prod.of_type("AWS::WAFv2::WebACLAssociation").values()
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    stage = next(iter(prod.of_type("AWS::ApiGateway::Stage")))
    assert stage in json.dumps(association["Properties"]["ResourceArn"])


def test_the_waf_logs_what_it_blocks_without_the_authorization_header(prod: Synth) -> None:
    (acl_id, _) = next(iter(prod.of_type("AWS::WAFv2::WebACL").items()))
    (logging,) = prod.of_type("AWS::WAFv2::LoggingConfiguration").values()
    assert logging["Properties"]["ResourceArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert logging["Properties"]["RedactedFields"] == [{"SingleHeader": {"Name": "authorization"}}]
    waf_groups = [
        group
        for group in prod.of_type("AWS::Logs::LogGroup").values()
        if "aws-waf-logs-" in json.dumps(group["Properties"].get("LogGroupName", ""))
    ]
    assert len(waf_groups) == 1
    name = json.dumps(waf_groups[0]["Properties"]["LogGroupName"])
    # Suffixed with the stack's own id: a retained group never blocks re-creating the stack.
    assert "AWS::StackId" in name
    assert waf_groups[0]["Properties"]["RetentionInDays"] == RETENTION_DAYS["prod"]


def test_the_account_level_cloudwatch_role_outlives_any_one_stack(synth: Synth) -> None:
    roles = [
        resource
        for logical_id, resource in synth.of_type("AWS::IAM::Role").items()
        if "CloudWatchRole" in logical_id
    ]
    assert len(roles) == 1
    assert roles[0]["DeletionPolicy"] == "Retain"


def test_a_configured_custom_domain_maps_to_the_stage_with_an_alias_record(prod: Synth) -> None:
    prod.template.has_resource_properties(
        "AWS::ApiGateway::DomainName",
        {"DomainName": "mcp.example.com", "SecurityPolicy": "TLS_1_2"},
    )
    prod.template.resource_count_is("AWS::ApiGateway::BasePathMapping", 1)
    prod.template.has_resource_properties(
        "AWS::Route53::RecordSet", {"Name": "mcp.example.com.", "Type": "A"}
    )
