"""The cost model of `cairn bench cost`: its arithmetic on small inputs checked by hand, and the
price sheet it reads."""

from __future__ import annotations

from typing import Any

import pytest

from shared.bench.cost import (
    CallProfile,
    Deployment,
    Measured,
    SearchCapacity,
    cost_per_million,
    deployment_from_template,
    idle_per_month,
    load_prices,
    profile,
    request_units,
    xray_share,
)

# Round numbers so every figure below can be checked on paper.
PRICES: dict[str, Any] = {
    "api_gateway": {"rest_per_million": 3.5, "http_per_million": 1.0},
    "lambda_arm64": {"gb_second": 0.00001, "requests_per_million": 0.2},
    "dynamodb_on_demand": {"read_units_per_million": 0.25, "write_units_per_million": 1.0},
    "xray": {"traces_recorded_per_million": 5.0},
    "cloudwatch": {"logs_ingested_per_gb": 0.5, "alarm_per_month": 0.1, "dashboard_per_month": 3},
    "opensearch_serverless": {"ocu_hour": 0.24},
    "opensearch_domain": {"instance_hour": {"t3.small.search": 0.04}, "gp3_gb_month": 0.1},
    "waf": {"web_acl_per_month": 5.0, "rule_per_month": 1.0, "requests_per_million": 0.6},
    "kms": {"key_per_month": 1.0},
    "secrets_manager": {"secret_per_month": 0.4},
    "assumptions": {
        "hours_per_month": 700,
        "dynamodb_round_trip_ms": 5,
        "lambda_invoke_overhead_ms": 10,
        "lambda_platform_log_bytes_per_invocation": 100,
    },
}


def _deployment(**changes: Any) -> Deployment:
    values: dict[str, Any] = {
        "environment": "dev",
        "api": "http",
        "gateway_memory_mb": 1024,
        "group_memory_mb": 512,
        "xray_reservoir": 0,
        "xray_rate": 0.05,
        "waf_rules": -1,
        "search": SearchCapacity(kind="serverless", ocus=1),
        "alarms": 10,
        "dashboards": 1,
        "kms_keys": 1,
        "secrets": 1,
        "platform_logs": False,
    }
    return Deployment(**{**values, **changes})


def test_a_million_calls_cost_the_sum_of_their_line_items() -> None:
    # Given a call billed 20 ms on a 1 GB gateway and 10 ms on a 512 MB group, 2 reads, 1 write
    # and 1 GiB of logs per 1M calls...
    call = CallProfile(
        gateway_ms=20,
        group_ms=10,
        group_share=1.0,
        read_units=2,
        write_units=1,
        log_bytes=1024**3 / 1_000_000,
    )

    items = cost_per_million(call, _deployment(), PRICES, calls_per_second=10)

    # Then: HTTP API $1; 2 invocations x $0.2; (0.02 s x 1 GB + 0.01 s x 0.5 GB) x 1M x
    # $0.00001 = $0.25; 2 x $0.25 + $1 = $1.5; 5 % of calls traced = $0.25; 1 GiB of logs $0.5.
    assert items == {
        "api_gateway": 1.0,
        "lambda_requests": 0.4,
        "lambda_duration": 0.25,
        "dynamodb": 1.5,
        "xray": 0.25,
        "logs": 0.5,
        "waf": 0.0,
        "waf_logs": 0.0,
        "cloudfront": 0.0,
        "total": 3.9,
    }


def test_a_rest_api_behind_a_waf_costs_both_per_request() -> None:
    call = CallProfile(0, 0, 0, 0, 0, 0)

    items = cost_per_million(
        call, _deployment(api="rest", waf_rules=3), PRICES, calls_per_second=10
    )

    # $3.5 + $0.6, and 1 gateway invocation ($0.2) per call that reaches no group.
    assert items["api_gateway"] == 3.5
    assert items["waf"] == 0.6
    assert items["total"] == pytest.approx(3.5 + 0.6 + 0.2 + 0.25)


def _idle_calls_behind_cloudfront(api: str) -> dict[str, float]:
    """The cost items of a million calls that do no work, through `api` behind CloudFront
    ($1 a million requests) and a 3-rule WAF, at 10 calls a second."""
    prices = {**PRICES, "cloudfront": {"https_requests_per_million": 1.0}}
    deployment = _deployment(api=api, waf_rules=3, cloudfront=True)
    return cost_per_million(CallProfile(0, 0, 0, 0, 0, 0), deployment, prices, calls_per_second=10)


