"""Tasks in the coordination table: `TEAM#<team>` / `TASK#<id>`.

An open task (pending, claimed, running) also carries `queue_pk` / `queue_sk`, so the sparse
`open_tasks` index lists a team's open tasks by priority, then age. Every state change is one
conditional `UpdateItem`; a loser gets the item as it was (`ReturnValuesOnConditionCheckFailure`)
and learns why it lost without a second read.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shared.config.tables import OPEN_TASKS_INDEX
from shared.dynamo_values import check_item_size, from_dynamo, query_all, to_dynamo
from shared.orchestrator.tasks.models import Task

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

CONDITION_ATTRIBUTES = ("pk", "status", "claimed_by", "fence", "lease_epoch")
PRIORITY_OFFSET = 10_000  # queue_sk sorts ascending: offset - priority puts high priority first


class ConditionFailed(Exception):
    """A conditional write lost; `task` is the item as it was (None: it does not exist)."""

    def __init__(self, task: Task | None) -> None:
        super().__init__("condition failed")
        self.task = task


def _pk(team: str) -> str:
    return f"TEAM#{team}"


def _sk(task_id: str) -> str:
    return f"TASK#{task_id}"


def _queue_sk(task: Task) -> str:
    return f"{PRIORITY_OFFSET - task.priority:05d}#{task.created_at.isoformat()}#{task.id}"


def _task(item: dict[str, Any]) -> Task:
    return Task.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in Task.model_fields}
    )


class DynamoTaskStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def create(self, team: str, task: Task) -> None:
        item = {
            "pk": _pk(team),
            "sk": _sk(task.id),
            "team": team,
            "queue_pk": _pk(team),
            "queue_sk": _queue_sk(task),
            **to_dynamo(task.model_dump(mode="json", exclude_none=True), "input_data"),
        }
        check_item_size(item, "input_data")
        self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")

    def get(self, team: str, task_id: str) -> Task | None:
        item = self._table.get_item(
            Key={"pk": _pk(team), "sk": _sk(task_id)}, ConsistentRead=True
        ).get("Item")
        return _task(item) if item else None

    def update(
        self,
        team: str,
        task_id: str,
        changes: dict[str, Any],
        condition: str,
        values: dict[str, Any],
        *,
        close: bool = False,
    ) -> Task:
        """SET `changes` under `condition` (one write); `close` also takes it off the queue.

        `condition` names attributes as `#name` and values as `:name` (given in `values`).
        """
        names = {f"#{k}": k for k in changes}
        names.update({f"#{n}": n for n in CONDITION_ATTRIBUTES if f"#{n}" in condition})
        expression = "SET " + ", ".join(f"#{k} = :set_{k}" for k in changes)
        if close:
            expression += " REMOVE queue_pk, queue_sk"
        attribute_values = {f":set_{k}": to_dynamo(v) for k, v in changes.items()}
        attribute_values.update({k: to_dynamo(v) for k, v in values.items()})
        try:
            response = self._table.update_item(
                Key={"pk": _pk(team), "sk": _sk(task_id)},
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=attribute_values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            deserializer = TypeDeserializer()
            current = (
                _task({k: deserializer.deserialize(v) for k, v in old.items()}) if old else None
            )
            raise ConditionFailed(current) from exc
        return _task(response["Attributes"])

    def iter_open(self, team: str) -> Iterator[Task]:
        """Open tasks of the team: highest priority first, then oldest."""
        kwargs: dict[str, Any] = {
            "IndexName": OPEN_TASKS_INDEX,
            "KeyConditionExpression": Key("queue_pk").eq(_pk(team)),
        }
        for item in query_all(self._table, **kwargs):
            yield _task(item)

    def iter_team(self, team: str) -> Iterator[Task]:
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(_pk(team)) & Key("sk").begins_with("TASK#")
        }
        for item in query_all(self._table, **kwargs):
            yield _task(item)


def iso(moment: datetime) -> str:
    return moment.isoformat()
