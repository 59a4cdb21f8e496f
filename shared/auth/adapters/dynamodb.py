"""Token storage in DynamoDB: one item per token keyed by its secret's hash, plus rate counters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.auth.models import TokenRecord
from shared.storage.dynamo import query_all

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

TOKEN_SK = "TOKEN"


def _token_pk(secret_hash: str) -> str:
    return f"HASH#{secret_hash}"


def _rate_pk(token_id: str, window_start: int) -> str:
    return f"RATE#{token_id}#{window_start}"


class DynamoTokenStore:
    """`TokenStore` on the tokens table (see `shared.config.tables.TOKENS`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put(self, secret_hash: str, record: TokenRecord) -> None:
        item: dict[str, Any] = {
            "pk": _token_pk(secret_hash),
            "sk": TOKEN_SK,
            **record.model_dump(mode="json", exclude_none=True),
            "scopes": list(record.scopes),
        }
        if record.allowed_tools is not None:
            item["allowed_tools"] = list(record.allowed_tools)
        self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None:
        response = self._table.get_item(
            Key={"pk": _token_pk(secret_hash), "sk": TOKEN_SK}, ConsistentRead=True
        )
        item = response.get("Item")
        return _record(item) if item else None

    def list_team(self, team: str) -> list[TokenRecord]:
        records: list[TokenRecord] = []
        kwargs: dict[str, Any] = {
            "IndexName": "by_team",
            "KeyConditionExpression": Key("team").eq(team),
        }
        while True:
            page = self._table.query(**kwargs)
            records.extend(_record(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return records
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        # A filter on the team's index: a team holds few tokens, so no index of its own is needed.
        items = query_all(
            self._table,
            IndexName="by_team",
            KeyConditionExpression=Key("team").eq(team),
            FilterExpression=Attr("issued_by").eq(token_id),
        )
        return [_record(item) for item in items]

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        page = self._table.query(
            IndexName="by_token_id", KeyConditionExpression=Key("token_id").eq(token_id)
        )
        items = page.get("Items", [])
        if not items:
            return None
        key = {"pk": items[0]["pk"], "sk": items[0]["sk"]}
        updated = self._table.update_item(
            Key=key,
            UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :at)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":at": revoked_at_iso},
            ReturnValues="ALL_NEW",
        )
        return _record(updated["Attributes"])

    def count_request(self, token_id: str, window_start: int, expires_epoch: int) -> int:
        # One atomic ADD per request: concurrent gateways never lose a count.
        response = self._table.update_item(
            Key={"pk": _rate_pk(token_id, window_start), "sk": "RATE"},
            UpdateExpression="ADD request_count :one SET expires_at_epoch = :ttl",
            ExpressionAttributeValues={":one": 1, ":ttl": expires_epoch},
            ReturnValues="UPDATED_NEW",
        )
        return int(response["Attributes"]["request_count"])  # type: ignore[arg-type]


def _record(item: dict[str, Any]) -> TokenRecord:
    fields = {k: v for k, v in item.items() if k in TokenRecord.model_fields}
    if "rate_limit_per_minute" in fields:
        fields["rate_limit_per_minute"] = int(fields["rate_limit_per_minute"])
    return TokenRecord.model_validate(fields)