def test_an_http_api_behind_cloudfront_and_its_waf_costs_all_three_per_request() -> None:
    items = _idle_calls_behind_cloudfront("http")

    # HTTP API $1 + CloudFront $1 + WAF $0.6: $2.6 against a REST API's $3.5 + $0.6.
    assert (items["api_gateway"], items["cloudfront"], items["waf"]) == (1.0, 1.0, 0.6)
    assert items["total"] == pytest.approx(1.0 + 1.0 + 0.6 + 0.2 + 0.25)


def test_cloudfront_to_a_function_url_pays_no_api_gateway() -> None:
    items = _idle_calls_behind_cloudfront("url")

    # CloudFront $1 + WAF $0.6 and no API Gateway: $1.6 against $2.6 through an HTTP API.
    assert (items["api_gateway"], items["cloudfront"], items["waf"]) == (0.0, 1.0, 0.6)
    assert items["total"] == pytest.approx(1.0 + 0.6 + 0.2 + 0.25)


def test_the_template_reader_knows_a_function_url_front() -> None:
    template = {
        "Resources": {
            "Gw": _function("gateway", 1024, {}),
            "Mem": _function("memory", 512, {}),
            "Url": {"Type": "AWS::Lambda::Url", "Properties": {"AuthType": "NONE"}},
            "Cdn": {"Type": "AWS::CloudFront::Distribution", "Properties": {}},
        }
    }

    deployment = deployment_from_template("prod", template)

    assert (deployment.api, deployment.cloudfront, deployment.access_log_bytes) == (
        "url",
        True,
        0,
    )


def test_the_reservoir_traces_every_call_below_its_rate_and_the_rate_above_it() -> None:
    rule = _deployment(xray_reservoir=1, xray_rate=0.05)

    assert xray_share(rule, 0.5) == 1.0
    # 11 calls/s: 1 from the reservoir + 5 % of the other 10 -> 1.5 / 11.
    assert xray_share(rule, 11) == pytest.approx(1.5 / 11)
    assert xray_share(_deployment(), 1000) == pytest.approx(0.05)


def test_idle_cost_counts_capacity_and_fixed_monthly_items() -> None:
    # 1 OCU x $0.24 x 700 h = $168; 10 alarms $1; a dashboard $3; a key $1; a secret $0.4.
    assert idle_per_month(_deployment(), PRICES)["total"] == pytest.approx(173.4)

    domain = SearchCapacity(kind="domain", instances=(("t3.small.search", 1),), storage_gb=10)
    with_domain = idle_per_month(_deployment(search=domain, waf_rules=3), PRICES)

    # 1 x $0.04 x 700 h + 10 GB x $0.1 = $29; WAF $5 + 3 rules = $8.
    assert with_domain["search"] == pytest.approx(29.0)
    assert with_domain["waf"] == pytest.approx(8.0)


def test_an_instance_type_missing_from_the_price_sheet_is_named() -> None:
    domain = SearchCapacity(kind="domain", instances=(("x9.huge.search", 1),))

    with pytest.raises(KeyError, match=r"x9\.huge\.search"):
        idle_per_month(_deployment(search=domain), PRICES)


def test_the_billed_call_adds_modelled_io_to_the_measured_cpu() -> None:
    # Given memory_get measured at 3 ms gateway CPU, 2 ms group CPU, 1 DynamoDB call in the
    # gateway, 2 in the group, 300 bytes logged at WARN and 900 at INFO...
    measured = [
        Measured(
            operation="memory_get",
            gateway_cpu_ms=3,
            group_cpu_ms=2,
            invokes_group=True,
            dynamodb_calls_gateway=1,
            dynamodb_calls_group=2,
            read_units=2,
            write_units=0,
            log_bytes={"INFO": 900, "WARN": 300},
        )
    ]

    call = profile(
        measured,
        _deployment(application_log_level="WARN", platform_logs=True, access_log_bytes=50),
        PRICES,
        mix={"memory_get": 1.0},
    )

    # Then the group is billed 2 + 2 x 5 = 12 ms; the gateway 3 + 5 + 10 (invoke) + 12 = 30 ms;
    # logs: 300 at WARN + 2 x 100 platform + 50 access = 550 bytes; the rate limiter's
    # reservation writes at the default token limit (one per 6 calls, less the measured 0.001).
    assert call == CallProfile(
        gateway_ms=30, group_ms=12, group_share=1.0, read_units=2, write_units=0.166, log_bytes=550
    )


