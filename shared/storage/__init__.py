"""The storage layer's shared parts: pages and cursors for every port, the SQLite database of the
embedded default, and the DynamoDB toolkit every DynamoDB adapter is written with.

A store is a `typing.Protocol` in its group's `ports.py` with two adapters,
`adapters/dynamodb.py` (AWS) and `adapters/sqlite.py` (the embedded default), and one contract
suite in `tests/unit/storage/` that runs on both. See docs/storage.md.
"""

from shared.storage.pages import Page, decode_cursor, encode_cursor

__all__ = ["Page", "decode_cursor", "encode_cursor"]
