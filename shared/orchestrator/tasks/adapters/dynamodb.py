"""Tasks in the coordination table: `TEAM#<team>` / `TASK#<id>`.

An open task (pending, claimed, running) also carries `queue_pk` / `queue_sk`, so the sparse
`open_tasks` index lists a team's open tasks by priority, then age; closing a task removes both
in the same write. A claimed or running task carries `lease_epoch` (its lease's end in whole
seconds), which the conditions compare. Every state change is one conditional `UpdateItem`
(`update_if`); a loser gets the item as it was and learns why it lost without a second read.
A change with domain events is one `TransactWriteItems` of the same update and the events' log
items (`DynamoOutbox`), then a consistent read of the task (a transaction returns no item).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.config.tables import OPEN_TASKS_INDEX
from shared.domain_events.adapters.outbox import DynamoOutbox
from shared.domain_events.models import DomainEvent
from shared.orchestrator.tasks.adapters.listing import cursor_after, newest_first, position_of
from shared.orchestrator.tasks.models import OPEN_STATUSES, Task
from shared.orchestrator.tasks.ports import (
    AlreadyClosed,
    ClaimLost,
    ClaimNotHeld,
    TaskClaim,
    TaskConflict,
    TaskFilter,
    TaskFinish,
)
from shared.storage.dynamo import ConditionLost, query_all, team_pk
from shared.storage.pages import Page
from shared.storage.values import check_item_size, from_dynamo, to_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

PRIORITY_OFFSET = 10_000  # queue_sk sorts ascending: offset - priority puts high priority first
_OPEN_VALUES = {":pending": "pending", ":claimed": "claimed", ":running": "running"}


def _sk(task_id: str) -> str:
    return f"TASK#{task_id}"


def _queue_sk(task: Task) -> str:
    return f"{PRIORITY_OFFSET - task.priority:05d}#{task.created_at.isoformat()}#{task.id}"


def _task(item: dict[str, Any]) -> Task:
    return Task.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in Task.model_fields}
    )


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _stored(value: Any) -> Any:
    # Moments are ISO strings in the item, as `Task`'s JSON has them.
    return value.isoformat() if isinstance(value, datetime) else value


class DynamoTaskStore:
    """`TaskStore` on the coordination table (see `shared.config.tables.COORDINATION`)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        # The event log lives in this same table.
        self._outbox = DynamoOutbox(table)

    def create(self, team: str, task: Task, *, events: Sequence[DomainEvent] = ()) -> None:
        item = {
            "pk": team_pk(team),
            "sk": _sk(task.id),
            "team": team,
            "queue_pk": team_pk(team),
            "queue_sk": _queue_sk(task),
            **to_dynamo(task.model_dump(mode="json", exclude_none=True), "input_data"),
        }
        check_item_size(item, "input_data")
        self._outbox.put_if(self._table, team, item, "attribute_not_exists(pk)", events)

    def get(self, team: str, task_id: str) -> Task | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _sk(task_id)}, ConsistentRead=True
        ).get("Item")
        return _task(item) if item else None

    def _update(
        self,
        team: str,
        task_id: str,
        changes: dict[str, Any],
        condition: str,
        values: dict[str, Any],
        lost: type[TaskConflict],
        *,
        close: bool = False,
        events: Sequence[DomainEvent] = (),
    ) -> Task:
        """SET `changes` under `condition` (one write, with `events` when given); `close` also
        takes it off the queue.

        `condition` names attributes as `#name` and values as `:name` (given in `values`).
        """
        names = {f"#{k}": k for k in changes}
        names.update(
            {
                f"#{n}": n
                for n in ("pk", "status", "claimed_by", "fence", "lease_epoch")
                if f"#{n}" in condition
            }
        )
        expression = "SET " + ", ".join(f"#{k} = :set_{k}" for k in changes)
        if close:
            expression += " REMOVE queue_pk, queue_sk"
        attribute_values = {f":set_{k}": to_dynamo(_stored(v)) for k, v in changes.items()}
        attribute_values.update({k: to_dynamo(v) for k, v in values.items()})
        key = {"pk": team_pk(team), "sk": _sk(task_id)}
        try:
            item = self._outbox.update_if(
                self._table,
                team,
                key,
                expression,
                condition,
                events,
                names=names,
                values=attribute_values,
            )
        except ConditionLost as failed:
            raise lost(_task(failed.item) if failed.item else None) from failed
        return _task(item)

    def claim(
        self, team: str, task_id: str, claim: TaskClaim, *, events: Sequence[DomainEvent] = ()
    ) -> Task:
        return self._update(
            team,
            task_id,
            {**claim.changes(), "lease_epoch": _epoch(claim.lease_until)},
            "attribute_exists(pk) AND #fence = :fence AND (#status = :pending OR "
            "((#status = :claimed OR #status = :running) AND #lease_epoch <= :now))",
            {":fence": claim.expected_fence, ":now": _epoch(claim.at), **_OPEN_VALUES},
            ClaimLost,
            events=events,
        )

    def start(
        self, team: str, task_id: str, holder: str, started_at: datetime, lease_until: datetime
    ) -> Task:
        return self._update(
            team,
            task_id,
            {
                "status": "running",
                "started_at": started_at.isoformat(),
                "lease_expires_at": lease_until.isoformat(),
                "lease_epoch": _epoch(lease_until),
                "updated_at": started_at.isoformat(),
            },
            "#claimed_by = :me AND #status = :claimed AND #lease_epoch > :now",
            {":me": holder, ":claimed": "claimed", ":now": _epoch(started_at)},
            ClaimNotHeld,
        )

    def finish(
        self, team: str, task_id: str, finish: TaskFinish, *, events: Sequence[DomainEvent] = ()
    ) -> Task:
        return self._update(
            team,
            task_id,
            finish.changes(),
            "#claimed_by = :me AND #fence = :fence AND (#status = :claimed OR #status = :running)",
            {
                ":me": finish.holder,
                ":fence": finish.fence,
                ":claimed": "claimed",
                ":running": "running",
            },
            ClaimNotHeld,
            close=True,
            events=events,
        )

    def cancel(self, team: str, task_id: str, reason: str | None, at: datetime) -> Task:
        changes: dict[str, Any] = {"status": "cancelled", "updated_at": at.isoformat()}
        if reason:
            changes["cancel_reason"] = reason
        return self._update(
            team,
            task_id,
            changes,
            "#status = :pending OR #status = :claimed OR #status = :running",
            dict(_OPEN_VALUES),
            AlreadyClosed,
            close=True,
        )

    def list_open(self, team: str) -> Iterator[Task]:
        for item in query_all(
            self._table,
            IndexName=OPEN_TASKS_INDEX,
            KeyConditionExpression=Key("queue_pk").eq(team_pk(team)),
        ):
            task = _task(item)
            # The index is eventually consistent: skip a task closed meanwhile.
            if task.status in OPEN_STATUSES:
                yield task

    def claims_held(self, team: str, holder: str, now: datetime) -> list[Task]:
        return [
            task
            for task in self.list_open(team)
            if task.claimed_by == holder
            and task.status in ("claimed", "running")
            and not task.lease_expired(now)
        ]

    def count_claims_held(self, team: str, holder: str, now: datetime) -> int:
        # The open-tasks index has no holder key: read only the three attributes that decide,
        # not whole records, and parse none of them into tasks.
        held = 0
        for item in query_all(
            self._table,
            IndexName=OPEN_TASKS_INDEX,
            KeyConditionExpression=Key("queue_pk").eq(team_pk(team)),
            FilterExpression=Attr("claimed_by").eq(holder),
            ProjectionExpression="#status, lease_expires_at",
            ExpressionAttributeNames={"#status": "status"},
        ):
            lease = item.get("lease_expires_at")
            if (
                item.get("status") in ("claimed", "running")
                and lease is not None
                and datetime.fromisoformat(str(lease)) > now
            ):
                held += 1
        return held

    def list_team(
        self, team: str, wanted: TaskFilter, *, limit: int, cursor: str | None = None
    ) -> Page[Task]:
        # The table keys tasks by their random id, so newest-first needs the whole team's tasks
        # in memory (as the service always did); the cursor is the last task's sort key.
        found = [
            task
            for task in map(
                _task,
                query_all(
                    self._table,
                    KeyConditionExpression=Key("pk").eq(team_pk(team))
                    & Key("sk").begins_with("TASK#"),
                ),
            )
            if wanted.matches(task)
        ]
        found.sort(key=newest_first, reverse=True)
        if cursor is not None:
            after = position_of(team, cursor)
            found = [task for task in found if newest_first(task) < after]
        if len(found) <= limit:
            return Page(found)
        return Page(found[:limit], cursor_after(team, newest_first(found[limit - 1])))
