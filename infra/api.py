"""API: the public HTTPS front of the gateway's SnapStart alias: an HTTP API, the same behind
CloudFront + WAF, CloudFront + WAF straight to the alias's function URL, or a REST API.

Routes: `/mcp` and `/mcp/{toolset}` (POST, and GET/DELETE so the app can answer 405 itself), the
unauthenticated RFC 9728 protected-resource metadata of each, the web console under `/console`, and
what other constructs add through `add_routes` (seed 003's capture routes). Authentication is the
gateway's (team bearer tokens) so it can answer with MCP's error shapes. Access logs without the
Authorization header, stage-wide throttling as a coarse guard, an optional custom domain, and an
X-Ray sampling rule for the requests the API starts.

Which API (docs/infra/api-and-auth.md, "The API bill"): an HTTP API ($1.00 per million requests);
with a WAF (`api=cloudfront`) the HTTP API behind a CloudFront distribution carrying a
CLOUDFRONT-scope web ACL (+ $1.00 per million for CloudFront), whose secret origin header the
gateway checks so the execute-api URL cannot bypass the WAF; or, with `api=rest`, a REST API ($3.50)
with a regional web ACL on its stage, which also keeps execution logs and X-Ray at the stage. With a
WAF the default (`api=function_url`) leaves API Gateway out: CloudFront's origin is the gateway
alias's function URL (no charge of its own), closed to direct callers by the same origin header.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aws_cdk import (
    ArnFormat,
    Aws,
    CfnRule,
    CfnRuleAssertion,
    Duration,
    Fn,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_route53_targets as targets
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_wafv2 as wafv2
from aws_cdk import aws_xray as xray
from constructs import Construct, IConstruct

from infra.config import EDGE_APIS, EDGE_REGION, ConfigError, DeployConfig
from infra.nag import suppress
from infra.naming import unique_name
from shared.auth.origin import ORIGIN_HEADER
from shared.config.names import Env

STAGE: Final = "v1"
# Behind CloudFront: the console's paths, whose requests carry the viewer's host forward.
CONSOLE_PATHS: Final = "/console*"
FORWARD_HOST_JS: Final = """function handler(event) {
  var request = event.request;
  request.headers['x-forwarded-host'] = { value: request.headers.host.value };
  return request;
}"""
# Days in each log retention the environments use (infra.config), for the edge log bucket.
_DAYS: Final = {logs.RetentionDays.TWO_WEEKS: 14, logs.RetentionDays.SIX_MONTHS: 180}
MCP_METHODS: Final = ("POST", "GET", "DELETE")
METADATA_PATH: Final = (".well-known", "oauth-protected-resource")
# Per client IP, per 5 minutes, at the WAF (per-token limits stay in the app).
WAF_RATE_LIMIT: Final = 3000
# The WAF logs the requests it blocked or counted, and drops the rest (the allowed ones).
WAF_LOGGING_FILTER: Final = {
    "DefaultBehavior": "DROP",
    "Filters": [
        {
            "Behavior": "KEEP",
            "Requirement": "MEETS_ANY",
            "Conditions": [
                {"ActionCondition": {"Action": "BLOCK"}},
                {"ActionCondition": {"Action": "COUNT"}},
            ],
        }
    ],
}
# (method, path) of the gateway's own routes; other constructs add theirs with `add_routes`.
ROUTES: Final = (
    *((method, "/mcp") for method in MCP_METHODS),
    # A toolset per connection (docs/toolsets.md): `/mcp/memory+search`, `/mcp/all`, ...; it
    # carries seed 004's `/mcp/jsonrpc` too, which the gateway answers as `/mcp`.
    *((method, "/mcp/{toolset}") for method in MCP_METHODS),
    ("GET", "/" + "/".join(METADATA_PATH)),
    ("GET", "/" + "/".join(METADATA_PATH) + "/mcp"),
    ("GET", "/" + "/".join(METADATA_PATH) + "/mcp/{toolset}"),
    # The web console (shared/console): pages, static files and form posts.
    ("GET", "/console"),
    ("GET", "/console/{proxy+}"),
    ("POST", "/console/{proxy+}"),
)
# A function URL's counterparts of the API metrics (AWS/Lambda, by function and alias).
URL_METRICS: Final = {
    "count": "UrlRequestCount",
    "server_error": "Url5xxCount",
    "client_error": "Url4xxCount",
    "latency": "UrlRequestLatency",
}
# X-Ray records this share of the requests the API starts, and no fixed reservoir: a reservoir
# of 1 a second traces every call of a quiet team (X-Ray's default rule, $5 per million calls
# below 1 call/s); 5 % costs $0.25 per million calls at any rate (docs/infra/observability.md).
XRAY_FIXED_RATE: Final = 0.05
XRAY_RESERVOIR: Final = 0
# Lower numbers win in X-Ray; the account's default rule is 10000.
XRAY_RULE_PRIORITY: Final = 100
# Standard fields only: never the Authorization header or the body.
HTTP_ACCESS_LOG_FORMAT: Final = (
    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
    '"requestTime":"$context.requestTime","httpMethod":"$context.httpMethod",'
    '"routeKey":"$context.routeKey","status":"$context.status",'
    '"protocol":"$context.protocol","responseLength":"$context.responseLength",'
    '"integrationLatency":"$context.integrationLatency"}'
)


class Api(Construct):
    """`kind` ("http" or "rest"), `http_api` or `rest_api`, `base_url` (what the gateway
    advertises), `mcp_url`, `add_routes(...)`, and the API's metrics for alarms and graphs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        handler: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._handler = handler
        # What serves the gateway: an API Gateway product ("http" or "rest") or the gateway
        # alias's own function URL ("url"); and what is in front of it: "cloudfront" (the only
        # way in is a distribution carrying the WAF) or "direct".
        self.kind = {"rest": "rest", "function_url": "url"}.get(config.api, "http")
        self.front = "cloudfront" if config.api in EDGE_APIS else "direct"
        self.distribution: cloudfront.Distribution | None = None
        self.origin_secret: secretsmanager.Secret | None = None
        self.function_url: lambda_.FunctionUrl | None = None
        if self.kind != "url":  # a function URL keeps no access log (CloudFront's does)
            self.access_logs = logs.LogGroup(
                self,
                "AccessLogs",
                retention=config.log_retention,
                removal_policy=config.removal_policy,
            )
        self.rest_api: apigw.RestApi | None = None
        self.http_api: apigwv2.HttpApi | None = None
        # Every route, for the nag suppressions: the gateway authenticates.
        self.methods: list[IConstruct] = []
        stack = Stack.of(self)
        if self.kind == "rest":
            self.rest_api = self._build_rest_api()
            self._rest_integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)
            # Built from the API id (not the stage) so the gateway may carry it without a cycle.
            self.base_url = (
                f"https://{config.domain_name}"
                if config.domain_name
                else f"https://{self.rest_api.rest_api_id}.execute-api.{stack.region}."
                f"{stack.url_suffix}/{STAGE}"
            )
        elif self.kind == "url":
            # Public (auth NONE) like an execute-api URL: CloudFront's origin access control
            # would sign with SigV4 in Authorization, overwriting the team's bearer token. The
            # gateway refuses any request without CloudFront's origin header instead.
            self.function_url = lambda_.FunctionUrl(
                self,
                "GatewayUrl",
                function=handler,
                auth_type=lambda_.FunctionUrlAuthType.NONE,
                invoke_mode=lambda_.InvokeMode.BUFFERED,
            )
            self.distribution = self._build_cloudfront()
            self.base_url = (
                f"https://{config.domain_name}"
                if config.domain_name
                else f"https://{self.distribution.distribution_domain_name}"
            )
        else:
            self.http_api = self._build_http_api()
            # One integration and one invoke permission for every route (not one per route).
            self._http_integration = integrations.HttpLambdaIntegration(
                "Gateway", handler, scope_permission_to_route=False
            )
            # The $default stage: no stage segment in the URL.
            self.base_url = (
                f"https://{config.domain_name}"
                if config.domain_name
                else f"https://{self.http_api.api_id}.execute-api.{stack.region}.{stack.url_suffix}"
            )
            if self.front == "cloudfront":
                self.distribution = self._build_cloudfront()
                self.base_url = (
                    f"https://{config.domain_name}"
                    if config.domain_name
                    else f"https://{self.distribution.distribution_domain_name}"
                )
        self.mcp_url = f"{self.base_url}/mcp"
        # Behind CloudFront, the origin it forwards to: a direct call there must be refused
        # (the smoke test checks it, scripts/smoke.py --origin-url); None without CloudFront.
        self.origin_url: str | None = None
        if self.function_url is not None:
            self.origin_url = self.function_url.url
        elif self.front == "cloudfront" and self.http_api is not None:
            self.origin_url = (
                f"https://{self.http_api.api_id}.execute-api.{stack.region}.{stack.url_suffix}"
            )
        self.add_routes(ROUTES)
        if self.kind == "rest":
            self._build_domain()
            self._build_waf()
        elif self.front == "direct":
            self._build_http_domain()
        self._build_sampling_rule()
        self._suppress()

    def add_routes(self, routes: Sequence[tuple[str, str]]) -> list[IConstruct]:
        """Route each (method, path) to the gateway, e.g. `[("POST", "/ingest/events")]`. A
        function URL sends every path to the gateway already: nothing to add."""
        added: list[IConstruct] = []
        if self.kind == "url":
            return added
        for method, path in routes:
            if self.rest_api is not None:
                resource = self.rest_api.root
                for part in path.strip("/").split("/"):
                    resource = resource.get_resource(part) or resource.add_resource(part)
                added.append(resource.add_method(method, self._rest_integration))
            else:
                assert self.http_api is not None
                added.extend(
                    self.http_api.add_routes(
                        path=path,
                        methods=[apigwv2.HttpMethod(method)],
                        integration=self._http_integration,
                    )
                )
        self.methods.extend(added)
        for route in added:
            self._suppress_auth(route)
        return added

    def metric(self, name: str, statistic: str) -> cw.IMetric:
        """The API's `count`, `server_error`, `client_error` or `latency` metric (for a
        function URL, Lambda's `Url*` metrics of the gateway alias)."""
        period = Duration.minutes(5)
        if self.kind == "url":
            url_metric: cw.IMetric = self._handler.metric(
                URL_METRICS[name], period=period, statistic=statistic
            )
            return url_metric
        api: apigw.RestApi | apigwv2.HttpApi | None = self.rest_api or self.http_api
        assert api is not None
        method = getattr(api, f"metric_{name}")
        metric: cw.IMetric = method(period=period, statistic=statistic)
        return metric

    def _build_rest_api(self) -> apigw.RestApi:
        config = self._config
        return apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=config.stack_name,
            description="cairn MCP endpoint",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Execution logs need the account-level CloudWatch role (one setting per account and
            # region, shared by every stack in it). Retained: deleting one developer's stack
            # must not pull the role from under every other stack's execution logs.
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                # Standard fields only: never the Authorization header or the body.
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=False,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
            ),
        )

    def _build_http_api(self) -> apigwv2.HttpApi:
        config = self._config
        api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name=config.stack_name,
            description="cairn MCP endpoint",
            create_default_stage=False,
        )
        stage = apigwv2.HttpStage(
            self,
            "Stage",
            http_api=api,
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=config.throttle_rate, burst_limit=config.throttle_burst
            ),
        )
        # HTTP APIs deliver access logs through API Gateway's service-linked role: no
        # account-level CloudWatch role, so a dev stack never touches that account setting.
        cfn_stage = stage.node.default_child
        assert isinstance(cfn_stage, apigwv2.CfnStage)
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn, format=HTTP_ACCESS_LOG_FORMAT
        )
        self.http_stage = stage
        return api

    def _custom_domain(self) -> tuple[str, acm.ICertificate] | None:
        """The configured domain name and its certificate; None unless both are given."""
        config = self._config
        if not (config.domain_name and config.certificate_arn):
            return None
        certificate = acm.Certificate.from_certificate_arn(
            self, "Certificate", config.certificate_arn
        )
        return config.domain_name, certificate

    def _build_http_domain(self) -> None:
        custom = self._custom_domain()
        if custom is None:
            return
        domain_name, certificate = custom
        assert self.http_api is not None
        domain = apigwv2.DomainName(
            self,
            "Domain",
            domain_name=domain_name,
            certificate=certificate,
            endpoint_type=apigwv2.EndpointType.REGIONAL,
            security_policy=apigwv2.SecurityPolicy.TLS_1_2,
        )
        apigwv2.ApiMapping(
            self, "DomainMapping", api=self.http_api, domain_name=domain, stage=self.http_stage
        )
        self._alias(
            domain_name,
            targets.ApiGatewayv2DomainProperties(
                domain.regional_domain_name, domain.regional_hosted_zone_id
            ),
        )

    def _alias(self, domain_name: str, target: route53.IAliasRecordTarget) -> None:
        """An alias record of `domain_name` to the API's front, in the configured hosted zone
        (none without one: the domain's DNS is then the operator's)."""
        config = self._config
        if not (config.hosted_zone_id and config.hosted_zone_name):
            return
        zone = route53.HostedZone.from_hosted_zone_attributes(
            self,
            "Zone",
            hosted_zone_id=config.hosted_zone_id,
            zone_name=config.hosted_zone_name,
        )
        route53.ARecord(
            self,
            "DomainAlias",
            zone=zone,
            record_name=domain_name,
            target=route53.RecordTarget.from_alias(target),
        )

    def _build_cloudfront(self) -> cloudfront.Distribution:
        """CloudFront with the WAF in front of the HTTP API, and the API closed to the rest.

        The HTTP API's execute-api URL cannot be switched off without a custom domain as the
        origin, which would be just as public; instead CloudFront adds a secret header to every
        origin request and the gateway refuses requests without it (`shared.auth.origin`),
        before the app or any tool runs. The value is generated into Secrets Manager at deploy:
        CloudFormation resolves it into the distribution's origin, the gateway reads it at cold
        start; it is in no template, code or log.
        """
        config = self._config
        stack = Stack.of(self)
        acl_arn = self._edge_web_acl(stack)
        self.origin_secret = secretsmanager.Secret(
            self,
            "OriginSecret",
            description=(
                f"{config.stack_name}: the value CloudFront sends as {ORIGIN_HEADER}; the "
                "gateway refuses requests without it"
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
            # Nothing outlives the distribution that sends it.
            removal_policy=RemovalPolicy.DESTROY,
        )
        gateway = self._handler
        if isinstance(gateway, lambda_.Alias):
            gateway = gateway.version.lambda_
        assert isinstance(gateway, lambda_.Function), "the gateway alias of a cairn Function"
        gateway.add_environment(Env.ORIGIN_SECRET_ARN, self.origin_secret.secret_arn)
        self.origin_secret.grant_read(gateway)
        headers = {ORIGIN_HEADER: self.origin_secret.secret_value.unsafe_unwrap()}
        origin: cloudfront.IOrigin
        if self.function_url is not None:
            # HTTPS (TLS 1.2+) to the function URL's own domain; the gateway answers within
            # its 28 s timeout.
            origin = origins.FunctionUrlOrigin(
                self.function_url, custom_headers=headers, read_timeout=Duration.seconds(30)
            )
        else:
            assert self.http_api is not None
            origin = origins.HttpOrigin(
                f"{self.http_api.api_id}.execute-api.{stack.region}.{stack.url_suffix}",
                protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
                origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
                custom_headers=headers,
                # API Gateway answers within 29 s (the gateway's own budget is 28 s).
                read_timeout=Duration.seconds(30),
            )
        custom = self._custom_domain()
        distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"{config.stack_name} MCP endpoint",
            default_behavior=_edge_behavior(origin),
            # The web console compares a form post's Origin with the host it was served from,
            # and the Host CloudFront forwards is the API's own: a viewer-request function
            # passes the viewer's host on as X-Forwarded-Host ($0.10 per million, console
            # requests only: MCP calls never run it).
            additional_behaviors={
                CONSOLE_PATHS: _edge_behavior(
                    origin,
                    functions=[
                        cloudfront.FunctionAssociation(
                            event_type=cloudfront.FunctionEventType.VIEWER_REQUEST,
                            function=cloudfront.Function(
                                self,
                                "ForwardHost",
                                code=cloudfront.FunctionCode.from_inline(FORWARD_HOST_JS),
                                runtime=cloudfront.FunctionRuntime.JS_2_0,
                                comment="viewer host as X-Forwarded-Host (the console)",
                            ),
                        )
                    ],
                )
            },
            web_acl_id=acl_arn,
            domain_names=[custom[0]] if custom else None,
            certificate=custom[1] if custom else None,
            minimum_protocol_version=cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            # North America and Europe edges only: their request price is the sheet's.
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            enable_logging=True,
            log_bucket=self._edge_log_bucket(),
            log_file_prefix="cloudfront/",
            log_includes_cookies=False,
        )
        if custom:
            self._alias(custom[0], targets.CloudFrontTarget(distribution))
        self._suppress_edge(distribution, custom_certificate=custom is not None)
        return distribution

    def _edge_web_acl(self, stack: Stack) -> str:
        """The CLOUDFRONT-scope web ACL: a configured one (any stack region), or one built here,
        which AWS accepts only in us-east-1. A stack pinned elsewhere is refused at synth; an
        environment-agnostic one carries a template rule that stops the deploy elsewhere."""
        config = self._config
        if not config.waf_acl_arn:
            region = stack.region
            if Token.is_unresolved(region):
                CfnRule(
                    stack,
                    "CloudFrontWafRegion",
                    assertions=[
                        CfnRuleAssertion(
                            assert_=Fn.condition_equals(Aws.REGION, EDGE_REGION),
                            assert_description=(
                                f"api={config.api} builds a CLOUDFRONT-scope web ACL, which AWS "
                                "creates only in us-east-1: deploy there, or pass -c "
                                "waf_acl_arn=<a CLOUDFRONT-scope ACL>, or -c api=rest"
                            ),
                        )
                    ],
                )
            elif region != EDGE_REGION:
                raise ConfigError(
                    f"context `api={config.api}` builds a CLOUDFRONT-scope web ACL, which AWS "
                    f"creates only in {EDGE_REGION}, and this stack is in {region}: deploy to "
                    f"{EDGE_REGION}, or create the ACL there and pass -c waf_acl_arn=<its ARN> "
                    "(arn:aws:wafv2:us-east-1:...:global/webacl/...), or use -c api=rest"
                )
        acl_arn = self._web_acl("CLOUDFRONT")
        assert acl_arn is not None, "a CloudFront front always has a WAF (infra.config)"
        return acl_arn

    def _edge_log_bucket(self) -> s3.Bucket:
        """CloudFront's standard logs (no request headers beyond Host, Referer, User-Agent:
        never the Authorization header), kept as long as the environment's other logs."""
        config = self._config
        bucket = s3.Bucket(
            self,
            "EdgeLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # CloudFront's standard logging still delivers through a bucket ACL.
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-logs",
                    expiration=Duration.days(_DAYS.get(config.log_retention, 365)),
                )
            ],
            removal_policy=config.removal_policy,
        )
        suppress(
            bucket,
            "S1",
            "This bucket holds CloudFront's access logs; logging it into another bucket would "
            "only log the log deliveries.",
        )
        return bucket

    def _suppress_edge(
        self, distribution: cloudfront.Distribution, custom_certificate: bool
    ) -> None:
        suppress(
            distribution,
            "CFR1",
            "A team's agents and CI call from anywhere; the WAF's IP reputation list and "
            "per-IP rate rule stand in for a geographic allow list.",
        )
        if not custom_certificate:
            suppress(
                distribution,
                "CFR4",
                "Without a custom domain CloudFront serves its default *.cloudfront.net "
                "certificate, whose minimum protocol cannot be set; pass domain_name and a "
                "us-east-1 certificate_arn for TLSv1.2_2021 (MCP clients negotiate TLS 1.2+).",
            )
        assert self.origin_secret is not None
        suppress(
            self.origin_secret,
            "SMG4",
            "The origin header value is read by CloudFormation into the distribution and by the "
            "gateway at cold start; a rotation would refuse CloudFront until both were updated. "
            "Rotate by replacing the secret in a deploy (docs/infra/api-and-auth.md).",
        )

    def _build_sampling_rule(self) -> None:
        """X-Ray samples the requests a REST stage starts by this rule instead of its default:
        the stage makes the sampling decision and passes it down to the gateway and the group
        it invokes.

        No rule behind the other fronts: there the gateway function starts the trace, and
        Lambda samples at its own fixed rate (the first request each second and 5 % of the
        rest), which no sampling rule changes; `tracing=pass_through` traces only requests
        arriving sampled instead (docs/infra/observability.md).
        """
        if self.rest_api is None:
            return
        service_name = f"{self.rest_api.rest_api_name}/{STAGE}"
        service_type = "AWS::ApiGateway::Stage"
        xray.CfnSamplingRule(
            self,
            "SamplingRule",
            sampling_rule=xray.CfnSamplingRule.SamplingRuleProperty(
                rule_name=f"{self._config.stack_name}-api"[:32],
                priority=XRAY_RULE_PRIORITY,
                fixed_rate=XRAY_FIXED_RATE,
                reservoir_size=XRAY_RESERVOIR,
                service_name=service_name,
                service_type=service_type,
                host="*",
                http_method="*",
                url_path="*",
                resource_arn="*",
                version=1,
            ),
        )

    def _build_domain(self) -> None:
        custom = self._custom_domain()
        if custom is None:
            return
        domain_name, certificate = custom
        assert self.rest_api is not None
        domain = self.rest_api.add_domain_name(
            "Domain",
            domain_name=domain_name,
            certificate=certificate,
            endpoint_type=apigw.EndpointType.REGIONAL,
            security_policy=apigw.SecurityPolicy.TLS_1_2,
        )
        self._alias(domain_name, targets.ApiGatewayDomain(domain))

    def _build_waf(self) -> None:
        assert self.rest_api is not None
        stage_arn = self.rest_api.deployment_stage.stage_arn
        acl_arn = self._web_acl("REGIONAL")
        if acl_arn is not None:
            wafv2.CfnWebACLAssociation(
                self, "WafAssociation", resource_arn=stage_arn, web_acl_arn=acl_arn
            )

    def _web_acl(self, scope: str) -> str | None:
        """The ARN of the configured web ACL, or of a new one of `scope` (REGIONAL for a REST
        stage, CLOUDFRONT for a distribution) with its logging; None without a WAF."""
        config = self._config
        if config.waf_acl_arn:
            return config.waf_acl_arn
        if not config.waf:
            return None
        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope=scope,
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility(f"{config.stack_name}-waf"),
            rules=[
                _managed_rule("AWSManagedRulesAmazonIpReputationList", 0),
                _managed_rule("AWSManagedRulesKnownBadInputsRuleSet", 1),
                wafv2.CfnWebACL.RuleProperty(
                    name="rate-per-ip",
                    priority=2,
                    action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                    statement=wafv2.CfnWebACL.StatementProperty(
                        rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                            limit=WAF_RATE_LIMIT, aggregate_key_type="IP"
                        )
                    ),
                    visibility_config=_visibility("rate-per-ip"),
                ),
            ],
        )
        # What the WAF blocked and why. The name must start with `aws-waf-logs-`; WAF adds the
        # log group's resource policy for its delivery service itself. The suffix is the stack's
        # own id, new with each creation: a retained group of an earlier stack never blocks
        # re-creating this one.
        waf_logs = logs.LogGroup(
            self,
            "WafLogs",
            log_group_name=unique_name(f"aws-waf-logs-{config.stack_name}-"),
            retention=config.log_retention,
            removal_policy=config.removal_policy,
        )
        wafv2.CfnLoggingConfiguration(
            self,
            "WafLogging",
            resource_arn=acl.attr_arn,
            log_destination_configs=[
                Stack.of(self).format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=waf_logs.log_group_name,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
            # Never the Authorization header (a team token) in the WAF's logs.
            redacted_fields=[
                wafv2.CfnLoggingConfiguration.FieldToMatchProperty(
                    single_header={"Name": "authorization"}
                )
            ],
            # Only what the WAF blocked or counted: a record of every allowed request (about
            # 1.5 KB) would add $0.70 per million calls of log ingestion.
            logging_filter=WAF_LOGGING_FILTER,
        )
        return acl.attr_arn

    def _suppress_auth(self, route: IConstruct) -> None:
        reason = (
            "cairn authenticates team bearer tokens in the gateway (keyed-HMAC hashes, scopes, "
            "per-token rate limits) so it can answer with MCP's errors (-32001 with "
            "WWW-Authenticate pointing at the RFC 9728 metadata); the metadata routes are "
            "public by specification, and webhook deliveries are verified by their signature "
            "in the knowledge function. An API Gateway authorizer would pre-empt all of it."
        )
        suppress(route, "APIG4", reason, children=False)
        suppress(route, "COG4", reason, children=False)

    def _suppress(self) -> None:
        if self.rest_api is None:
            return
        suppress(
            self.rest_api,
            "APIG2",
            "The gateway validates every request itself (transport rules, JSON-RPC, pydantic "
            "arguments) and must answer with MCP-shaped errors rather than API Gateway's.",
            children=False,
        )
        if not (self._config.waf or self._config.waf_acl_arn):
            suppress(
                self.rest_api.deployment_stage,
                "APIG3",
                "WAF is off in this environment; enable with -c waf=true or "
                "-c waf_acl_arn=<arn>. Stage throttling and per-token limits still apply.",
                children=False,
            )
        suppress(
            self.rest_api.node.find_child("CloudWatchRole"),
            "IAM4",
            "API Gateway's account-level CloudWatch role uses the AWS-maintained push policy.",
            [
                "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs"
            ],
        )


def _edge_behavior(
    origin: cloudfront.IOrigin,
    functions: Sequence[cloudfront.FunctionAssociation] | None = None,
) -> cloudfront.BehaviorOptions:
    return cloudfront.BehaviorOptions(
        origin=origin,
        # A redirect would drop a POST's body: plain http is refused outright.
        viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
        allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
        # Every answer is a team's own: nothing is cached. With caching disabled the
        # documented way to forward Authorization is an AllViewer origin request policy (an
        # origin request policy naming it is refused); minus Host, which must stay the API's
        # own for API Gateway to route the request.
        cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
        origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        compress=False,
        function_associations=list(functions) if functions else None,
    )


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )


def _managed_rule(name: str, priority: int) -> wafv2.CfnWebACL.RuleProperty:
    return wafv2.CfnWebACL.RuleProperty(
        name=name,
        priority=priority,
        override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
        statement=wafv2.CfnWebACL.StatementProperty(
            managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                vendor_name="AWS", name=name
            )
        ),
        visibility_config=_visibility(name),
    )
