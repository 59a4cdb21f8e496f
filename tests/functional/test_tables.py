"""The moto tables come from the same definitions as the CDK stack's tables."""

from __future__ import annotations

import boto3

from shared.config import names
from shared.config.settings import Settings
from shared.config.tables import ALL_TABLES, physical_name
from tests.fake_aws import fake_aws


def test_every_table_spec_exists_with_its_keys_indexes_ttl_and_stream(aws: Settings) -> None:
    client = boto3.client("dynamodb", region_name=aws.region)
    for spec in ALL_TABLES:
        name = physical_name(spec)
        table = client.describe_table(TableName=name)["Table"]
        keys = {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]}
        assert keys[spec.partition_key] == "HASH"
        if spec.sort_key:
            assert keys[spec.sort_key] == "RANGE"
        assert sorted(i["IndexName"] for i in table.get("GlobalSecondaryIndexes", [])) == sorted(
            i.name for i in spec.indexes
        )
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert bool(table.get("StreamSpecification", {}).get("StreamEnabled")) == spec.stream
        ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        assert ttl["AttributeName"] == names.TTL_ATTRIBUTE


def test_the_memories_table_streams_for_the_curator() -> None:
    memories = next(s for s in ALL_TABLES if s.logical_id == names.TABLE_MEMORIES)
    assert memories.stream


def test_each_fake_aws_starts_empty_whatever_the_test_before_left() -> None:
    # Given a test that wrote to every table and made a queue
    with fake_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            client.put_item(
                TableName=physical_name(spec),
                Item={spec.partition_key: {"S": "left"}, "sk": {"S": "behind"}},
            )
        boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="left-behind")

    # When the next test starts, then its tables are there, empty, and the queue is gone
    with fake_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            assert client.scan(TableName=physical_name(spec))["Items"] == []
        assert "QueueUrls" not in boto3.client("sqs", region_name="us-east-1").list_queues()
