"""Deployment configuration from CDK context: environments, stack names, validation."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, DeployConfig
from shared.config import names

pytestmark = pytest.mark.infra


def _config(**context: object) -> DeployConfig:
    return DeployConfig.from_context(context.get)


def test_dev_is_the_default_and_each_developer_gets_a_stack() -> None:
    config = _config(developer="Alice.Smith")
    assert config.environment == "dev"
    assert config.stack_name == "cairn-dev-alice-smith"
    assert not config.is_prod
    assert not config.waf


def test_prod_has_one_stack_without_a_developer_and_waf_on() -> None:
    config = _config(env="prod", developer="alice")
    assert config.stack_name == "cairn-prod" == names.stack_name("prod")
    assert config.developer is None
    assert config.waf


def test_staging_is_one_stack_shaped_like_dev_in_what_it_keeps() -> None:
    config = DeployConfig.from_context({"env": "staging", "developer": "ignored"}.get)
    assert config.stack_name == "cairn-staging"
    # prod's front (and WAF): the smoke test goes through what prod's callers will
    assert (config.waf, config.api) == (True, "cloudfront")
    assert not config.is_prod  # destroyed with its stack: a rehearsal keeps no data


def test_an_existing_waf_acl_replaces_the_created_one() -> None:
    config = _config(env="prod", waf_acl_arn="arn:aws:wafv2:us-east-1:1:regional/webacl/x/y")
    assert not config.waf
    assert config.waf_acl_arn


def test_developer_names_are_short_and_safe_for_resource_names() -> None:
    config = _config(developer="9" * 40)
    assert config.developer is not None
    assert len(config.developer) <= 16
    assert config.developer[0].isalpha()
    assert len(config.stack_name) <= 32  # OpenSearch Serverless name limit


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"env": "qa"}, "`env` must be one of dev, staging, prod"),
        ({"domain_name": "mcp.example.com"}, "`domain_name` and `certificate_arn` go together"),
        ({"waf": "maybe"}, "`waf` must be true or false"),
        ({"throttle_rate": "0"}, "`throttle_rate` must be a positive integer"),
        ({"developer": "---"}, "pass -c developer=<you>"),
    ],
)
def test_bad_context_names_the_key_and_the_fix(context: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("<", "<").replace("(", r"\(")):
        _config(**{"developer": "tester", **context})


def _in_region(region: str | None, **context: object) -> DeployConfig:
    return DeployConfig.from_context({"env": "prod", **context}.get, region=region)


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_prod_outside_us_east_1_defaults_to_a_regional_waf_front(region: str) -> None:
    """A CLOUDFRONT-scope web ACL exists only in us-east-1: elsewhere, without one passed in,
    prod's WAF sits on a REST stage, so the pipeline's defaults synthesize in any region."""
    config = _in_region(region)
    assert (config.api, config.waf, config.region) == ("rest", True, region)
    edge_acl = "arn:aws:wafv2:us-east-1:111111111111:global/webacl/edge/abc"
    assert _in_region(region, waf_acl_arn=edge_acl).api == "cloudfront"


def test_prod_in_us_east_1_or_an_unknown_region_keeps_the_cloudfront_front() -> None:
    assert _in_region("us-east-1").api == "cloudfront"
    assert _in_region(None).api == "cloudfront"


def test_a_regional_front_needs_a_certificate_of_its_region() -> None:
    edge_certificate = "arn:aws:acm:us-east-1:111111111111:certificate/x"
    with pytest.raises(ConfigError, match="certificate in the stack's region, eu-west-1"):
        _in_region("eu-west-1", domain_name="mcp.example.com", certificate_arn=edge_certificate)
    regional = "arn:aws:acm:eu-west-1:111111111111:certificate/x"
    config = _in_region("eu-west-1", domain_name="mcp.example.com", certificate_arn=regional)
    assert config.api == "rest"


def test_tracing_is_a_choice_active_by_default() -> None:
    assert _config(developer="t").tracing == "active"
    assert _config(developer="t", tracing="pass_through").tracing == "pass_through"
    with pytest.raises(ConfigError, match="`tracing` must be active or pass_through"):
        _config(developer="t", tracing="sometimes")
