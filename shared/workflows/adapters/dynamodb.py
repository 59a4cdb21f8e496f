"""Workflows and executions in the coordination table, beside the tasks their steps become.

Items: `TEAM#<team>` / `WF#<id>` (the workflow), `WFNAME#<name>` (the name's owner: a team has
one workflow per name, so create is a transaction of both), `WFX#<id>` (an execution). Records
are kept as one JSON string attribute (`record`): a step's inputs and outputs are arbitrary JSON,
which DynamoDB's number type would otherwise turn into Decimals. Workflow ids begin with their
creation time, so `WF#` items read newest first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from shared.domain_events.adapters.outbox import DynamoOutbox
from shared.domain_events.models import DomainEvent
from shared.storage.dynamo import ConditionLost, put_if, query_all, query_page, team_pk
from shared.storage.pages import Page
from shared.storage.times import sortable
from shared.workflows.models import OPEN_EXECUTIONS, Execution, Workflow
from shared.workflows.ports import NameTaken, StaleWrite

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


def _record(model: Workflow | Execution) -> str:
    return json.dumps(model.model_dump(mode="json"), separators=(",", ":"))


def _workflow(item: dict[str, Any]) -> Workflow:
    return Workflow.model_validate_json(str(item["record"]))


def _execution(item: dict[str, Any]) -> Execution:
    return Execution.model_validate_json(str(item["record"]))


def _execution_item(team: str, execution: Execution) -> dict[str, Any]:
    return {
        "pk": team_pk(team),
        "sk": f"WFX#{execution.id}",
        "team": team,
        "status": execution.status,
        "revision": execution.revision,
        "record": _record(execution),
    }


class DynamoWorkflowStore:
    """`WorkflowStore` on the coordination table."""

    def __init__(self, table: Table) -> None:
        self._table = table
        # The event log lives in this same table.
        self._outbox = DynamoOutbox(table)

    def _workflow_item(self, team: str, workflow: Workflow) -> dict[str, Any]:
        return {
            "pk": team_pk(team),
            "sk": f"WF#{workflow.id}",
            "team": team,
            "name": workflow.name,
            "updated_at": sortable(workflow.updated_at),
            "record": _record(workflow),
        }

    def create(self, team: str, workflow: Workflow) -> None:
        client = self._table.meta.client
        try:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._table.name,
                            "Item": {
                                "pk": team_pk(team),
                                "sk": f"WFNAME#{workflow.name}",
                                "workflow_id": workflow.id,
                            },
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table.name,
                            "Item": self._workflow_item(team, workflow),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            raise NameTaken(self.find_by_name(team, workflow.name)) from exc

    def get(self, team: str, workflow_id: str) -> Workflow | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": f"WF#{workflow_id}"}, ConsistentRead=True
        ).get("Item")
        return _workflow(item) if item else None

    def find_by_name(self, team: str, name: str) -> Workflow | None:
        owner = self._table.get_item(
            Key={"pk": team_pk(team), "sk": f"WFNAME#{name}"}, ConsistentRead=True
        ).get("Item")
        return self.get(team, str(owner["workflow_id"])) if owner else None

    def replace(self, team: str, workflow: Workflow, expected_updated_at: datetime) -> None:
        try:
            put_if(
                self._table,
                self._workflow_item(team, workflow),
                "updated_at = :expected",
                values={":expected": sortable(expected_updated_at)},
            )
        except ConditionLost as lost:
            raise StaleWrite(workflow.id) from lost

    def list_team(self, team: str, *, limit: int, cursor: str | None = None) -> Page[Workflow]:
        return query_page(
            self._table,
            team,
            _workflow,
            limit=limit,
            cursor=cursor,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with("WF#"),
            ScanIndexForward=False,
            ConsistentRead=True,
        )

    def create_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        self._outbox.put_if(
            self._table, team, _execution_item(team, execution), "attribute_not_exists(pk)", events
        )

    def get_execution(self, team: str, execution_id: str) -> Execution | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": f"WFX#{execution_id}"}, ConsistentRead=True
        ).get("Item")
        return _execution(item) if item else None

    def save_execution(
        self, team: str, execution: Execution, *, events: Sequence[DomainEvent] = ()
    ) -> None:
        try:
            self._outbox.put_if(
                self._table,
                team,
                _execution_item(team, execution),
                "revision = :previous",
                events,
                values={":previous": execution.revision - 1},
            )
        except ConditionLost as lost:
            raise StaleWrite(execution.id) from lost

    def open_executions(self, team: str | None = None) -> list[tuple[str, Execution]]:
        if team is None:
            # Every DynamoDB read names its team: the AWS path sweeps one team at a time.
            raise ValueError("the DynamoDB workflow store reads one team at a time")
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with("WFX#"),
            FilterExpression=Attr("status").is_in(sorted(OPEN_EXECUTIONS)),
            ConsistentRead=True,
        )
        return [(team, _execution(item)) for item in items]