def test_request_units_follow_dynamodb_sizes_and_consistency() -> None:
    small = {"Item": {"pk": {"S": "x"}}}
    assert request_units("GetItem", small, {"ConsistentRead": True}) == (1.0, 0.0)
    assert request_units("GetItem", small, {}) == (0.5, 0.0)
    big = {"Items": [{"v": {"S": "x" * 5000}}]}
    assert request_units("Query", big, {"ConsistentRead": True}) == (2.0, 0.0)
    assert request_units("PutItem", {}, {"Item": {"v": {"S": "x" * 1500}}}) == (0.0, 2.0)
    assert request_units("TransactWriteItems", {}, {"TransactItems": [{}, {}]}) == (0.0, 4.0)


def test_the_template_reader_finds_what_is_billed() -> None:
    template = {
        "Resources": {
            "Gw": _function(
                "gateway", 1024, {"ApplicationLogLevel": "WARN", "SystemLogLevel": "WARN"}
            ),
            "Mem": _function("memory", 512, {}),
            "Api": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"ProtocolType": "HTTP"}},
            "Rule": {
                "Type": "AWS::XRay::SamplingRule",
                "Properties": {"SamplingRule": {"ReservoirSize": 0, "FixedRate": 0.05}},
            },
            "Domain": {
                "Type": "AWS::OpenSearchService::Domain",
                "Properties": {
                    "ClusterConfig": {"InstanceType": "t3.small.search", "InstanceCount": 1},
                    "EBSOptions": {"VolumeSize": 10},
                },
            },
            "A1": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
            "A2": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
        }
    }

    deployment = deployment_from_template("dev", template)

    assert deployment.api == "http"
    assert (deployment.gateway_memory_mb, deployment.group_memory_mb) == (1024, 512)
    # Behind an HTTP API the gateway starts the trace and Lambda samples at its fixed rate,
    # whatever rule the template carries.
    assert (deployment.xray_reservoir, deployment.xray_rate) == (1, 0.05)
    assert deployment.search == SearchCapacity(
        kind="domain", instances=(("t3.small.search", 1),), storage_gb=10
    )
    assert deployment.alarms == 2
    assert not deployment.waf
    assert deployment.application_log_level == "WARN"
    assert not deployment.platform_logs
    assert not deployment.cloudfront
    fronted = {
        "Resources": {
            **template["Resources"],
            "Cdn": {"Type": "AWS::CloudFront::Distribution", "Properties": {}},
            "Acl": {"Type": "AWS::WAFv2::WebACL", "Properties": {"Rules": [{}, {}, {}]}},
        }
    }
    edge = deployment_from_template("prod", fronted)
    assert (edge.api, edge.cloudfront, edge.waf_rules) == ("http", True, 3)


def test_the_price_sheet_carries_its_date_region_and_every_price_the_model_reads() -> None:
    prices = load_prices()

    assert prices["region"] == "us-east-1"
    assert len(prices["date"]) == 10  # YYYY-MM-DD
    for section in PRICES:
        assert set(PRICES[section]) <= set(prices[section]), section
    assert prices["cloudfront"]["https_requests_per_million"] > 0


def _function(
    name: str, memory: int, logging: dict[str, str], tracing: str = "Active"
) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Handler": f"functions.{name}.handler.handler",
            "MemorySize": memory,
            "LoggingConfig": logging,
            "TracingConfig": {"Mode": tracing},
        },
    }


def _template(gateway_tracing: str, *extra: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "Resources": {
            "Gw": _function("gateway", 1024, {}, gateway_tracing),
            "Mem": _function("memory", 512, {}),
            "Domain": {
                "Type": "AWS::OpenSearchService::Domain",
                "Properties": {"ClusterConfig": {"InstanceType": "t3.small.search"}},
            },
            **dict(extra),
        }
    }


_HTTP_API = ("Api", {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"ProtocolType": "HTTP"}})
_RULE = (
    "Rule",
    {
        "Type": "AWS::XRay::SamplingRule",
        "Properties": {"SamplingRule": {"ReservoirSize": 0, "FixedRate": 0.05}},
    },
)


