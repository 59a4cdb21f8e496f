"""API: a regional REST API in front of the gateway's SnapStart alias.

Routes: `/mcp` (POST, and GET/DELETE so the app can answer 405 itself), the unauthenticated
RFC 9728 protected-resource metadata, and the web console under `/console`. Authentication is
the gateway's (team bearer tokens) so it can answer with MCP's error shapes. Access logs,
execution logs at ERROR, X-Ray, stage-wide throttling as a coarse guard, and optional custom
domain and WAF through context. See docs/infra.md for why REST rather than HTTP API.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import ArnFormat, Aws, Fn, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_route53_targets as targets
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from infra.config import DeployConfig
from infra.nag import suppress

STAGE: Final = "v1"
MCP_METHODS: Final = ("POST", "GET", "DELETE")
METADATA_PATH: Final = (".well-known", "oauth-protected-resource")
# Per client IP, per 5 minutes, at the WAF (per-token limits stay in the app).
WAF_RATE_LIMIT: Final = 3000


class Api(Construct):
    """`rest_api`, `base_url` (what the gateway advertises) and `mcp_url`."""

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
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=config.log_retention,
            removal_policy=config.removal_policy,
        )
        self.rest_api = apigw.RestApi(
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
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
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
        integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)
        mcp = self.rest_api.root.add_resource("mcp")
        self.methods = [mcp.add_method(method, integration) for method in MCP_METHODS]
        metadata = self.rest_api.root.add_resource(METADATA_PATH[0]).add_resource(METADATA_PATH[1])
        self.methods.append(metadata.add_method("GET", integration))
        self.methods.append(metadata.add_resource("mcp").add_method("GET", integration))
        # The web console (shared/console): its pages, static files and form posts, to the same
        # gateway, which authenticates the session cookie's token as it does a bearer token.
        console = self.rest_api.root.add_resource("console")
        self.methods.append(console.add_method("GET", integration))
        pages = console.add_resource("{proxy+}")
        self.methods.extend(pages.add_method(method, integration) for method in ("GET", "POST"))

        stack = Stack.of(self)
        # Built from the API id (not the stage) so the gateway may carry it without a cycle.
        self.base_url = (
            f"https://{config.domain_name}"
            if config.domain_name
            else f"https://{self.rest_api.rest_api_id}.execute-api.{stack.region}."
            f"{stack.url_suffix}/{STAGE}"
        )
        self.mcp_url = f"{self.base_url}/mcp"
        self._build_domain()
        self._build_waf()
        self._suppress()

    def _build_domain(self) -> None:
        config = self._config
        if not (config.domain_name and config.certificate_arn):
            return
        domain = self.rest_api.add_domain_name(
            "Domain",
            domain_name=config.domain_name,
            certificate=acm.Certificate.from_certificate_arn(
                self, "Certificate", config.certificate_arn
            ),
            endpoint_type=apigw.EndpointType.REGIONAL,
            security_policy=apigw.SecurityPolicy.TLS_1_2,
        )
        if config.hosted_zone_id and config.hosted_zone_name:
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
                record_name=config.domain_name,
                target=route53.RecordTarget.from_alias(targets.ApiGatewayDomain(domain)),
            )

    def _build_waf(self) -> None:
        config = self._config
        stage_arn = self.rest_api.deployment_stage.stage_arn
        if config.waf_acl_arn:
            wafv2.CfnWebACLAssociation(
                self, "WafAssociation", resource_arn=stage_arn, web_acl_arn=config.waf_acl_arn
            )
            return
        if not config.waf:
            return
        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="REGIONAL",
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
        wafv2.CfnWebACLAssociation(
            self, "WafAssociation", resource_arn=stage_arn, web_acl_arn=acl.attr_arn
        )
        # What the WAF blocked and why. The name must start with `aws-waf-logs-`; WAF adds the
        # log group's resource policy for its delivery service itself. The suffix is the stack's
        # own id, new with each creation: a retained group of an earlier stack never blocks
        # re-creating this one.
        stack_uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
        waf_logs = logs.LogGroup(
            self,
            "WafLogs",
            log_group_name=Fn.join(
                "", [f"aws-waf-logs-{config.stack_name}-", Fn.select(0, Fn.split("-", stack_uuid))]
            ),
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
        )

    def _suppress(self) -> None:
        auth_reason = (
            "cairn authenticates team bearer tokens in the gateway (keyed-HMAC hashes, scopes, "
            "per-token rate limits) so it can answer with MCP's errors (-32001 with "
            "WWW-Authenticate pointing at the RFC 9728 metadata); the metadata routes are "
            "public by specification. An API Gateway authorizer would pre-empt both."
        )
        for method in self.methods:
            suppress(method, "APIG4", auth_reason, children=False)
            suppress(method, "COG4", auth_reason, children=False)
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
                "WAF is off in this environment (dev default); enable with -c waf=true or "
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
