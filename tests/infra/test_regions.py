"""Prod as the pipeline deploys it (its defaults: no domain, no web ACL passed in, an alarm
address) synthesizes outside us-east-1, cdk-nag clean: the WAF sits on a REST stage there,
since a CLOUDFRONT-scope web ACL can be created in us-east-1 only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.support import Synth, nag_findings, synthesize

# Each synthesizes a whole prod stack (tens of seconds on the build machine).
pytestmark = pytest.mark.bench

PIPELINE_DEFAULTS = {"env": "prod", "alarm_email": "oncall@example.com"}


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_prod_with_the_pipelines_defaults_synthesizes_in(region: str, tmp_path: Path) -> None:
    synth: Synth = synthesize(tmp_path, region=region, **PIPELINE_DEFAULTS)
    assert synth.stack.region == region
    assert synth.stack.config.api == "rest"
    (acl,) = synth.of_type("AWS::WAFv2::WebACL").values()
    assert acl["Properties"]["Scope"] == "REGIONAL"
    assert synth.of_type("AWS::WAFv2::WebACLAssociation")
    assert not synth.of_type("AWS::CloudFront::Distribution")
    # No us-east-1-only assertion left in the template.
    assert "CloudFrontWafRegion" not in synth.document.get("Rules", {})
    assert nag_findings(synth.stack) == []
