"""The gateway's `live` alias moves through CodeDeploy: a canary in prod, rolled back on error."""

from __future__ import annotations

import json

from tests.infra.support import Synth


def test_prod_moves_the_live_alias_by_canary_and_rolls_back_on_errors(prod: Synth) -> None:
    (group,) = prod.of_type("AWS::CodeDeploy::DeploymentGroup").values()
    properties = group["Properties"]
    assert properties["DeploymentConfigName"] == "CodeDeployDefault.LambdaCanary10Percent5Minutes"
    assert properties["AutoRollbackConfiguration"]["Enabled"] is True
    assert "DEPLOYMENT_STOP_ON_ALARM" in properties["AutoRollbackConfiguration"]["Events"]
    (watched,) = properties["AlarmConfiguration"]["Alarms"]
    # The gateway's errors alarm: the function-wide metric counts the canary version's calls,
    # and the same alarm pages on-call through the topic.
    alarm = prod.resources[watched["Name"]["Ref"]]["Properties"]
    assert alarm["MetricName"] == "Errors"
    assert alarm["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": prod.functions()["gateway"]}}
    ]
    assert alarm["AlarmActions"]
    (alias_id, alias) = next(iter(prod.of_type("AWS::Lambda::Alias").items()))
    assert "CodeDeployLambdaAliasUpdate" in json.dumps(alias.get("UpdatePolicy", {}))
    assert alias_id


def test_dev_deploys_the_gateway_all_at_once(dev: Synth) -> None:
    (group,) = dev.of_type("AWS::CodeDeploy::DeploymentGroup").values()
    assert group["Properties"]["DeploymentConfigName"] == "CodeDeployDefault.LambdaAllAtOnce"
