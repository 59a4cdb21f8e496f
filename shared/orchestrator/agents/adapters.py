"""Agents in DynamoDB, on the coordination table.

- `TEAM#<team>` / `AGENT#<agent_id>`: the agent record (its token's id included, never the
  secret). `metadata` is stored as a JSON string (`metadata_json`): DynamoDB has no floats, and
  the object is opaque to cairn.
- `TEAM#<team>` / `AGENT_NAME#<name>`: the name alias, `agent_id` of the agent holding the name.
  It is written in the same transaction as the record under `attribute_not_exists` (or, when an
  agent is replaced, under `agent_id = <the replaced one>`), so two registrations of one name can
  never both win.

A deregistered record stays (so a task's history still names a known agent) with a TTL of
`RETIRED_DAYS`; its alias is deleted. DynamoDB's TTL collects late, so a record whose TTL has
passed is treated as gone at read time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from shared.config.names import TTL_ATTRIBUTE
from shared.orchestrator.agents.models import DEREGISTERED, AgentRecord
from shared.orchestrator.agents.ports import AgentChanges, NameTaken, UnknownAgent
from shared.storage.dynamo import ConditionLost, delete_if, query_all, team_pk, update_if

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

AGENT_PREFIX = "AGENT#"
NAME_PREFIX = "AGENT_NAME#"
# How long a deregistered agent's record is kept before DynamoDB TTL collects it.
RETIRED_DAYS = 30
_ACTIVE = "attribute_exists(pk) AND attribute_not_exists(deregistered_at)"


def _agent_key(team: str, agent_id: str) -> dict[str, str]:
    return {"pk": team_pk(team), "sk": AGENT_PREFIX + agent_id}


def _name_key(team: str, name: str) -> dict[str, str]:
    return {"pk": team_pk(team), "sk": NAME_PREFIX + name}


def _retired_epoch(at: datetime) -> int:
    return int((at + timedelta(days=RETIRED_DAYS)).timestamp())


def _item(team: str, agent: AgentRecord) -> dict[str, Any]:
    fields = agent.model_dump(mode="json", exclude_none=True, exclude={"metadata"})
    return {
        **_agent_key(team, agent.agent_id),
        "team": team,
        **fields,
        "metadata_json": json.dumps(agent.metadata, ensure_ascii=False),
    }


def agent_from_item(item: dict[str, Any]) -> AgentRecord:
    """The agent record of a stored item (also what the SQLite store's migration reads)."""
    fields = {k: v for k, v in item.items() if k in AgentRecord.model_fields}
    fields["max_concurrent_tasks"] = int(item["max_concurrent_tasks"])
    fields["metadata"] = json.loads(str(item.get("metadata_json") or "{}"))
    return AgentRecord.model_validate(fields)


def _collected(item: dict[str, Any]) -> bool:
    """Whether the item's TTL has passed (TTL deletes hours to days late)."""
    ttl = item.get(TTL_ATTRIBUTE)
    return ttl is not None and int(ttl) < int(datetime.now(UTC).timestamp())


class DynamoAgentStore:
    """`AgentStore` on the coordination table (see `shared.config.tables.COORDINATION`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, team: str, agent_id: str) -> AgentRecord | None:
        item = self._table.get_item(Key=_agent_key(team, agent_id), ConsistentRead=True).get("Item")
        return agent_from_item(item) if item and not _collected(item) else None

    def get_by_name(self, team: str, name: str) -> AgentRecord | None:
        holder = self._alias_holder(team, name)
        if holder is None:
            return None
        record = self.get(team, holder)
        if record is None:
            # The alias outlived its record (TTL collected it): free the name for good.
            self._release_name(team, name, holder)
        return record

    def _release_name(self, team: str, name: str, agent_id: str) -> None:
        """Delete the name alias if it still points at `agent_id` (else leave it)."""
        try:
            delete_if(
                self._table, _name_key(team, name), "agent_id = :me", values={":me": agent_id}
            )
        except ConditionLost:
            return

    def _alias_holder(self, team: str, name: str) -> str | None:
        alias = self._table.get_item(Key=_name_key(team, name), ConsistentRead=True).get("Item")
        return str(alias["agent_id"]) if alias else None

    def create(
        self, team: str, agent: AgentRecord, *, replacing: AgentRecord | None = None
    ) -> None:
        table = self._table.name
        alias: dict[str, Any] = {
            "TableName": table,
            "Item": {**_name_key(team, agent.name), "team": team, "agent_id": agent.agent_id},
        }
        if replacing is None:
            alias["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            alias["ConditionExpression"] = "agent_id = :replaced"
            alias["ExpressionAttributeValues"] = {":replaced": replacing.agent_id}
        writes: list[dict[str, Any]] = [
            # Ids are random: a collision would be a bug, never an overwrite.
            {
                "Put": {
                    "TableName": table,
                    "Item": _item(team, agent),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": alias},
        ]
        if replacing is not None and replacing.is_active:
            writes.append(
                {
                    "Update": {
                        "TableName": table,
                        "Key": _agent_key(team, replacing.agent_id),
                        "UpdateExpression": "SET #status = :dereg, replaced_by = :new, "
                        "deregistered_at = if_not_exists(deregistered_at, :at), "
                        "#ttl = if_not_exists(#ttl, :ttl)",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeNames": {"#status": "status", "#ttl": TTL_ATTRIBUTE},
                        "ExpressionAttributeValues": {
                            ":dereg": DEREGISTERED,
                            ":new": agent.agent_id,
                            ":at": agent.created_at.isoformat(),
                            ":ttl": _retired_epoch(agent.created_at),
                        },
                    }
                }
            )
        try:
            # The record, its name and the retirement of the agent it replaces: all or nothing.
            self._table.meta.client.transact_write_items(TransactItems=writes)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            raise NameTaken(self._alias_holder(team, agent.name)) from exc

    def update(self, team: str, agent_id: str, changes: AgentChanges) -> None:
        # Moments are ISO strings in the item, as the record's JSON has them.
        values = {
            name: value.isoformat() if isinstance(value, datetime) else value
            for name, value in changes.given().items()
        }
        if not values:
            return
        try:
            update_if(
                self._table,
                _agent_key(team, agent_id),
                "SET " + ", ".join(f"#{k} = :{k}" for k in values),
                _ACTIVE,
                names={f"#{k}": k for k in values},
                values={f":{k}": v for k, v in values.items()},
            )
        except ConditionLost as exc:
            raise UnknownAgent(agent_id) from exc

    def deregister(self, team: str, agent_id: str, at: datetime) -> AgentRecord:
        try:
            updated = update_if(
                self._table,
                _agent_key(team, agent_id),
                "SET #status = :dereg, "
                "deregistered_at = if_not_exists(deregistered_at, :at), "
                "#ttl = if_not_exists(#ttl, :ttl)",
                # A record whose TTL has passed is gone, even before TTL collects it.
                "attribute_exists(pk) AND (attribute_not_exists(#ttl) OR #ttl >= :now)",
                names={"#status": "status", "#ttl": TTL_ATTRIBUTE},
                values={
                    ":dereg": DEREGISTERED,
                    ":at": at.isoformat(),
                    ":ttl": _retired_epoch(at),
                    ":now": int(datetime.now(UTC).timestamp()),
                },
            )
        except ConditionLost as exc:
            raise UnknownAgent(agent_id) from exc
        record = agent_from_item(updated)
        # Free the name only if it still points here (an overwrite may have moved it on).
        self._release_name(team, record.name, agent_id)
        return record

    def iter_team(self, team: str) -> Iterator[AgentRecord]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(AGENT_PREFIX),
            "ConsistentRead": True,
        }
        for item in query_all(self._table, **kwargs):
            if not _collected(item):
                yield agent_from_item(item)
