"""Handoffs in DynamoDB: `TEAM#<team>` / `HANDOFF#<id>`, plus a sparse index of open ones.

While a handoff is unclaimed its item carries `open_pk` (= the team's key), so the `open_by_team`
index holds exactly the open handoffs of each team, newest first by `created_at`; the claim
removes the attribute in the same conditional write that records the claim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.config.tables import OPEN_HANDOFFS_INDEX
from shared.dynamo_values import check_item_size, query_all
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed, UnknownHandoff

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table


def _pk(team: str) -> str:
    return f"TEAM#{team}"


def _sk(handoff_id: str) -> str:
    return f"HANDOFF#{handoff_id}"


def _handoff(item: dict[str, Any]) -> Handoff:
    return Handoff.model_validate({k: v for k, v in item.items() if k in Handoff.model_fields})


class DynamoHandoffStore:
    """`HandoffStore` on the handoffs table (see `shared.config.tables.HANDOFFS`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def create(self, team: str, handoff: Handoff) -> None:
        item: dict[str, Any] = {
            "pk": _pk(team),
            "sk": _sk(handoff.id),
            "team": team,
            "open_pk": _pk(team),
            **handoff.model_dump(mode="json", exclude_none=True),
        }
        check_item_size(item, "document_md")
        # Ids are random: a collision would be a bug, never an overwrite.
        self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")

    def get(self, team: str, handoff_id: str) -> Handoff | None:
        item = self._table.get_item(
            Key={"pk": _pk(team), "sk": _sk(handoff_id)}, ConsistentRead=True
        ).get("Item")
        return _handoff(item) if item else None

    def claim(self, team: str, handoff_id: str, claim: Claim) -> Handoff:
        try:
            response = self._table.update_item(
                Key={"pk": _pk(team), "sk": _sk(handoff_id)},
                UpdateExpression="SET #status = :claimed, #claim = :claim REMOVE open_pk",
                ConditionExpression="attribute_exists(pk) AND #status = :open",
                ExpressionAttributeNames={"#status": "status", "#claim": "claim"},
                ExpressionAttributeValues={
                    ":claimed": "claimed",
                    ":open": "open",
                    ":claim": claim.model_dump(mode="json", exclude_none=True),
                },
                ReturnValues="ALL_NEW",
                # The loser learns who holds the claim from the same call: no second read.
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if not old:
                raise UnknownHandoff(handoff_id) from exc
            current = _deserialize(old)
            raise AlreadyClaimed(_handoff(current).claim) from exc
        return _handoff(response["Attributes"])

    def iter_open(self, team: str) -> Iterator[Handoff]:
        kwargs: dict[str, Any] = {
            "IndexName": OPEN_HANDOFFS_INDEX,
            "KeyConditionExpression": "open_pk = :pk",
            "ExpressionAttributeValues": {":pk": _pk(team)},
            "ScanIndexForward": False,
        }
        for item in query_all(self._table, **kwargs):
            # A sparse index is eventually consistent: skip an item claimed meanwhile.
            if item.get("status") == "open":
                yield _handoff(item)


def _deserialize(item: dict[str, Any]) -> dict[str, Any]:
    """`ReturnValuesOnConditionCheckFailure` items come back in the low-level wire format."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: deserializer.deserialize(value) for key, value in item.items()}
