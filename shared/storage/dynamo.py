"""The DynamoDB toolkit: written once, used by every DynamoDB adapter.

- `team_pk`: every key begins with the team (no read, query or scan runs without it);
- `put_if` / `update_if` / `delete_if`: one conditional write that, when it loses, raises
  `ConditionLost` carrying the item as it was (`ReturnValuesOnConditionCheckFailure=ALL_OLD`),
  so the loser learns who holds a claim without a second read;
- `query_page` / `query_all`: a typed, cursor-paginated query;
- `batch_get`: many items by key in `BatchGetItem` calls of at most 100 keys, with the
  unprocessed keys sent again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shared.storage.pages import BadCursor, Page, decode_cursor, encode_cursor

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

T = TypeVar("T")
_DESERIALIZER = TypeDeserializer()
BATCH_GET_KEYS = 100  # BatchGetItem's limit of keys per call
BATCH_GET_ATTEMPTS = 8  # calls per batch while DynamoDB keeps returning unprocessed keys


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


class BatchIncomplete(Exception):
    """DynamoDB still returned unprocessed keys after `BATCH_GET_ATTEMPTS` calls (throttled):
    an error, never a silently partial read."""


def batch_get(
    table: Table,
    keys: Sequence[dict[str, str]],
    *,
    consistent: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    backoff_seconds: float = 0.05,
) -> list[dict[str, Any]]:
    """The items of `table` at `keys` that exist, in no particular order: `BatchGetItem` calls of
    at most 100 keys, each sending its `UnprocessedKeys` again after a doubling pause.

    >>> batch_get(table, [{"pk": team_pk("acme"), "sk": "MEMORY#m1"}])  # doctest: +SKIP
    """
    # The resource's client (`meta.client`) takes and returns plain Python values.
    client = table.meta.client
    found: list[dict[str, Any]] = []
    unique = list({tuple(sorted(key.items())): key for key in keys}.values())
    for start in range(0, len(unique), BATCH_GET_KEYS):
        request: dict[str, Any] = {
            table.name: {
                "Keys": unique[start : start + BATCH_GET_KEYS],
                "ConsistentRead": consistent,
            }
        }
        for attempt in range(BATCH_GET_ATTEMPTS):
            if attempt:
                sleep(backoff_seconds * 2 ** (attempt - 1))
            response: Any = client.batch_get_item(RequestItems=request)
            found.extend(dict(item) for item in response.get("Responses", {}).get(table.name, []))
            request = dict(response.get("UnprocessedKeys") or {})
            if not request:
                break
        else:
            raise BatchIncomplete(
                f"{len(request[table.name]['Keys'])} key(s) of {table.name} still unprocessed"
            )
    return found


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
