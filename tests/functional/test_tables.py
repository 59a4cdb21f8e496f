"""The moto tables come from the same definitions as the CDK stack's tables."""

from __future__ import annotations

import boto3

from shared.config import names
from shared.config.settings import Settings
from shared.config.tables import ALL_TABLES, physical_name


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