def test_xray_sampling_is_the_rest_stages_rule_lambdas_fixed_rate_or_none() -> None:
    rest = deployment_from_template(
        "prod", _template("Active", ("Api", {"Type": "AWS::ApiGateway::RestApi"}), _RULE)
    )
    assert (rest.xray_reservoir, rest.xray_rate) == (0, 0.05)
    active = deployment_from_template("dev", _template("Active", _HTTP_API, _RULE))
    assert (active.xray_reservoir, active.xray_rate) == (1, 0.05)
    # At 1 call/s Lambda's reservoir traces every call: $5 per million.
    call = CallProfile(0, 0, 0, 0, 0, 0)
    assert cost_per_million(call, active, PRICES, calls_per_second=1)["xray"] == 5.0
    passing = deployment_from_template("dev", _template("PassThrough", _HTTP_API))
    assert (passing.xray_reservoir, passing.xray_rate) == (0, 0.0)


def test_waf_logs_cost_per_call_only_without_a_filter_dropping_allowed_requests() -> None:
    acl = ("Acl", {"Type": "AWS::WAFv2::WebACL", "Properties": {"Rules": [{}]}})

    def logging(filtered: bool) -> tuple[str, dict[str, Any]]:
        props: dict[str, Any] = {"LoggingFilter": {"DefaultBehavior": "DROP"}} if filtered else {}
        return ("Log", {"Type": "AWS::WAFv2::LoggingConfiguration", "Properties": props})

    prices = {**PRICES, "assumptions": {**PRICES["assumptions"], "waf_log_bytes_per_request": 1074}}
    call = CallProfile(0, 0, 0, 0, 0, 0)
    everything = deployment_from_template(
        "prod", _template("Active", _HTTP_API, acl, logging(False))
    )
    # 1M records of 1,074 bytes = 1 GiB (to a rounding) at $0.5.
    assert cost_per_million(call, everything, prices, calls_per_second=10)["waf_logs"] == (
        pytest.approx(0.5, abs=0.001)
    )
    blocked = deployment_from_template("prod", _template("Active", _HTTP_API, acl, logging(True)))
    assert cost_per_million(call, blocked, prices, calls_per_second=10)["waf_logs"] == 0.0


def _no_io(operation: str, *, cpu: float, group: bool, bare_route_ms: float = 0.0) -> Measured:
    """A run of `operation` with `cpu` ms in the gateway (1 ms in the group when it invokes
    one), no DynamoDB call and no log line."""
    return Measured(
        operation=operation,
        gateway_cpu_ms=cpu,
        group_cpu_ms=1 if group else 0,
        invokes_group=group,
        dynamodb_calls_gateway=0,
        dynamodb_calls_group=0,
        read_units=0,
        write_units=0,
        log_bytes={"INFO": 0},
        bare_route_ms=bare_route_ms,
    )


def test_the_billed_call_pays_the_rate_limiters_writes_at_the_default_token_limit() -> None:
    from shared.auth.cache import slice_size
    from shared.auth.models import DEFAULT_RATE_LIMIT_PER_MINUTE
    from shared.bench.cost import MEASURED_RATE_LIMIT_PER_MINUTE, RATES, VARIANTS

    measured = _no_io("memory_get", cpu=1, group=True)
    call = profile([measured], _deployment(), PRICES, mix={"memory_get": 1.0})
    # One reservation write per slice (1 % of 600/min: 6 requests), less what the measured
    # 100k/min token already paid.
    expected = 1 / slice_size(DEFAULT_RATE_LIMIT_PER_MINUTE) - 1 / slice_size(
        MEASURED_RATE_LIMIT_PER_MINUTE
    )
    assert call.write_units == pytest.approx(expected, abs=0.001)
    assert RATES == (1.0, 10.0)
    assert {"staging", "staging_domain"} <= set(VARIANTS)


def test_a_mix_of_one_operation_prices_that_operation_alone() -> None:
    runs = [_no_io("memory_get", cpu=2, group=True), _no_io("tools/list", cpu=40, group=False)]

    call = profile(runs, _deployment(), PRICES, mix={"memory_get": 1.0})

    # Only memory_get: gateway 2 + 10 (invoke) + 1 (group) = 13 ms; tools/list weighs nothing.
    assert (call.gateway_ms, call.group_ms, call.group_share) == (13, 1, 1.0)


def test_the_warm_overhead_is_the_gateways_own_time_over_the_bare_route() -> None:
    run = _no_io("ping", cpu=0.6, group=False, bare_route_ms=0.2)

    assert run.overhead_ratio == 3.0
