"""API: an HTTP API in dev; in prod CloudFront carrying the WAF in front of the gateway alias's
function URL (or, with api=cloudfront, of an HTTP API; with api=rest, a REST API with the WAF on
its stage); routes to the gateway alias, logging, throttling, domain, WAF, X-Ray sampling, and
what every function logs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template

from infra.api import CONSOLE_PATHS, EDGE_REGION, FORWARD_HOST_JS, STAGE, XRAY_FIXED_RATE, Api
from infra.config import ConfigError, DeployConfig
from infra.nag import add_checks
from shared.auth.origin import ORIGIN_HEADER
from shared.config import names
from tests.infra.support import PROD_EXTRAS, RETENTION_DAYS, Synth, nag_findings, synthesize

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def edge_http(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Prod with `-c api=cloudfront`: the HTTP API behind CloudFront and its WAF."""
    return synthesize(
        tmp_path_factory.mktemp("cdk-edge-http"), env="prod", api="cloudfront", **PROD_EXTRAS
    )


@pytest.fixture(params=["dev", "edge_http"])
def synth(request: pytest.FixtureRequest) -> Synth:
    """Each API Gateway front in turn (prod's function URL has no routes or stage)."""
    result: Synth = request.getfixturevalue(request.param)
    return result


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Prod with `-c api=rest`: the REST API with the regional WAF on its stage."""
    return synthesize(tmp_path_factory.mktemp("cdk-rest"), env="prod", api="rest", **PROD_EXTRAS)


EXPECTED_ROUTES = {
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    # A toolset per connection (docs/toolsets.md) and its RFC 9728 metadata.
    ("POST", "/mcp/{toolset}"),
    ("GET", "/mcp/{toolset}"),
    ("DELETE", "/mcp/{toolset}"),
    ("GET", "/.well-known/oauth-protected-resource/mcp/{toolset}"),
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
    return {tuple(r["Properties"]["RouteKey"].split(" ", 1)) for r in routes}


def test_dev_gets_an_http_api_and_prod_cloudfront_to_the_gateways_function_url(
    dev: Synth, prod: Synth, edge_http: Synth, rest: Synth
) -> None:
    # $1.00 per million requests; prod pays CloudFront's $1.00 for its WAF and no API Gateway,
    # against $2.00 with an HTTP API behind CloudFront and a REST API's $3.50
    # (docs/infra/api-and-auth.md).
    assert (dev.stack.api.kind, dev.stack.api.front) == ("http", "direct")
    dev.template.resource_count_is("AWS::ApiGateway::RestApi", 0)
    dev.template.resource_count_is("AWS::CloudFront::Distribution", 0)
    dev.template.resource_count_is("AWS::Lambda::Url", 0)
    dev.template.has_resource_properties("AWS::ApiGatewayV2::Api", {"ProtocolType": "HTTP"})
    assert (prod.stack.api.kind, prod.stack.api.front) == ("url", "cloudfront")
    prod.template.resource_count_is("AWS::ApiGateway::RestApi", 0)
    prod.template.resource_count_is("AWS::ApiGatewayV2::Api", 0)
    prod.template.resource_count_is("AWS::CloudFront::Distribution", 1)
    assert (edge_http.stack.api.kind, edge_http.stack.api.front) == ("http", "cloudfront")
    edge_http.template.resource_count_is("AWS::Lambda::Url", 0)
    assert rest.stack.api.kind == "rest"
    rest.template.resource_count_is("AWS::ApiGatewayV2::Api", 0)


def test_the_api_exposes_mcp_and_the_protected_resource_metadata(synth: Synth) -> None:
    routes = _rest_routes(synth) if synth.stack.api.kind == "rest" else _http_routes(synth)
    assert routes == EXPECTED_ROUTES


def test_every_rest_route_proxies_to_the_gateway_alias_without_an_authorizer(rest: Synth) -> None:
    alias = next(iter(rest.of_type("AWS::Lambda::Alias")))
    for method in rest.of_type("AWS::ApiGateway::Method").values():
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


def test_the_rest_stage_logs_access_traces_and_throttles(rest: Synth) -> None:
    rest.template.has_resource_properties(
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


@pytest.mark.parametrize(
    ("front", "days"), [("dev", RETENTION_DAYS["dev"]), ("edge_http", RETENTION_DAYS["prod"])]
)
def test_access_logs_go_to_a_log_group_kept_as_long_as_the_environment_says(
    request: pytest.FixtureRequest, front: str, days: int
) -> None:
    synth: Synth = request.getfixturevalue(front)
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


def test_a_rest_api_puts_a_waf_acl_with_a_rate_rule_on_the_stage(rest: Synth) -> None:
    (acl_id, acl) = next(iter(rest.of_type("AWS::WAFv2::WebACL").items()))
    assert acl["Properties"]["Scope"] == "REGIONAL"
    assert any("RateBasedStatement" in r["Statement"] for r in acl["Properties"]["Rules"])
    (association,) = rest.of_type("AWS::WAFv2::WebACLAssociation").values()
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    stage = next(iter(rest.of_type("AWS::ApiGateway::Stage")))
    assert stage in json.dumps(association["Properties"]["ResourceArn"])


def test_the_waf_logs_what_it_blocks_without_the_authorization_header(rest: Synth) -> None:
    (acl_id, _) = next(iter(rest.of_type("AWS::WAFv2::WebACL").items()))
    (logging,) = rest.of_type("AWS::WAFv2::LoggingConfiguration").values()
    assert logging["Properties"]["ResourceArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert logging["Properties"]["RedactedFields"] == [{"SingleHeader": {"Name": "authorization"}}]
    # Only the blocked and counted requests: allowed ones would cost log ingestion per call.
    log_filter = logging["Properties"]["LoggingFilter"]
    assert log_filter["DefaultBehavior"] == "DROP"
    (keep,) = log_filter["Filters"]
    assert keep["Behavior"] == "KEEP"
    actions = {c["ActionCondition"]["Action"] for c in keep["Conditions"]}
    assert actions == {"BLOCK", "COUNT"}
    waf_groups = [
        group
        for group in rest.of_type("AWS::Logs::LogGroup").values()
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


def test_the_account_level_cloudwatch_role_outlives_any_one_stack(rest: Synth) -> None:
    (role,) = _cloudwatch_roles(rest)
    assert role["DeletionPolicy"] == "Retain"


def test_an_http_api_stack_never_touches_the_account_level_cloudwatch_role(dev: Synth) -> None:
    assert _cloudwatch_roles(dev) == []
    dev.template.resource_count_is("AWS::ApiGateway::Account", 0)


def test_a_configured_custom_domain_maps_to_the_stage_with_an_alias_record(rest: Synth) -> None:
    rest.template.has_resource_properties(
        "AWS::ApiGateway::DomainName",
        {"DomainName": "mcp.example.com", "SecurityPolicy": "TLS_1_2"},
    )
    rest.template.resource_count_is("AWS::ApiGateway::BasePathMapping", 1)
    rest.template.has_resource_properties(
        "AWS::Route53::RecordSet", {"Name": "mcp.example.com.", "Type": "A"}
    )


def test_an_http_api_maps_a_custom_domain_with_an_alias_record(tmp_path: Path) -> None:
    synth = synthesize(
        tmp_path,
        env="staging",
        waf="false",  # staging's default is prod's front; this is the plain HTTP API's domain
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


def test_xray_samples_five_percent_of_a_rest_stages_requests_by_a_rule_of_the_stacks_own(
    dev: Synth, rest: Synth
) -> None:
    # A REST API: its stage starts each trace and passes its decision down to the functions.
    (stage_rule,) = rest.of_type("AWS::XRay::SamplingRule").values()
    rule = stage_rule["Properties"]["SamplingRule"]
    assert (rule["FixedRate"], rule["ReservoirSize"]) == (XRAY_FIXED_RATE, 0)
    assert rule["ServiceType"] == "AWS::ApiGateway::Stage"
    assert rule["ServiceName"] == f"cairn-prod/{STAGE}"
    # Dev: an HTTP API has no X-Ray; the gateway function starts the trace, sampled by Lambda
    # at its fixed rate, which no rule changes: none is made.
    assert dev.of_type("AWS::XRay::SamplingRule") == {}


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
    # concurrency quota reached (docs/infra/functions-and-bundling.md, "Concurrency").
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


GLOBAL_ACL = "arn:aws:wafv2:us-east-1:111111111111:global/webacl/edge/abc"
EDGE_CERTIFICATE = "arn:aws:acm:us-east-1:111111111111:certificate/edge"
REGIONAL_ACL = "arn:aws:wafv2:eu-west-1:111111111111:regional/webacl/stage/abc"


def test_api_context_picks_a_function_url_for_a_waf_and_refuses_http_with_one() -> None:
    def config(**context: object) -> DeployConfig:
        return DeployConfig.from_context(context.get)

    assert config(developer="a").api == "http"
    domain = {"domain_name": "mcp.example.com", "certificate_arn": EDGE_CERTIFICATE}
    assert config(env="prod", **domain).api == "function_url"
    # Without a custom domain the gateway could only advertise the distribution's own name,
    # which depends on it through the function URL: the HTTP API behind CloudFront instead.
    assert config(env="prod").api == "cloudfront"
    with pytest.raises(ConfigError, match="`api=function_url` needs domain_name"):
        config(env="prod", api="function_url")
    assert config(env="prod", waf="false").api == "http"
    assert config(developer="a", waf_acl_arn="arn:aws:wafv2:x").api == "rest"
    assert config(developer="a", waf_acl_arn=GLOBAL_ACL).api == "cloudfront"
    assert config(developer="a", waf_acl_arn=GLOBAL_ACL, **domain).api == "function_url"
    assert config(developer="a", api="rest").api == "rest"
    assert (config(developer="a", api="cloudfront").waf, config(env="prod").waf) == (True, True)
    with pytest.raises(ConfigError, match="`api=http` cannot carry a WAF"):
        config(env="prod", api="http")
    with pytest.raises(ConfigError, match="`api` must be http, rest, cloudfront or function_url"):
        config(developer="a", api="graphql")
    with pytest.raises(ConfigError, match="`api=cloudfront` puts a WAF at the edge"):
        config(env="prod", api="cloudfront", waf="false")
    with pytest.raises(ConfigError, match="`api=function_url` puts a WAF at the edge"):
        config(env="prod", api="function_url", waf="false")
    assert config(developer="a", api="function_url", **domain).waf
    with pytest.raises(ConfigError, match="must be a CLOUDFRONT-scope web ACL"):
        config(developer="a", api="cloudfront", waf_acl_arn=REGIONAL_ACL)
    with pytest.raises(ConfigError, match="cannot attach to a REST stage"):
        config(developer="a", api="rest", waf_acl_arn=GLOBAL_ACL)
    with pytest.raises(ConfigError, match="certificate in us-east-1"):
        config(
            env="prod",
            domain_name="mcp.example.com",
            certificate_arn="arn:aws:acm:eu-west-1:111111111111:certificate/x",
        )


# --- `api=cloudfront`: CloudFront + WAF over the HTTP API ---------------------------------

CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # AWS managed cache policy
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"  # AWS managed request policy


def _distribution(synth: Synth) -> dict[str, Any]:
    (distribution,) = synth.of_type("AWS::CloudFront::Distribution").values()
    config: dict[str, Any] = distribution["Properties"]["DistributionConfig"]
    return config


def test_cloudfront_forwards_everything_to_the_http_api_and_caches_nothing(
    edge_http: Synth,
) -> None:
    config = _distribution(edge_http)
    (origin,) = config["Origins"]
    api_id = edge_http.logical_id(edge_http.stack.api.http_api)  # type: ignore[arg-type]
    assert {"Ref": api_id} in origin["DomainName"]["Fn::Join"][1]
    assert ".execute-api." in json.dumps(origin["DomainName"])
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert origin["CustomOriginConfig"]["OriginSSLProtocols"] == ["TLSv1.2"]
    behavior = config["DefaultCacheBehavior"]
    assert behavior["CachePolicyId"] == CACHING_DISABLED
    # Authorization, mcp-session-id and mcp-protocol-version reach the gateway: with caching
    # disabled an AllViewer policy is AWS's documented way to forward Authorization.
    assert behavior["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    assert set(behavior["AllowedMethods"]) >= {"GET", "POST", "DELETE", "OPTIONS"}
    assert behavior["ViewerProtocolPolicy"] == "https-only"
    assert "FunctionAssociations" not in behavior  # MCP calls run no edge function
    # The console's paths: the same forwarding, plus the viewer's host as X-Forwarded-Host.
    (console,) = config["CacheBehaviors"]
    assert console["PathPattern"] == CONSOLE_PATHS
    for key in ("CachePolicyId", "OriginRequestPolicyId", "ViewerProtocolPolicy"):
        assert console[key] == behavior[key], key
    (association,) = console["FunctionAssociations"]
    assert association["EventType"] == "viewer-request"
    function_id = association["FunctionARN"]["Fn::GetAtt"][0]
    assert edge_http.resources[function_id]["Properties"]["FunctionCode"] == FORWARD_HOST_JS


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (the CDK CLI's runtime)")
def test_the_console_function_forwards_the_viewers_host() -> None:
    event = {"request": {"headers": {"host": {"value": "mcp.example.com"}}}}
    script = f"{FORWARD_HOST_JS}\nconsole.log(JSON.stringify(handler({json.dumps(event)})));"
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    headers = json.loads(out.stdout)["headers"]
    assert headers["x-forwarded-host"] == {"value": "mcp.example.com"}


def test_cloudfront_serves_the_custom_domain_with_tls_1_2_and_logs_without_headers(
    edge_http: Synth,
) -> None:
    config = _distribution(edge_http)
    assert config["Aliases"] == ["mcp.example.com"]
    assert config["ViewerCertificate"]["MinimumProtocolVersion"] == "TLSv1.2_2021"
    assert config["ViewerCertificate"]["AcmCertificateArn"].startswith("arn:aws:acm:us-east-1:")
    # Standard logs carry no request headers (so never Authorization) and no cookies.
    assert config["Logging"]["IncludeCookies"] is False
    bucket_id = config["Logging"]["Bucket"]["Fn::GetAtt"][0]
    bucket = edge_http.resources[bucket_id]["Properties"]
    assert bucket["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 180
    assert "ServerSideEncryptionConfiguration" in bucket["BucketEncryption"]
    # The domain points at the distribution; the HTTP API gets none of its own.
    edge_http.template.resource_count_is("AWS::ApiGatewayV2::DomainName", 0)
    (record,) = edge_http.of_type("AWS::Route53::RecordSet").values()
    assert record["Properties"]["Name"] == "mcp.example.com."
    assert "DomainName" in json.dumps(record["Properties"]["AliasTarget"])
    assert edge_http.stack.api.mcp_url == "https://mcp.example.com/mcp"


def test_cloudfront_carries_a_cloudfront_scope_acl_with_the_rest_apis_rules(
    edge_http: Synth, rest: Synth
) -> None:
    ((acl_id, acl),) = edge_http.of_type("AWS::WAFv2::WebACL").items()
    assert acl["Properties"]["Scope"] == "CLOUDFRONT"
    assert _distribution(edge_http)["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    (regional,) = rest.of_type("AWS::WAFv2::WebACL").values()
    assert acl["Properties"]["Rules"] == regional["Properties"]["Rules"]
    edge_http.template.resource_count_is("AWS::WAFv2::WebACLAssociation", 0)
    (logging,) = edge_http.of_type("AWS::WAFv2::LoggingConfiguration").values()
    assert logging["Properties"]["RedactedFields"] == [{"SingleHeader": {"Name": "authorization"}}]
    # An environment-agnostic stack can only be deployed where the ACL can exist.
    (rule,) = [
        r for name, r in edge_http.document["Rules"].items() if name != "CheckBootstrapVersion"
    ]
    assert rule["Assertions"][0]["Assert"] == {"Fn::Equals": [{"Ref": "AWS::Region"}, EDGE_REGION]}


def test_the_origin_header_is_a_generated_secret_only_cloudfront_and_the_gateway_read(
    edge_http: Synth,
) -> None:
    (origin,) = _distribution(edge_http)["Origins"]
    (header,) = origin["OriginCustomHeaders"]
    assert header["HeaderName"] == ORIGIN_HEADER
    secret_id = edge_http.logical_id(edge_http.stack.api.origin_secret)  # type: ignore[arg-type]
    # A dynamic reference CloudFormation resolves at deploy: no value in the template.
    assert header["HeaderValue"] == {
        "Fn::Join": ["", ["{{resolve:secretsmanager:", {"Ref": secret_id}, ":SecretString:::}}"]]
    }
    secret = edge_http.resources[secret_id]["Properties"]
    assert secret["GenerateSecretString"]["PasswordLength"] >= 32
    gateway = edge_http.resources[edge_http.functions()["gateway"]]["Properties"]
    assert gateway["Environment"]["Variables"][names.Env.ORIGIN_SECRET_ARN] == {"Ref": secret_id}
    assert "secretsmanager:GetSecretValue" in edge_http.actions_on("gateway", secret_id)
    readers = [f for f in edge_http.functions() if edge_http.actions_on(f, secret_id)]
    assert readers == ["gateway"]
    # The gateway advertises CloudFront's URL, not execute-api's.
    public = gateway["Environment"]["Variables"][names.Env.PUBLIC_URL]
    assert public == "https://mcp.example.com"


def test_dev_advertises_execute_api_and_has_no_origin_secret(dev: Synth) -> None:
    assert ".execute-api." in json.dumps(
        dev.resources[dev.functions()["gateway"]]["Properties"]["Environment"]["Variables"][
            names.Env.PUBLIC_URL
        ]
    )
    assert names.Env.ORIGIN_SECRET_ARN not in json.dumps(dev.document)


def _api_in(region: str, api: str = "cloudfront", **config: Any) -> tuple[Stack, Api]:
    """Only the Api construct, in a nag-checked stack pinned to `region` (a fast synth)."""
    app = App()
    add_checks(app)
    stack = Stack(app, "Edge", env=Environment(account="111111111111", region=region))
    function = lambda_.Function(
        stack,
        "Gateway",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): return {}"),
    )
    deploy = DeployConfig(environment="prod", api=api, **config)
    return stack, Api(
        stack,
        "Api",
        config=deploy,
        handler=lambda_.Alias(stack, "Live", alias_name="live", version=function.current_version),
    )


def test_a_cloudfront_acl_outside_us_east_1_is_refused_naming_the_option() -> None:
    with pytest.raises(ConfigError, match=r"`api=cloudfront`.*us-east-1.*waf_acl_arn"):
        _api_in("eu-west-1", waf=True)


def test_an_existing_cloudfront_acl_lets_the_stack_live_in_any_region() -> None:
    stack, api = _api_in("eu-west-1", waf_acl_arn=GLOBAL_ACL)
    template = Template.from_stack(stack).to_json()
    resources = template["Resources"].values()
    assert not [r for r in resources if r["Type"] == "AWS::WAFv2::WebACL"]
    (distribution,) = [r for r in resources if r["Type"] == "AWS::CloudFront::Distribution"]
    assert distribution["Properties"]["DistributionConfig"]["WebACLId"] == GLOBAL_ACL
    assert "CloudFrontWafRegion" not in template.get("Rules", {})
    assert api.front == "cloudfront"
    # Without a custom domain: the default certificate, suppressed with its reason.
    # (The stand-in gateway function is not the Api's: its findings are not ours.)
    assert [f for f in nag_findings(stack) if not f.startswith("/Edge/Gateway/")] == []


def test_the_rest_option_is_still_nag_clean(rest: Synth) -> None:
    assert nag_findings(rest.stack) == []


def test_a_cloudfront_front_in_us_east_1_without_a_domain_serves_the_distributions_own() -> None:
    stack, api = _api_in(EDGE_REGION, waf=True)
    template = Template.from_stack(stack).to_json()
    ((acl_id, acl),) = [
        (k, r) for k, r in template["Resources"].items() if r["Type"] == "AWS::WAFv2::WebACL"
    ]
    assert acl["Properties"]["Scope"] == "CLOUDFRONT"
    assert "CloudFrontWafRegion" not in template.get("Rules", {})  # the region is known
    (distribution_id,) = [
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::CloudFront::Distribution"
    ]
    assert stack.resolve(api.mcp_url) == {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [distribution_id, "DomainName"]}, "/mcp"]]
    }
    config = template["Resources"][distribution_id]["Properties"]["DistributionConfig"]
    assert config["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert "Aliases" not in config
    assert [f for f in nag_findings(stack) if not f.startswith("/Edge/Gateway/")] == []


# --- prod's front: CloudFront + WAF straight to the gateway alias's function URL --------------


def test_prod_cloudfront_reaches_the_gateway_alias_through_its_function_url(prod: Synth) -> None:
    # One public (auth NONE) URL, on the `live` alias SnapStart serves, not $LATEST.
    ((url_id, url),) = prod.of_type("AWS::Lambda::Url").items()
    assert url["Properties"]["AuthType"] == "NONE"
    assert url["Properties"]["InvokeMode"] == "BUFFERED"
    assert url["Properties"]["Qualifier"] == "live"
    assert url["Properties"]["TargetFunctionArn"] == {
        "Fn::GetAtt": [prod.functions()["gateway"], "Arn"]
    }
    # CloudFront's only origin is that URL's host, over TLS 1.2, with the origin header.
    config = _distribution(prod)
    (origin,) = config["Origins"]
    assert origin["DomainName"] == {
        "Fn::Select": [2, {"Fn::Split": ["/", {"Fn::GetAtt": [url_id, "FunctionUrl"]}]}]
    }
    custom = origin["CustomOriginConfig"]
    assert (custom["OriginProtocolPolicy"], custom["OriginSSLProtocols"]) == (
        "https-only",
        ["TLSv1.2"],
    )
    assert custom["OriginReadTimeout"] == 30
    (header,) = origin["OriginCustomHeaders"]
    assert header["HeaderName"] == ORIGIN_HEADER
    assert "{{resolve:secretsmanager:" in json.dumps(header["HeaderValue"])
    # Nothing cached; every viewer header but Host (the URL's own) reaches the gateway.
    behavior = config["DefaultCacheBehavior"]
    assert behavior["CachePolicyId"] == CACHING_DISABLED
    assert behavior["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    assert behavior["ViewerProtocolPolicy"] == "https-only"
    # The WAF at the edge, the gateway reading the origin secret, the custom domain.
    ((acl_id, acl),) = prod.of_type("AWS::WAFv2::WebACL").items()
    assert acl["Properties"]["Scope"] == "CLOUDFRONT"
    assert config["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    secret_id = prod.logical_id(prod.stack.api.origin_secret)  # type: ignore[arg-type]
    assert "secretsmanager:GetSecretValue" in prod.actions_on("gateway", secret_id)
    assert config["Aliases"] == ["mcp.example.com"]
    assert prod.stack.api.mcp_url == "https://mcp.example.com/mcp"


def test_prod_has_no_api_gateway_and_anyone_may_call_only_the_alias_url(prod: Synth) -> None:
    for cfn_type in (
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::ApiGatewayV2::Route",
    ):
        prod.template.resource_count_is(cfn_type, 0)
    public = [
        p["Properties"]
        for p in prod.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "*"
    ]
    alias_id = next(iter(prod.of_type("AWS::Lambda::Alias")))
    assert public, "a function URL with auth NONE needs a public permission"
    for permission in public:
        # Only through the URL (InvokeFunctionUrl, or InvokeFunction via the URL), only the alias.
        assert permission["FunctionName"] == {"Ref": alias_id}
        assert (
            permission.get("FunctionUrlAuthType") == "NONE"
            or permission.get("InvokedViaFunctionUrl") is True
        )


def test_prod_alarms_and_graphs_read_the_function_urls_metrics(prod: Synth) -> None:
    (alarm,) = [
        a["Properties"]
        for a in prod.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Url5xxCount"
    ]
    assert alarm["Namespace"] == "AWS/Lambda"
    assert {d["Name"] for d in alarm["Dimensions"]} == {"FunctionName", "Resource"}
    (dashboard,) = prod.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("UrlRequestCount", "Url4xxCount", "UrlRequestLatency"):
        assert metric in body


def test_the_function_url_front_alone_is_nag_clean_and_advertises_its_domain() -> None:
    domain = {"domain_name": "mcp.example.com", "certificate_arn": EDGE_CERTIFICATE}
    stack, api = _api_in(EDGE_REGION, api="function_url", waf=True, **domain)
    template = Template.from_stack(stack).to_json()
    assert api.kind == "url"
    assert api.add_routes([("POST", "/ingest/events")]) == []  # the app owns every path
    assert api.mcp_url == "https://mcp.example.com/mcp"
    (distribution,) = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFront::Distribution"
    ]
    assert distribution["Properties"]["DistributionConfig"]["Aliases"] == ["mcp.example.com"]
    assert [f for f in nag_findings(stack) if not f.startswith("/Edge/Gateway/")] == []
    with pytest.raises(ConfigError, match=r"`api=function_url`.*us-east-1.*waf_acl_arn"):
        _api_in("eu-west-1", api="function_url", waf=True, **domain)
