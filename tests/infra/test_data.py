"""Data: tables built from shared.config.tables, the bucket, the pepper secret."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from shared.config import names
from shared.config.tables import ALL_TABLES, create_table_kwargs
from tests.infra.support import Synth

pytestmark = pytest.mark.infra


def _table(synth: Synth, logical_id: str) -> dict:
    table = synth.stack.data.table(logical_id)
    return synth.resources[synth.logical_id(table)]


def test_there_is_one_table_per_spec_and_no_other(synth: Synth) -> None:
    assert len(synth.of_type("AWS::DynamoDB::Table")) == len(ALL_TABLES)
    assert set(synth.stack.data.tables) == {spec.logical_id for spec in ALL_TABLES}


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda s: s.logical_id)
def test_table_keys_and_indexes_match_the_shared_spec(synth: Synth, spec) -> None:
    # Given the boto3 create_table arguments the moto tables are built from
    expected = create_table_kwargs(spec, "ignored")
    # When reading the synthesized table
    props = _table(synth, spec.logical_id)["Properties"]
    # Then keys, attributes, indexes and the stream are the same definition
    assert props["KeySchema"] == expected["KeySchema"]
    assert (
        sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"])
        == expected["AttributeDefinitions"]
    )
    gsis = sorted(props.get("GlobalSecondaryIndexes", []), key=lambda i: i["IndexName"])
    assert gsis == sorted(expected.get("GlobalSecondaryIndexes", []), key=lambda i: i["IndexName"])
    assert props["BillingMode"] == expected["BillingMode"]
    assert props.get("StreamSpecification", {}).get("StreamViewType") == expected.get(
        "StreamSpecification", {}
    ).get("StreamViewType")


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda s: s.logical_id)
def test_every_table_has_pitr_ttl_and_server_side_encryption(synth: Synth, spec) -> None:
    props = _table(synth, spec.logical_id)["Properties"]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": names.TTL_ATTRIBUTE,
        "Enabled": True,
    }
    assert props["SSESpecification"]["SSEEnabled"] is True


def test_only_the_memories_and_coordination_tables_stream_new_and_old_images(dev: Synth) -> None:
    # memories: the curator; coordination: the domain event publisher (its event log is the outbox)
    for spec in ALL_TABLES:
        stream = _table(dev, spec.logical_id)["Properties"].get("StreamSpecification")
        if spec.logical_id in (names.TABLE_MEMORIES, names.TABLE_COORDINATION):
            assert stream == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
        else:
            assert stream is None


def test_prod_tables_are_retained_and_deletion_protected(prod: Synth) -> None:
    for spec in ALL_TABLES:
        table = _table(prod, spec.logical_id)
        assert table["DeletionPolicy"] == "Retain"
        assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_dev_tables_are_destroyed_with_the_stack(dev: Synth) -> None:
    for spec in ALL_TABLES:
        table = _table(dev, spec.logical_id)
        assert table["DeletionPolicy"] == "Delete"
        assert not table["Properties"].get("DeletionProtectionEnabled")


def test_artifacts_bucket_is_encrypted_versioned_private_logged_and_expiring(synth: Synth) -> None:
    bucket = synth.resources[synth.logical_id(synth.stack.data.bucket)]
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert "DestinationBucketName" in props["LoggingConfiguration"]
    rules = {rule["Id"] for rule in props["LifecycleConfiguration"]["Rules"]}
    assert {"abort-incomplete-uploads", "expire-old-versions", "expire-processed-inbox"} <= rules
    assert bucket["DeletionPolicy"] == "Retain"


def test_every_bucket_refuses_plain_http(synth: Synth) -> None:
    buckets = synth.of_type("AWS::S3::Bucket")
    # artifacts + its access logs, and behind CloudFront (prod) the distribution's standard logs
    assert len(buckets) == (3 if synth.stack.api.front == "cloudfront" else 2)
    for logical_id in buckets:
        synth.template.has_resource_properties(
            "AWS::S3::BucketPolicy",
            {
                "Bucket": {"Ref": logical_id},
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Action": "s3:*",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                    "Principal": {"AWS": "*"},
                                }
                            )
                        ]
                    )
                },
            },
        )


def test_the_token_pepper_is_a_generated_secret(synth: Synth) -> None:
    # The pepper and the knowledge group's GitHub webhook secrets (infra/knowledge.py), and in
    # prod (behind CloudFront) the origin header CloudFront adds (infra/api.py).
    expected = 3 if synth.stack.api.front == "cloudfront" else 2
    synth.template.resource_count_is("AWS::SecretsManager::Secret", expected)
    synth.template.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {"GenerateSecretString": Match.object_like({"PasswordLength": 64})},
    )
