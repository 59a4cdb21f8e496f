"""Connector state and the locks in the sync table (`TEAM#<team>` / `LOCK#sync`, a connector's
`LOCK#connector:<name>`,
`TEAM#<team>` / `CONNECTOR#<source>`), and background runs (`TEAM#<team>` / `RUN#<run id>`)."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from typing import TYPE_CHECKING

from boto3.dynamodb.conditions import Key

from shared.config.names import TTL_ATTRIBUTE
from shared.storage.dynamo import (
    ConditionLost,
    delete_if,
    put_if,
    query_all,
    team_pk,
    update_if,
)
from shared.sync.models import SyncRun
from shared.sync.ports import SYNC_LOCK

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

_LOCK = "LOCK#"
_RUN = "RUN#"
# Run records are progress reports, not data: DynamoDB's TTL collects them after 30 days.
RUN_TTL_SECONDS = 30 * 86_400
# DynamoDB's TTL only collects a lock a crashed sync never released, an hour after its lease.
LOCK_TTL_GRACE_SECONDS = 3_600


def _lock_sk(name: str) -> str:
    """`LOCK#sync`, or a connector's `LOCK#connector:<name>` (scratch: never exported)."""
    return _LOCK + name


class DynamoSyncState:
    """`SyncState` on the sync table. The lock is a lease: an expired one can be taken over."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def acquire_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        expires = int(now.timestamp()) + lease_seconds
        try:
            put_if(
                self._table,
                {
                    "pk": team_pk(team),
                    "sk": _lock_sk(name),
                    "holder": holder,
                    "lease_expires": expires,
                    TTL_ATTRIBUTE: expires + LOCK_TTL_GRACE_SECONDS,
                },
                "attribute_not_exists(pk) OR lease_expires < :now",
                values={":now": int(now.timestamp())},
            )
        except ConditionLost:
            return False
        return True

    def renew_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        expires = int(now.timestamp()) + lease_seconds
        try:
            update_if(
                self._table,
                {"pk": team_pk(team), "sk": _lock_sk(name)},
                "SET lease_expires = :expires, #ttl = :ttl",
                "holder = :me",
                names={"#ttl": TTL_ATTRIBUTE},
                values={
                    ":me": holder,
                    ":expires": expires,
                    ":ttl": expires + LOCK_TTL_GRACE_SECONDS,
                },
            )
        except ConditionLost:
            return False
        return True

    def release_lock(self, team: str, holder: str, *, name: str = SYNC_LOCK) -> None:
        # Never release a lock taken over meanwhile: losing the condition is the expected no-op.
        with suppress(ConditionLost):
            delete_if(
                self._table,
                {"pk": team_pk(team), "sk": _lock_sk(name)},
                "holder = :me",
                values={":me": holder},
            )

    def record_sync(self, team: str, source: str, finished_at: datetime) -> None:
        self._table.put_item(
            Item={
                "pk": team_pk(team),
                "sk": f"CONNECTOR#{source}",
                "source": source,
                "last_sync": finished_at.isoformat(),
            }
        )

    def last_syncs(self, team: str) -> dict[str, datetime]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team))
            & Key("sk").begins_with("CONNECTOR#"),
        )
        return {
            str(item["source"]): datetime.fromisoformat(str(item["last_sync"])) for item in items
        }

    def put_run(self, team: str, run: SyncRun) -> None:
        self._table.put_item(
            Item={
                "pk": team_pk(team),
                "sk": _RUN + run.run_id,
                "body": run.model_dump_json(),
                TTL_ATTRIBUTE: int(run.created_at.timestamp()) + RUN_TTL_SECONDS,
            }
        )

    def get_run(self, team: str, run_id: str) -> SyncRun | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _RUN + run_id}, ConsistentRead=True
        ).get("Item")
        return None if item is None else SyncRun.model_validate_json(str(item["body"]))

    def recent_runs(self, team: str, limit: int) -> list[SyncRun]:
        page = self._table.query(
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with(_RUN),
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return [SyncRun.model_validate_json(str(item["body"])) for item in page.get("Items", [])]
