"""Prod retains its stateful resources when the stack goes; a retained resource with a fixed
name would then make CloudFormation refuse to create the stack again ("already exists").

So in prod every retained resource that carries an explicit name takes a part of the stack's
own id into it (`infra.naming`: new with each creation), or is of a type whose names need not
be unique. Every name-like property of every resource type either stack creates is classified
below, so a new named type fails here until someone says whether it names the resource.
"""

from __future__ import annotations

import json
from typing import Any

from tests.infra.support import Synth

# CloudFormation property that names the resource itself, per type.
NAME_PROPERTIES = {
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Logs::ResourcePolicy": "PolicyName",
    "AWS::Scheduler::ScheduleGroup": "Name",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Events::EventBus": "Name",
    "AWS::Events::Archive": "ArchiveName",
    "AWS::OpenSearchServerless::Collection": "Name",
    "AWS::OpenSearchServerless::SecurityPolicy": "Name",
    "AWS::OpenSearchServerless::AccessPolicy": "Name",
    "AWS::OpenSearchService::Domain": "DomainName",
    "AWS::Cognito::UserPool": "UserPoolName",
    "AWS::Cognito::UserPoolDomain": "Domain",
    "AWS::Cognito::UserPoolResourceServer": "Name",
    "AWS::Cognito::UserPoolClient": "ClientName",
    "AWS::CloudFront::Function": "Name",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::KMS::Alias": "AliasName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Lambda::Alias": "Name",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::Policy": "PolicyName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::XRay::SamplingRule": "RuleName",
    "AWS::WAFv2::WebACL": "Name",
    "AWS::ApiGateway::RestApi": "Name",
    "AWS::ApiGatewayV2::Api": "Name",
    "AWS::Route53::RecordSet": "Name",
    "AWS::Scheduler::Schedule": "Name",
}
# Name-like properties that name something else (or nothing unique), per type.
NOT_ITS_NAME = {
    ("AWS::Lambda::Alias", "FunctionName"),
    ("AWS::Lambda::Version", "FunctionName"),
    ("AWS::Lambda::Permission", "FunctionName"),
    ("AWS::Lambda::EventSourceMapping", "FunctionName"),
    ("AWS::Lambda::EventInvokeConfig", "FunctionName"),
    ("AWS::CodeDeploy::DeploymentGroup", "ApplicationName"),
    ("AWS::CodeDeploy::DeploymentGroup", "DeploymentConfigName"),
    ("AWS::CloudWatch::Alarm", "MetricName"),
    ("AWS::SNS::Topic", "DisplayName"),
    ("AWS::Scheduler::Schedule", "GroupName"),
    ("AWS::ApiGateway::Stage", "StageName"),
    ("AWS::ApiGateway::BasePathMapping", "DomainName"),
    ("AWS::ApiGateway::DomainName", "DomainName"),
    ("AWS::ApiGatewayV2::Stage", "StageName"),
    ("AWS::ApiGatewayV2::ApiMapping", "DomainName"),
    ("AWS::ApiGatewayV2::DomainName", "DomainName"),
    ("Custom::SearchIndexTemplate", "TemplateName"),
}
# Retained under a name that may stay fixed, and why.
FIXED_NAMES_ALLOWED = {
    # Cognito user pool names need not be unique: a new pool of the same name is created.
    "AWS::Cognito::UserPool": "names are not unique",
}


def _name_like(key: str) -> bool:
    return key == "Name" or key.endswith("Name") or key == "Domain"


def _takes_the_stack_id(name: Any) -> bool:
    return "AWS::StackId" in json.dumps(name)


def test_every_name_like_property_is_classified(synth: Synth) -> None:
    unknown = {
        (resource["Type"], key)
        for resource in synth.resources.values()
        for key in resource.get("Properties", {})
        if _name_like(key)
        and NAME_PROPERTIES.get(resource["Type"]) != key
        and (resource["Type"], key) not in NOT_ITS_NAME
    }
    assert unknown == set()


def test_no_retained_resource_with_a_fixed_name_blocks_re_creating_prod(prod: Synth) -> None:
    retained = {
        logical_id: resource
        for logical_id, resource in prod.resources.items()
        if "Retain" in (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy"))
    }
    assert retained  # prod keeps its data
    blocking = {
        logical_id: resource["Properties"][NAME_PROPERTIES[resource["Type"]]]
        for logical_id, resource in retained.items()
        if resource["Type"] in NAME_PROPERTIES
        and resource["Type"] not in FIXED_NAMES_ALLOWED
        and NAME_PROPERTIES[resource["Type"]] in resource.get("Properties", {})
        and not _takes_the_stack_id(resource["Properties"][NAME_PROPERTIES[resource["Type"]]])
    }
    assert blocking == {}


def test_the_collection_and_its_policies_are_kept_together_under_the_stacks_id(
    prod: Synth,
) -> None:
    search = {
        logical_id: resource
        for logical_id, resource in prod.resources.items()
        if resource["Type"].startswith("AWS::OpenSearchServerless::")
    }
    assert len(search) == 4  # the collection, its encryption, network and data access policies
    for resource in search.values():
        assert resource["DeletionPolicy"] == "Retain"
        assert _takes_the_stack_id(resource["Properties"]["Name"])


def test_the_event_bus_goes_with_its_stack(prod: Synth) -> None:
    (bus,) = prod.of_type("AWS::Events::EventBus").values()
    assert bus.get("DeletionPolicy", "Delete") == "Delete"


def test_the_state_machine_log_group_name_takes_the_stack_id(prod: Synth) -> None:
    log_group = prod.resources[prod.logical_id(prod.stack.workflows.log_group)]
    name = log_group["Properties"]["LogGroupName"]
    assert _takes_the_stack_id(name)
    assert json.dumps(name).count("/aws/vendedlogs/states/cairn-prod-workflows-") == 1
