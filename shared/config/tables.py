"""DynamoDB table definitions: one source of truth for the CDK stack and the moto tables.

`infra/` turns each `TableSpec` into a `dynamodb.Table`; the local embedded default and the
functional tests call `create_table_kwargs` to create the same tables in moto.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from shared.config import names


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index (string keys only; cairn never needs numeric index keys)."""

    name: str
    partition_key: str
    sort_key: str | None = None
    projection: str = "ALL"  # ALL | KEYS_ONLY


@dataclass(frozen=True)
class TableSpec:
    """A table cairn owns. Keys are strings named `pk` / `sk` unless stated otherwise."""

    logical_id: str
    partition_key: str = "pk"
    sort_key: str | None = "sk"
    indexes: tuple[IndexSpec, ...] = field(default_factory=tuple)
    ttl_attribute: str | None = names.TTL_ATTRIBUTE
    stream: bool = False


TOKENS: Final = TableSpec(
    logical_id=names.TABLE_TOKENS,
    indexes=(
        IndexSpec(name="by_token_id", partition_key="token_id", projection="KEYS_ONLY"),
        IndexSpec(name="by_team", partition_key="team", sort_key="created_at"),
    ),
)
MEMORIES: Final = TableSpec(logical_id=names.TABLE_MEMORIES, stream=True)
DOCUMENTS: Final = TableSpec(logical_id=names.TABLE_DOCUMENTS)
# Sparse: only unclaimed handoffs carry `open_pk`, so the index lists exactly what can be claimed.
OPEN_HANDOFFS_INDEX: Final = "open_by_team"
HANDOFFS: Final = TableSpec(
    logical_id=names.TABLE_HANDOFFS,
    indexes=(IndexSpec(name=OPEN_HANDOFFS_INDEX, partition_key="open_pk", sort_key="created_at"),),
)

# Connector state and each team's sync lock.
SYNC: Final = TableSpec(logical_id=names.TABLE_SYNC)

# The orchestrator's agents and tasks. Open tasks (pending, claimed, running) carry `queue_pk`,
# so the sparse `open_tasks` index lists exactly what may be polled, by priority then age.
OPEN_TASKS_INDEX: Final = "open_tasks"
# Its stream feeds the event publisher: the team's event log here is the outbox of domain
# events (shared.domain_events.publisher).
COORDINATION: Final = TableSpec(
    logical_id=names.TABLE_COORDINATION,
    indexes=(IndexSpec(name=OPEN_TASKS_INDEX, partition_key="queue_pk", sort_key="queue_sk"),),
    stream=True,
)

# Persona sessions (seed 004), their messages and model choices. `sessions_by_owner` lists a
# persona's sessions with one wallet, most recently updated first (only session items carry
# `owner_pk`).
SESSIONS_BY_OWNER_INDEX: Final = "sessions_by_owner"
SESSIONS: Final = TableSpec(
    logical_id=names.TABLE_SESSIONS,
    indexes=(
        IndexSpec(name=SESSIONS_BY_OWNER_INDEX, partition_key="owner_pk", sort_key="updated_key"),
    ),
)

# Seed 003's captured events, knowledge nodes, entities, CI runs and lessons. Events, nodes and
# CI runs carry `ts_pk` / `ts_sk` (kind within team, then time), so `by_time` lists them newest
# first; entities, lessons and session pointers stay out of it.
KNOWLEDGE_TIME_INDEX: Final = "by_time"
KNOWLEDGE: Final = TableSpec(
    logical_id=names.TABLE_KNOWLEDGE,
    indexes=(IndexSpec(name=KNOWLEDGE_TIME_INDEX, partition_key="ts_pk", sort_key="ts_sk"),),
)

ALL_TABLES: Final[tuple[TableSpec, ...]] = (
    TOKENS,
    MEMORIES,
    DOCUMENTS,
    HANDOFFS,
    SYNC,
    COORDINATION,
    SESSIONS,
    KNOWLEDGE,
)


def physical_name(spec: TableSpec, prefix: str = names.SERVICE) -> str:
    """The table name used locally and in tests (the CDK stack lets CloudFormation name tables)."""
    return f"{prefix}-{spec.logical_id}"


def create_table_kwargs(spec: TableSpec, table_name: str) -> dict[str, Any]:
    """boto3 `create_table` arguments for `spec`, on-demand billing, as the CDK stack builds it."""
    attributes = {spec.partition_key}
    key_schema: list[dict[str, str]] = [{"AttributeName": spec.partition_key, "KeyType": "HASH"}]
    if spec.sort_key:
        attributes.add(spec.sort_key)
        key_schema.append({"AttributeName": spec.sort_key, "KeyType": "RANGE"})
    gsis: list[dict[str, Any]] = []
    for index in spec.indexes:
        index_keys = [{"AttributeName": index.partition_key, "KeyType": "HASH"}]
        attributes.add(index.partition_key)
        if index.sort_key:
            attributes.add(index.sort_key)
            index_keys.append({"AttributeName": index.sort_key, "KeyType": "RANGE"})
        gsis.append(
            {
                "IndexName": index.name,
                "KeySchema": index_keys,
                "Projection": {"ProjectionType": index.projection},
            }
        )
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "KeySchema": key_schema,
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"} for name in sorted(attributes)
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if gsis:
        kwargs["GlobalSecondaryIndexes"] = gsis
    if spec.stream:
        kwargs["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
    return kwargs


def create_tables(client: Any, prefix: str = names.SERVICE) -> dict[str, str]:
    """Create every table (and its TTL setting) through `client`; returns logical id → name."""
    created: dict[str, str] = {}
    for spec in ALL_TABLES:
        table_name = physical_name(spec, prefix)
        client.create_table(**create_table_kwargs(spec, table_name))
        if spec.ttl_attribute:
            client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
            )
        created[spec.logical_id] = table_name
    return created
