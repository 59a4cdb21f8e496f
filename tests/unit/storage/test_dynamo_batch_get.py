"""`shared.storage.dynamo.batch_get`: BatchGetItem's 100-key limit and its unprocessed keys."""

from __future__ import annotations

from typing import Any

import pytest

from shared.storage.dynamo import BATCH_GET_ATTEMPTS, BatchIncomplete, batch_get


class _Client:
    """`batch_get_item` over a dict of items, leaving the last `unprocessed` keys of each call
    unprocessed for the first `throttled` calls."""

    def __init__(self, items: dict[str, dict[str, Any]], *, throttled: int, unprocessed: int):
        self.items = items
        self.throttled = throttled
        self.unprocessed = unprocessed
        self.calls: list[list[str]] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        ((table, request),) = RequestItems.items()
        keys = request["Keys"]
        assert len(keys) <= 100, "BatchGetItem refuses more than 100 keys"
        assert request["ConsistentRead"] is True
        self.calls.append([key["sk"] for key in keys])
        served, left = keys, []
        if self.throttled:
            self.throttled -= 1
            served, left = keys[: -self.unprocessed], keys[-self.unprocessed :]
        found = [self.items[key["sk"]] for key in served if key["sk"] in self.items]
        reply: dict[str, Any] = {"Responses": {table: found}}
        if left:
            reply["UnprocessedKeys"] = {table: {"Keys": left, "ConsistentRead": True}}
        return reply


class _Meta:
    def __init__(self, client: _Client) -> None:
        self.client = client


class _Table:
    name = "memories"

    def __init__(self, client: _Client) -> None:
        self.meta = _Meta(client)


def _items(count: int) -> dict[str, dict[str, Any]]:
    return {f"M#{n:03d}": {"pk": "TEAM#a", "sk": f"M#{n:03d}", "n": n} for n in range(count)}


def _keys(count: int) -> list[dict[str, str]]:
    return [{"pk": "TEAM#a", "sk": f"M#{n:03d}"} for n in range(count)]


def test_keys_go_in_calls_of_at_most_100_and_missing_items_are_left_out() -> None:
    client = _Client(_items(200), throttled=0, unprocessed=0)
    found = batch_get(_Table(client), [*_keys(250), *_keys(3)])  # type: ignore[arg-type]
    assert sorted(item["n"] for item in found) == list(range(200))
    assert [len(call) for call in client.calls] == [100, 100, 50]  # repeats asked once


def test_unprocessed_keys_are_sent_again_after_a_pause() -> None:
    client = _Client(_items(10), throttled=2, unprocessed=3)
    pauses: list[float] = []
    found = batch_get(_Table(client), _keys(10), sleep=pauses.append)  # type: ignore[arg-type]
    assert sorted(item["n"] for item in found) == list(range(10))
    assert [len(call) for call in client.calls] == [10, 3, 3]
    assert pauses == [0.05, 0.1]


def test_keys_still_unprocessed_after_every_attempt_raise() -> None:
    client = _Client(_items(10), throttled=BATCH_GET_ATTEMPTS, unprocessed=1)
    with pytest.raises(BatchIncomplete, match="1 key"):
        batch_get(_Table(client), _keys(10), sleep=lambda _: None)  # type: ignore[arg-type]
    assert len(client.calls) == BATCH_GET_ATTEMPTS
