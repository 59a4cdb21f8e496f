"""Tokens and rate-limit windows in the embedded database.

`tokens`: one row per token keyed by its secret's hash, the record as JSON beside the columns that
lookups select on (id, team, issuer, creation time). `rate_windows`: one counter per token and
minute, counting the requests reserved from its budget; a reservation reads and raises it inside
one `BEGIN IMMEDIATE` transaction, so concurrent reservations — other threads, other processes —
never lose a count nor pass the limit. Windows past their expiry are deleted when a new window
opens (what DynamoDB's TTL does for the AWS adapter).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shared.auth.contexts import TeamContext
from shared.auth.models import TokenRecord
from shared.auth.ports import DuplicateToken
from shared.storage.sqlite import Database, Migration, from_json, to_json
from shared.storage.times import sortable
from shared.storage.values import from_dynamo

MIGRATIONS = (
    Migration(
        "tokens",
        1,
        (
            "CREATE TABLE tokens ("
            " secret_hash TEXT NOT NULL PRIMARY KEY, token_id TEXT NOT NULL UNIQUE,"
            " team TEXT NOT NULL, created_at TEXT NOT NULL, issued_by TEXT,"
            " revoked INTEGER NOT NULL, record TEXT NOT NULL)",
            # list_team: a team's tokens, oldest first (revoke uses token_id's UNIQUE index).
            "CREATE INDEX tokens_by_team ON tokens (team, created_at, token_id)",
            # list_issued_by: the tokens one token minted (the revocation cascade).
            "CREATE INDEX tokens_by_issuer ON tokens (team, issued_by) WHERE issued_by IS NOT NULL",
            "CREATE TABLE rate_windows ("
            " token_id TEXT NOT NULL, window_start INTEGER NOT NULL, count INTEGER NOT NULL,"
            " expires_at INTEGER NOT NULL, PRIMARY KEY (token_id, window_start))",
            # The purge of expired windows.
            "CREATE INDEX rate_windows_expiry ON rate_windows (expires_at)",
        ),
    ),
    Migration(
        "tokens",
        2,
        (
            # A team's own versions of seed 004's allow-list contexts (agent, crossroads, ...).
            "CREATE TABLE token_contexts ("
            " team TEXT NOT NULL, name TEXT NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, name))",
        ),
    ),
)

_TOKEN_PK_PREFIX = "HASH#"
_TOKEN_SK = "TOKEN"
_INSERT = (
    "INSERT INTO tokens (secret_hash, token_id, team, created_at, issued_by, revoked, record)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# An import may run twice (an interrupted migration); a put must never overwrite.
_INSERT_NEW = _INSERT.replace("INSERT", "INSERT OR IGNORE", 1)


def _token(row: Any) -> TokenRecord:
    return TokenRecord.model_validate(from_json(row["record"]))


def _row(secret_hash: str, record: TokenRecord) -> tuple[Any, ...]:
    return (
        secret_hash,
        record.token_id,
        record.team,
        sortable(record.created_at),
        record.issued_by,
        int(record.revoked_at is not None),
        to_json(record.model_dump(mode="json", exclude_none=True)),
    )


class SqliteTokenStore:
    """`TokenStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def put(self, secret_hash: str, record: TokenRecord) -> None:
        with self._db.write() as tx:
            inserted = tx.execute(_INSERT_NEW, _row(secret_hash, record)).rowcount
            if inserted != 1:
                raise DuplicateToken(record.token_id)

    def get_by_hash(self, secret_hash: str) -> TokenRecord | None:
        row = (
            self._db.connection()
            .execute("SELECT record FROM tokens WHERE secret_hash = ?", (secret_hash,))
            .fetchone()
        )
        return _token(row) if row else None

    def list_team(self, team: str) -> list[TokenRecord]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM tokens WHERE team = ? ORDER BY created_at, token_id", (team,)
            )
            .fetchall()
        )
        return [_token(row) for row in rows]

    def list_issued_by(self, team: str, token_id: str) -> list[TokenRecord]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM tokens WHERE team = ? AND issued_by = ?"
                " ORDER BY created_at, token_id",
                (team, token_id),
            )
            .fetchall()
        )
        return [_token(row) for row in rows]

    def revoke(self, token_id: str, revoked_at_iso: str) -> TokenRecord | None:
        with self._db.write() as tx:
            row = tx.execute("SELECT record FROM tokens WHERE token_id = ?", (token_id,)).fetchone()
            if row is None:
                return None
            current = _token(row)
            if current.revoked_at is not None:
                return current  # a repeat keeps the first time
            revoked = TokenRecord.model_validate(
                {**current.model_dump(), "revoked_at": revoked_at_iso}
            )
            updated = tx.execute(
                "UPDATE tokens SET revoked = 1, record = ? WHERE token_id = ? AND revoked = 0",
                (to_json(revoked.model_dump(mode="json", exclude_none=True)), token_id),
            ).rowcount
            if updated != 1:  # cannot happen under the write lock; never report a lost write
                raise RuntimeError(f"token {token_id} changed during its revocation")
        return revoked

    def reserve_requests(
        self, caller_id: str, window_start: int, expires_epoch: int, wanted: int, limit: int
    ) -> int:
        # Scratch state: atomic across threads and processes (BEGIN IMMEDIATE), but not worth
        # an fsync per slice.
        with self._db.write(durable=False) as tx:
            opened = tx.execute(
                "INSERT INTO rate_windows (token_id, window_start, count, expires_at)"
                " VALUES (?, ?, 0, ?) ON CONFLICT (token_id, window_start) DO NOTHING",
                (caller_id, window_start, expires_epoch),
            ).rowcount
            if opened == 1:
                # A new window opened: the windows that ended by its start are dead weight.
                tx.execute("DELETE FROM rate_windows WHERE expires_at <= ?", (window_start,))
            row = tx.execute(
                "SELECT count FROM rate_windows WHERE token_id = ? AND window_start = ?",
                (caller_id, window_start),
            ).fetchone()
            granted = max(0, min(wanted, limit - int(row["count"])))
            if granted:
                tx.execute(
                    "UPDATE rate_windows SET count = count + ?, expires_at = ?"
                    " WHERE token_id = ? AND window_start = ?",
                    (granted, expires_epoch, caller_id, window_start),
                )
        return granted

    def put_context(self, team: str, context: TeamContext) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO token_contexts (team, name, record) VALUES (?, ?, ?)"
                " ON CONFLICT (team, name) DO UPDATE SET record = excluded.record",
                (team, context.name, to_json(context.model_dump(mode="json"))),
            )

    def get_context(self, team: str, name: str) -> TeamContext | None:
        row = (
            self._db.connection()
            .execute("SELECT record FROM token_contexts WHERE team = ? AND name = ?", (team, name))
            .fetchone()
        )
        return TeamContext.model_validate(from_json(row["record"])) if row else None

    def delete_context(self, team: str, name: str) -> bool:
        with self._db.write() as tx:
            deleted = tx.execute(
                "DELETE FROM token_contexts WHERE team = ? AND name = ?", (team, name)
            ).rowcount
        return bool(deleted)

    def migrate_items(self, items: Iterable[dict[str, Any]]) -> int:
        """Import the token items of the old DynamoDB-shaped tokens table; returns how many.

        Rate windows (`RATE#…`) are left behind: they are scratch, a minute long.
        """
        imported = 0
        with self._db.write() as tx:
            for item in items:
                if item.get("sk") != _TOKEN_SK or not str(item.get("pk", "")).startswith(
                    _TOKEN_PK_PREFIX
                ):
                    continue
                record = TokenRecord.model_validate(
                    {k: from_dynamo(v) for k, v in item.items() if k in TokenRecord.model_fields}
                )
                secret_hash = str(item["pk"]).removeprefix(_TOKEN_PK_PREFIX)
                tx.execute(_INSERT_NEW, _row(secret_hash, record))
                imported += 1
        return imported
