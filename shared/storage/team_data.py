"""A team's whole data, store by store: what export, import and team deletion need.

Why one port over the physical layout rather than three methods on every store's port: the
danger in erasing a team is the store nobody remembered. Two rules of the storage layer already
say where a team's data is — every SQLite row of a team carries a `team` column (every query
filters on it), and every DynamoDB item of a team sits in its partition `TEAM#<team>` or
carries a `team` attribute (`shared.storage.dynamo.team_pk`) — so an adapter that follows those
rules covers every store, including the next one added, with nothing to forget. The test
`tests/unit/portability/test_every_table_is_covered.py` fails when a table breaks the rule.

Records are JSON objects `{"kind": <table>, ...}`: `row` (SQLite columns) or `item` (a
DynamoDB item, numbers as JSON numbers). Token secrets and their hashes never leave: a token is
exported as `{"kind": "token", "token_id", "name", "scopes", ...}` and never imported (a token
without its secret is of no use; issue new ones with `cairn tokens create`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

TOKEN_KIND = "token"
# What of a token leaves in an export: who it was, never how to be it.
TOKEN_FIELDS = ("token_id", "name", "scopes", "created_at", "expires_at", "revoked_at", "agent_id")

Record = dict[str, Any]


class BadRecord(Exception):
    """A record the store cannot take; the message names the field and what is wrong."""


class TeamData(Protocol):
    """Every record a team owns, in every store of one backend."""

    backend: str

    def export_team(self, team: str) -> Iterator[Record]:
        """The team's records, one consistent snapshot, streamed (constant memory)."""
        ...

    def import_records(
        self, team: str, records: Sequence[Record], exported_team: str | None = None
    ) -> int:
        """Put `records` under `team` in one transaction (each wholly or not at all); a record
        already present is left as it is, so a second import changes nothing. Returns how many
        were written. `exported_team`: the team the records were exported from, when keys
        name it (DynamoDB's `TEAM#<team>`). `BadRecord` when one is not a record of this
        backend."""
        ...

    def check_record(self, record: Record) -> None:
        """`BadRecord` unless `import_records` can take `record` (checked before any write)."""
        ...

    def delete_team(self, team: str) -> dict[str, int]:
        """Erase every record of `team` (tokens included); how many went, per kind."""
        ...


def exported_token(record: dict[str, Any]) -> Record:
    """A token as an export shows it: name and scopes, no secret, no hash."""
    return {"kind": TOKEN_KIND, **{k: record[k] for k in TOKEN_FIELDS if record.get(k) is not None}}
