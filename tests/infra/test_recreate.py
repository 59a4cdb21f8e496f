"""Prod retains its stateful resources when the stack goes; a retained resource with a fixed
name would then make CloudFormation refuse to create the stack again ("already exists").

So in prod every retained resource that carries an explicit name either takes a part of the
stack's own id (new with each creation) into it, or is one whose name must stay fixed and is
listed here with the reason.
"""

from __future__ import annotations

import json
from typing import Any

from tests.infra.support import Synth

# CloudFormation property that names a resource, per type (where the template may set one).
NAME_PROPERTIES = {
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Scheduler::ScheduleGroup": "Name",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::OpenSearchServerless::Collection": "Name",
    "AWS::Cognito::UserPool": "UserPoolName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::KMS::Alias": "AliasName",
}


# Retained with a name that may stay fixed, and why.
FIXED_NAMES_ALLOWED = {
    # Cognito user pool names need not be unique: a new pool of the same name is created.
    "AWS::Cognito::UserPool": "names are not unique",
    # The issue asks prod to retain its search collection (rebuilding the index takes a full
    # re-index of DynamoDB); re-creating prod after deleting its stack is then a decision:
    # delete the old collection first, or deploy with another stack name
    # (docs/infra/observability.md).
    "AWS::OpenSearchServerless::Collection": "kept on purpose",
}


def _takes_the_stack_id(name: Any) -> bool:
    return "AWS::StackId" in json.dumps(name)


def test_no_retained_resource_with_a_fixed_name_blocks_re_creating_prod(prod: Synth) -> None:
    blocking = {
        logical_id: resource["Properties"][NAME_PROPERTIES[resource["Type"]]]
        for logical_id, resource in prod.resources.items()
        if resource.get("DeletionPolicy") == "Retain"
        and resource["Type"] in NAME_PROPERTIES
        and resource["Type"] not in FIXED_NAMES_ALLOWED
        and NAME_PROPERTIES[resource["Type"]] in resource.get("Properties", {})
        and not _takes_the_stack_id(resource["Properties"][NAME_PROPERTIES[resource["Type"]]])
    }
    assert blocking == {}


def test_the_state_machine_log_group_name_takes_the_stack_id(prod: Synth) -> None:
    log_group = prod.resources[prod.logical_id(prod.stack.workflows.log_group)]
    name = log_group["Properties"]["LogGroupName"]
    assert _takes_the_stack_id(name)
    assert json.dumps(name).count("/aws/vendedlogs/states/cairn-prod-workflows-") == 1
