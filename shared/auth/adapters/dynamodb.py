"""Token storage in DynamoDB: one item per token keyed by its secret's hash, plus rate counters.

Keys (the tokens table, `shared.config.tables.TOKENS`): a token is `pk = HASH#<secret hash>`,
`sk = TOKEN`, found by id through `by_token_id` and by team through `by_team` (sort key
`created_at`); a rate window is `pk = RATE#<token_id>#<window start>`, `sk = RATE`, with a TTL;
a team's own version of an allow-list context is `pk = CONTEXT#<team>#<name>`, `sk = CONTEXT`
(with neither `team` nor `token_id` attributes, so no index of tokens ever lists it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Attr, Key

from shared.auth.contexts import TeamContext
from shared.auth.models import TokenRecord
from shared.auth.ports import DuplicateToken
from shared.config.names import TTL_ATTRIBUTE
from shared.storage.dynamo import ConditionLost, put_if, query_all, update_if

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

TOKEN_SK = "TOKEN"
RATE_SK = "RATE"
CONTEXT_SK = "CONTEXT"
TEAM_INDEX = "by_team"
TOKEN_ID_INDEX = "by_token_id"


def _token_pk(secret_hash: str) -> str:
    return f"HASH#{secret_hash}"


def _context_key(team: str, name: str) -> dict[str, str]:
    return {"pk": f"CONTEXT#{team}#{name}", "sk": CONTEXT_SK}


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
        try:
            put_if(self._table, item, "attribute_not_exists(pk)")
        except ConditionLost as lost:
            raise DuplicateToken(record.token_id) from lost

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None:
        response = self._table.get_item(
            Key={"pk": _token_pk(secret_hash), "sk": TOKEN_SK}, ConsistentRead=True
        )
        item = response.get("Item")
        return _record(item) if item else None

    def list_team(self, team: str) -> list[TokenRecord]:
        items = query_all(
            self._table, IndexName=TEAM_INDEX, KeyConditionExpression=Key("team").eq(team)
        )
        return [_record(item) for item in items]

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        # A filter on the team's index: a team holds few tokens, so no index of its own is needed.
        items = query_all(
            self._table,
            IndexName=TEAM_INDEX,
            KeyConditionExpression=Key("team").eq(team),
            FilterExpression=Attr("issued_by").eq(token_id),
        )
        return [_record(item) for item in items]

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        page = self._table.query(
            IndexName=TOKEN_ID_INDEX, KeyConditionExpression=Key("token_id").eq(token_id)
        )
        items = page.get("Items", [])
        if not items:
            return None
        try:
            updated = update_if(
                self._table,
                {"pk": str(items[0]["pk"]), "sk": str(items[0]["sk"])},
                "SET revoked_at = if_not_exists(revoked_at, :at)",
                "attribute_exists(pk)",
                values={":at": revoked_at_iso},
            )
        except ConditionLost:
            return None
        return _record(updated)

    def put_context(self, team: str, context: TeamContext) -> None:
        item: dict[str, Any] = {
            **_context_key(team, context.name),
            **context.model_dump(mode="json", exclude_none=True),
            # DynamoDB keeps no empty lists apart from "absent": say which it is.
            "tools": list(context.tools or ()),
            "all_tools": context.tools is None,
        }
        self._table.put_item(Item=item)

    def get_context(self, team: str, name: str) -> TeamContext | None:
        item = self._table.get_item(Key=_context_key(team, name), ConsistentRead=True).get("Item")
        return _context(item) if item else None

    def delete_context(self, team: str, name: str) -> bool:
        response = self._table.delete_item(Key=_context_key(team, name), ReturnValues="ALL_OLD")
        return bool(response.get("Attributes"))

    def reserve_requests(
        self, caller_id: str, window_start: int, expires_epoch: int, wanted: int, limit: int
    ) -> int:
        # One conditional ADD per slice: the counter never passes `limit`, whatever many
        # gateways reserve at once. A lost condition returns the counter as it was, so the
        # retry asks for exactly what is left (the remainder only shrinks: the loop ends).
        key = {"pk": _rate_pk(caller_id, window_start), "sk": RATE_SK}
        wanted = min(wanted, limit)
        while wanted > 0:
            try:
                update_if(
                    self._table,
                    key,
                    "ADD request_count :n SET #ttl = :ttl",
                    "attribute_not_exists(request_count) OR request_count <= :most",
                    names={"#ttl": TTL_ATTRIBUTE},
                    values={":n": wanted, ":most": limit - wanted, ":ttl": expires_epoch},
                )
                return wanted
            except ConditionLost as lost:
                used = int((lost.item or {}).get("request_count", 0))
                wanted = min(wanted, limit - used)
        return 0


def _context(item: dict[str, Any]) -> TeamContext:
    return TeamContext.model_validate(
        {k: v for k, v in item.items() if k in TeamContext.model_fields}
        | {"tools": item["tools"] if item.get("all_tools") is not True else None}
    )


def _record(item: dict[str, Any]) -> TokenRecord:
    fields = {k: v for k, v in item.items() if k in TokenRecord.model_fields}
    if "rate_limit_per_minute" in fields:
        fields["rate_limit_per_minute"] = int(fields["rate_limit_per_minute"])
    return TokenRecord.model_validate(fields)
