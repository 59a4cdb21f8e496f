"""The DynamoDB toolkit: written once, used by every DynamoDB adapter.

- `team_pk`: every key begins with the team (no read, query or scan runs without it);
- `put_if` / `update_if` / `delete_if`: one conditional write that, when it loses, raises
  `ConditionLost` carrying the item as it was (`ReturnValuesOnConditionCheckFailure=ALL_OLD`),
  so the loser learns who holds a claim without a second read;
- `query_page` / `query_all`: a typed, cursor-paginated query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shared.storage.pages import BadCursor, Page, decode_cursor, encode_cursor

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

T = TypeVar("T")
_DESERIALIZER = TypeDeserializer()


def team_pk(team: str) -> str:
    """The partition key of everything a team owns in a table."""
    return f"TEAM#{team}"


class ConditionLost(Exception):
    """A conditional write lost; `item` is the item as it was (None: there was none)."""

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.item = item


def _lost(exc: ClientError) -> ConditionLost:
    if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
        raise exc
    # The old item comes back in the low-level wire format, whatever client made the call.
    old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
    item = {k: _DESERIALIZER.deserialize(v) for k, v in old.items()} if old else None
    return ConditionLost(item)


def _expression_attributes(
    names: dict[str, str] | None, values: dict[str, Any] | None
) -> dict[str, Any]:
    """The optional `ExpressionAttribute*` arguments (DynamoDB refuses them empty)."""
    attributes: dict[str, Any] = {}
    if names:
        attributes["ExpressionAttributeNames"] = names
    if values:
        attributes["ExpressionAttributeValues"] = values
    return attributes


def _conditional(
    write: Callable[..., Any],
    condition: str,
    names: dict[str, str] | None,
    values: dict[str, Any] | None,
    **arguments: Any,
) -> Any:
    """`write(**arguments)` under `condition`, asking for the old item when it fails; its
    response, or `ConditionLost(old item)`."""
    arguments.update(_expression_attributes(names, values))
    try:
        return write(
            ConditionExpression=condition,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **arguments,
        )
    except ClientError as exc:
        raise _lost(exc) from exc


def put_if(
    table: Table,
    item: dict[str, Any],
    condition: str,
    *,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> None:
    """`PutItem` under `condition`; `ConditionLost(old item)` when it does not hold."""
    _conditional(table.put_item, condition, names, values, Item=item)


def update_if(
    table: Table,
    key: dict[str, str],
    update: str,
    condition: str,
    *,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`UpdateItem` under `condition`, returning the new item; `ConditionLost(old)` otherwise."""
    response = _conditional(
        table.update_item,
        condition,
        names,
        values,
        Key=key,
        UpdateExpression=update,
        ReturnValues="ALL_NEW",
    )
    return dict(response["Attributes"])


def delete_if(
    table: Table,
    key: dict[str, str],
    condition: str,
    *,
    names: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`DeleteItem` under `condition`, returning the deleted item; else `ConditionLost(old)`."""
    response = _conditional(
        table.delete_item, condition, names, values, Key=key, ReturnValues="ALL_OLD"
    )
    return dict(response.get("Attributes", {}))


def query_all(table: Table, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Every item a `Table.query(**kwargs)` matches, following `LastEvaluatedKey` page by page."""
    while True:
        page = table.query(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def query_page(
    table: Table,
    team: str,
    convert: Callable[[dict[str, Any]], T],
    *,
    limit: int,
    cursor: str | None = None,
    keep: Callable[[T], bool] | None = None,
    key_attributes: Sequence[str] = ("pk", "sk"),
    partition_attribute: str = "pk",
    **kwargs: Any,
) -> Page[T]:
    """Up to `limit` converted items of one `Query` in the team's partition, and a cursor when
    more may follow.

    `key_attributes` are the table's key plus, for an index query, the index's key (what
    `ExclusiveStartKey` needs); `partition_attribute` is the one holding `team_pk(team)`, which a
    cursor must name too. `keep` drops items after conversion (a filter DynamoDB cannot
    express); pages are refilled until `limit` kept items or the end. The cursor is the key of
    the last item returned, so a continuation never skips or repeats an item.

    >>> page = query_page(table, "acme", to_task, limit=20,
    ...     KeyConditionExpression=Key("pk").eq(team_pk("acme")))  # doctest: +SKIP
    """
    if cursor is not None:
        position = decode_cursor(team, cursor)
        if position.get(partition_attribute) != team_pk(team) or set(position) != set(
            key_attributes
        ):
            raise BadCursor("the cursor was not issued by this listing")
        kwargs["ExclusiveStartKey"] = position
    kwargs["Limit"] = limit + 1  # one more than asked: whether a next page exists is known
    found: list[tuple[dict[str, Any], T]] = []
    for item in query_all(table, **kwargs):
        converted = convert(item)
        if keep is not None and not keep(converted):
            continue
        found.append((item, converted))
        if len(found) > limit:
            last = found[limit - 1][0]
            position_key = {name: last[name] for name in key_attributes}
            return Page([c for _, c in found[:limit]], encode_cursor(team, position_key))
    return Page([c for _, c in found])
