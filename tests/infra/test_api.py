"""API: an HTTP API in dev, a REST API behind the WAF in prod; routes to the gateway alias,
logging, throttling, domain, WAF, X-Ray sampling, and what every function logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.api import STAGE, XRAY_FIXED_RATE
from infra.config import ConfigError, DeployConfig
from tests.infra.support import RETENTION_DAYS, Synth, synthesize

pytestmark = pytest.mark.infra

EXPECTED_ROUTES = {
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


def _rest_routes(synth: Synth) -> set[tuple[str, str]]:
    """(HTTP method, full path) of every REST method, rebuilt from the resource tree."""
    resources = synth.of_type("AWS::ApiGateway::Resource")
    assert synth.stack.api.rest_api is not None
    api_id = synth.logical_id(synth.stack.api.rest_api)

    def path(ref: dict[str, Any]) -> str:
        if "Fn::GetAtt" in ref:  # the root resource
            assert ref["Fn::GetAtt"] == [api_id, "RootResourceId"]
            return ""
        props = resources[ref["Ref"]]["Properties"]
        return f"{path(props['ParentId'])}/{props['PathPart']}"

    return {
        (m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"]) or "/")
        for m in synth.of_type("AWS::ApiGateway::Method").values()
    }


def _http_routes(synth: Synth) -> set[tuple[str, str]]:
    routes = synth.of_type("AWS::ApiGatewayV2::Route").values()
    return {tuple(r["Properties"]["RouteKey"].split(" ", 1)) for r in routes}  # type: ignore[misc]


def test_dev_gets_an_http_api_and_prod_a_rest_api(dev: Synth, prod: Synth) -> None:
    # $1.00 against $3.50 per million requests; prod's WAF needs a REST stage (docs/infra.md).
    assert dev.stack.api.kind == "http"
    dev.template.resource_count_is("AWS::ApiGateway::RestApi", 0)
    dev.template.has_resource_properties("AWS::ApiGatewayV2::Api", {"ProtocolType": "HTTP"})
    assert prod.stack.api.kind == "rest"
    prod.template.resource_count_is("AWS::ApiGatewayV2::Api", 0)


def test_the_api_exposes_mcp_and_the_protected_resource_metadata(synth: Synth) -> None:
    routes = _rest_routes(synth) if synth.stack.api.kind == "rest" else _http_routes(synth)
    assert routes == EXPECTED_ROUTES


def test_every_rest_route_proxies_to_the_gateway_alias_without_an_authorizer(prod: Synth) -> None:
    alias = next(iter(prod.of_type("AWS::Lambda::Alias")))
    for method in prod.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        assert props["AuthorizationType"] == "NONE"  # the gateway authenticates (MCP errors)
        assert props["Integration"]["Type"] == "AWS_PROXY"
        assert alias in json.dumps(props["Integration"]["Uri"])


def test_every_http_route_proxies_to_the_gateway_alias_without_an_authorizer(dev: Synth) -> None:
    alias = next(iter(dev.of_type("AWS::Lambda::Alias")))
    ((integration_id, integration),) = dev.of_type("AWS::ApiGatewayV2::Integration").items()
    assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
    assert alias in json.dumps(integration["Properties"]["IntegrationUri"])
    for route in dev.of_type("AWS::ApiGatewayV2::Route").values():
        props = route["Properties"]
        assert props.get("AuthorizationType", "NONE") == "NONE"
        assert integration_id in json.dumps(props["Target"])
    # One invoke permission for the API, not one per route.
    permissions = [
        p
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert len(permissions) == 1


def test_the_rest_stage_logs_access_traces_and_throttles(prod: Synth) -> None:
    prod.template.has_resource_properties(
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


def test_the_http_stage_logs_access_and_throttles(dev: Synth) -> None:
    dev.template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "AccessLogSettings": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp("requestId"),
            },
            "DefaultRouteSettings": {"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100},
        },
    )


def _stage_log_settings(synth: Synth) -> dict[str, Any]:
    if synth.stack.api.kind == "rest":
        (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
        settings: dict[str, Any] = stage["Properties"]["AccessLogSetting"]
    else:
        (stage,) = synth.of_type("AWS::ApiGatewayV2::Stage").values()
        settings = stage["Properties"]["AccessLogSettings"]
    return settings


@pytest.mark.parametrize(("env", "days"), RETENTION_DAYS.items())
def test_access_logs_go_to_a_log_group_kept_as_long_as_the_environment_says(
    request: pytest.FixtureRequest, env: str, days: int
) -> None:
    synth: Synth = request.getfixturevalue(env)
    destination = json.dumps(_stage_log_settings(synth)["DestinationArn"])
    (log_group,) = (
        group
        for logical_id, group in synth.of_type("AWS::Logs::LogGroup").items()
        if json.dumps([logical_id, "Arn"]) in destination
        or json.dumps({"Ref": logical_id}) in destination
    )
    assert log_group["Properties"]["RetentionInDays"] == days


def test_access_logs_never_include_the_authorization_header(synth: Synth) -> None:
    log_format = _stage_log_settings(synth)["Format"].lower()
    assert "authorization" not in log_format
    assert "requestbody" not in log_format


def test_dev_has_no_waf_or_custom_domain(dev: Synth) -> None:
    dev.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    dev.template.resource_count_is("AWS::ApiGateway::DomainName", 0)
    dev.template.resource_count_is("AWS::ApiGatewayV2::DomainName", 0)


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


def _cloudwatch_roles(synth: Synth) -> list[dict[str, Any]]:
    return [
        resource
        for logical_id, resource in synth.of_type("AWS::IAM::Role").items()
        if "CloudWatchRole" in logical_id
    ]


def test_the_account_level_cloudwatch_role_outlives_any_one_stack(prod: Synth) -> None:
    (role,) = _cloudwatch_roles(prod)
    assert role["DeletionPolicy"] == "Retain"


def test_an_http_api_stack_never_touches_the_account_level_cloudwatch_role(dev: Synth) -> None:
    assert _cloudwatch_roles(dev) == []
    dev.template.resource_count_is("AWS::ApiGateway::Account", 0)


def test_a_configured_custom_domain_maps_to_the_stage_with_an_alias_record(prod: Synth) -> None:
    prod.template.has_resource_properties(
        "AWS::ApiGateway::DomainName",
        {"DomainName": "mcp.example.com", "SecurityPolicy": "TLS_1_2"},
    )
    prod.template.resource_count_is("AWS::ApiGateway::BasePathMapping", 1)
    prod.template.has_resource_properties(
        "AWS::Route53::RecordSet", {"Name": "mcp.example.com.", "Type": "A"}
    )


def test_an_http_api_maps_a_custom_domain_with_an_alias_record(tmp_path: Path) -> None:
    synth = synthesize(
        tmp_path,
        env="staging",
        domain_name="mcp.staging.example.com",
        certificate_arn="arn:aws:acm:us-east-1:111111111111:certificate/example",
        hosted_zone_id="Z0000000000EXAMPLE",
        hosted_zone_name="example.com",
    )

    assert synth.stack.api.kind == "http"
    synth.template.has_resource_properties(
        "AWS::ApiGatewayV2::DomainName", {"DomainName": "mcp.staging.example.com"}
    )
    synth.template.resource_count_is("AWS::ApiGatewayV2::ApiMapping", 1)
    synth.template.has_resource_properties(
        "AWS::Route53::RecordSet", {"Name": "mcp.staging.example.com.", "Type": "A"}
    )
    assert synth.stack.api.mcp_url == "https://mcp.staging.example.com/mcp"


def test_xray_samples_five_percent_of_requests_by_a_rule_of_the_stacks_own(
    dev: Synth, prod: Synth
) -> None:
    # Prod: the REST stage starts each trace and passes its decision down to the functions.
    (rest,) = prod.of_type("AWS::XRay::SamplingRule").values()
    rule = rest["Properties"]["SamplingRule"]
    assert (rule["FixedRate"], rule["ReservoirSize"]) == (XRAY_FIXED_RATE, 0)
    assert rule["ServiceType"] == "AWS::ApiGateway::Stage"
    assert rule["ServiceName"] == f"cairn-prod/{STAGE}"
    # Dev: an HTTP API has no X-Ray; the gateway function starts the trace.
    (http,) = dev.of_type("AWS::XRay::SamplingRule").values()
    rule = http["Properties"]["SamplingRule"]
    assert (rule["FixedRate"], rule["ReservoirSize"]) == (XRAY_FIXED_RATE, 0)
    assert rule["ServiceType"] == "AWS::Lambda::Function"
    assert rule["ServiceName"] == {"Ref": dev.functions()["gateway"]}


@pytest.mark.parametrize(("env", "level"), [("dev", "INFO"), ("prod", "WARN")])
def test_every_function_logs_json_at_its_environments_level_without_platform_lines(
    request: pytest.FixtureRequest, env: str, level: str
) -> None:
    synth: Synth = request.getfixturevalue(env)
    for name, logical_id in synth.functions().items():
        props = synth.resources[logical_id]["Properties"]
        logging = props["LoggingConfig"]
        assert logging["LogFormat"] == "JSON", name
        assert logging["ApplicationLogLevel"] == level, name
        # START/END/REPORT (INFO) are dropped; the Duration metric says what REPORT said.
        assert logging["SystemLogLevel"] == "WARN", name
        assert "LogGroup" in logging, name  # the function's own log group is kept
        assert props["Environment"]["Variables"]["LOG_LEVEL"] == level, name


def test_every_function_has_a_throttles_alarm(synth: Synth) -> None:
    # Each tool call holds two concurrent executions (gateway + group): a throttle is a
    # concurrency quota reached (docs/infra.md, "Concurrency").
    alarms = [
        a["Properties"]
        for a in synth.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Throttles"
    ]
    alarmed = {
        json.dumps(d["Value"])
        for a in alarms
        for d in a["Dimensions"]
        if d["Name"] == "FunctionName"
    }
    for name, logical_id in synth.functions().items():
        assert json.dumps({"Ref": logical_id}) in alarmed, name
    assert all(a["Threshold"] == 1 and a["AlarmActions"] for a in alarms)


def test_api_context_picks_rest_for_a_waf_and_refuses_http_with_one() -> None:
    def config(**context: object) -> DeployConfig:
        return DeployConfig.from_context(context.get)

    assert config(developer="a").api == "http"
    assert config(env="prod").api == "rest"
    assert config(env="prod", waf="false").api == "http"
    assert config(developer="a", waf_acl_arn="arn:aws:wafv2:x").api == "rest"
    assert config(developer="a", api="rest").api == "rest"
    with pytest.raises(ConfigError, match="`api=http` cannot carry a WAF"):
        config(env="prod", api="http")
    with pytest.raises(ConfigError, match="`api` must be http or rest"):
        config(developer="a", api="graphql")
