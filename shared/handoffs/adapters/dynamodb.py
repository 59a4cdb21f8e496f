"""Handoffs in DynamoDB: `TEAM#<team>` / `HANDOFF#<id>`, plus a sparse index of open ones.

While a handoff is unclaimed its item carries `open_pk` (= the team's key), so the `open_by_team`
index holds exactly the open handoffs of each team, newest first by `created_at`; the claim
removes the attribute in the same conditional write that records the claim. With domain
events, the write and the events' log items are one `TransactWriteItems` (`DynamoOutbox`, the
log in the coordination table); a claim then reads the handoff back (a transaction returns
no item).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, ConditionBase, Key

from shared.config.tables import OPEN_HANDOFFS_INDEX
from shared.domain_events.adapters.outbox import DynamoOutbox
from shared.domain_events.models import DomainEvent
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed, OpenHandoffFilter, UnknownHandoff
from shared.storage.dynamo import ConditionLost, query_page, team_pk
from shared.storage.pages import Page
from shared.storage.values import check_item_size

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


def _sk(handoff_id: str) -> str:
    return f"HANDOFF#{handoff_id}"


def _handoff(item: dict[str, Any]) -> Handoff:
    return Handoff.model_validate({k: v for k, v in item.items() if k in Handoff.model_fields})


class DynamoHandoffStore:
    """`HandoffStore` on the handoffs table (see `shared.config.tables.HANDOFFS`)."""

    def __init__(self, table: Table, outbox: DynamoOutbox) -> None:
        self._table = table
        self._outbox = outbox

    def create(self, team: str, handoff: Handoff, *, events: Sequence[DomainEvent] = ()) -> None:
        item: dict[str, Any] = {
            "pk": team_pk(team),
            "sk": _sk(handoff.id),
            "team": team,
            "open_pk": team_pk(team),
            **handoff.model_dump(mode="json", exclude_none=True),
        }
        check_item_size(item, "document_md")
        self._outbox.put_if(self._table, team, item, "attribute_not_exists(pk)", events)

    def get(self, team: str, handoff_id: str) -> Handoff | None:
        item = self._table.get_item(
            Key={"pk": team_pk(team), "sk": _sk(handoff_id)}, ConsistentRead=True
        ).get("Item")
        return _handoff(item) if item else None

    def claim(
        self,
        team: str,
        handoff_id: str,
        claim: Claim,
        *,
        events: Sequence[DomainEvent] = (),
    ) -> Handoff:
        key = {"pk": team_pk(team), "sk": _sk(handoff_id)}
        update = "SET #status = :claimed, #claim = :claim REMOVE open_pk"
        condition = "attribute_exists(pk) AND #status = :open"
        names = {"#status": "status", "#claim": "claim"}
        values = {
            ":claimed": "claimed",
            ":open": "open",
            ":claim": claim.model_dump(mode="json", exclude_none=True),
        }
        try:
            item = self._outbox.update_if(
                self._table, team, key, update, condition, events, names=names, values=values
            )
        except ConditionLost as lost:
            # The loser learns who holds the claim from the same call: no second read.
            if lost.item is None:
                raise UnknownHandoff(handoff_id) from lost
            raise AlreadyClaimed(_handoff(lost.item).claim) from lost
        return _handoff(item)

    def list_open(
        self,
        team: str,
        wanted: OpenHandoffFilter,
        *,
        limit: int,
        cursor: str | None = None,
    ) -> Page[Handoff]:
        kwargs: dict[str, Any] = {
            "IndexName": OPEN_HANDOFFS_INDEX,
            "KeyConditionExpression": Key("open_pk").eq(team_pk(team)),
            "ScanIndexForward": False,
        }
        conditions = [Attr(name).eq(value) for name, value in wanted.given().items()]
        if conditions:
            expression: ConditionBase = conditions[0]
            for condition in conditions[1:]:
                expression = expression & condition
            kwargs["FilterExpression"] = expression
        return query_page(
            self._table,
            team,
            _handoff,
            limit=limit,
            cursor=cursor,
            # A sparse index is eventually consistent: skip an item claimed meanwhile.
            keep=lambda handoff: handoff.status == "open",
            key_attributes=("pk", "sk", "open_pk", "created_at"),
            partition_attribute="open_pk",
            **kwargs,
        )
