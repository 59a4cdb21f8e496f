"""Sessions in the embedded database: a row per session, a row per message, a row per model
choice. Every write that reads a condition first runs in one `BEGIN IMMEDIATE` transaction, so
an append, a claim or a delete holds across threads and processes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.sessions.models import Message, ModelChoice, Persona, Session
from shared.sessions.ports import CompactionLost, SessionOwner, SessionPinned, UnknownSession
from shared.storage.pages import Page
from shared.storage.sqlite import Database, Migration, from_json, newest_first_page, to_json
from shared.storage.times import sortable

MIGRATIONS = (
    Migration(
        "sessions",
        1,
        (
            "CREATE TABLE sessions ("
            " team TEXT NOT NULL, id TEXT NOT NULL, persona TEXT NOT NULL,"
            " wallet TEXT NOT NULL, updated_at TEXT NOT NULL, record TEXT NOT NULL,"
            " PRIMARY KEY (team, id))",
            # A persona's sessions with a wallet, most recently updated first: list and cleanup.
            "CREATE INDEX sessions_by_owner"
            " ON sessions (team, persona, wallet, updated_at DESC, id DESC)",
            "CREATE TABLE session_messages ("
            " team TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, session_id, seq))",
            # wallet '' is the persona's team default.
            "CREATE TABLE session_models ("
            " team TEXT NOT NULL, persona TEXT NOT NULL, wallet TEXT NOT NULL,"
            " record TEXT NOT NULL, PRIMARY KEY (team, persona, wallet))",
        ),
    ),
)


def _session(row: Any) -> Session:
    return Session.model_validate(from_json(row["record"]))


def _json(model: Session | Message | ModelChoice) -> str:
    return to_json(model.model_dump(mode="json", exclude_none=True))


class SqliteSessionStore:
    """`SessionStore` on the embedded database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        db.migrate(MIGRATIONS)

    def create(self, team: str, session: Session, messages: list[Message]) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO sessions (team, id, persona, wallet, updated_at, record)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    team,
                    session.id,
                    session.persona,
                    session.wallet_address,
                    sortable(session.updated_at),
                    _json(session),
                ),
            )
            tx.executemany(
                "INSERT INTO session_messages (team, session_id, seq, record) VALUES (?, ?, ?, ?)",
                [(team, session.id, m.seq, _json(m)) for m in messages],
            )

    def get(self, team: str, session_id: str) -> Session | None:
        row = (
            self._db.connection()
            .execute("SELECT record FROM sessions WHERE team = ? AND id = ?", (team, session_id))
            .fetchone()
        )
        return _session(row) if row else None

    def messages(self, team: str, session_id: str, last: int | None = None) -> list[Message]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT record FROM session_messages WHERE team = ? AND session_id = ?"
                " ORDER BY seq DESC LIMIT ?",
                (team, session_id, -1 if last is None else last),
            )
            .fetchall()
        )
        return [Message.model_validate(from_json(row["record"])) for row in reversed(rows)]

    def _update(self, tx: Any, team: str, session: Session) -> None:
        tx.execute(
            "UPDATE sessions SET updated_at = ?, record = ? WHERE team = ? AND id = ?",
            (sortable(session.updated_at), _json(session), team, session.id),
        )

    def _current(self, tx: Any, team: str, session_id: str) -> Session:
        row = tx.execute(
            "SELECT record FROM sessions WHERE team = ? AND id = ?", (team, session_id)
        ).fetchone()
        if row is None:
            raise UnknownSession(session_id)
        return _session(row)

    def append(
        self, team: str, session_id: str, messages: list[tuple[str, str]], now: datetime
    ) -> tuple[Session, list[Message]]:
        with self._db.write() as tx:
            current = self._current(tx, team, session_id)
            updated, added = current.appended(messages, now)
            tx.executemany(
                "INSERT INTO session_messages (team, session_id, seq, record) VALUES (?, ?, ?, ?)",
                [(team, session_id, m.seq, _json(m)) for m in added],
            )
            self._update(tx, team, updated)
        return updated, added

    def touch(self, team: str, session_id: str, now: datetime) -> Session:
        with self._db.write() as tx:
            updated = self._current(tx, team, session_id).model_copy(update={"updated_at": now})
            self._update(tx, team, updated)
        return updated

    def set_pinned(self, team: str, session_id: str, pinned: bool) -> Session:
        with self._db.write() as tx:
            updated = self._current(tx, team, session_id).model_copy(update={"pinned": pinned})
            self._update(tx, team, updated)
        return updated

    def delete(self, team: str, session_id: str) -> Session:
        with self._db.write() as tx:
            current = self._current(tx, team, session_id)
            if current.pinned:
                raise SessionPinned(current)
            self._drop(tx, team, session_id)
        return current

    @staticmethod
    def _drop(tx: Any, team: str, session_id: str) -> None:
        tx.execute("DELETE FROM sessions WHERE team = ? AND id = ?", (team, session_id))
        tx.execute(
            "DELETE FROM session_messages WHERE team = ? AND session_id = ?", (team, session_id)
        )

    def list_owner(
        self, team: str, owner: SessionOwner, *, limit: int, cursor: str | None = None
    ) -> Page[Session]:
        page = newest_first_page(
            self._db.connection(),
            "sessions",
            team,
            order_by="updated_at",
            where=["persona = ?", "wallet = ?"],
            values=[owner.persona, owner.wallet],
            limit=limit,
            cursor=cursor,
        )
        return Page([_session(row) for row in page.items], page.next_cursor)

    def claim_for_compaction(
        self, team: str, session_id: str, claimer: str, now: datetime, until: datetime
    ) -> Session:
        with self._db.write() as tx:
            try:
                current = self._current(tx, team, session_id)
            except UnknownSession as exc:
                raise CompactionLost(session_id) from exc
            held = (
                current.compacting_by is not None
                and current.compacting_by != claimer
                and current.compacting_until is not None
                and current.compacting_until > now
            )
            if current.pinned or held:
                raise CompactionLost(session_id)
            claimed = current.model_copy(
                update={"compacting_by": claimer, "compacting_until": until}
            )
            self._update(tx, team, claimed)
        return claimed

    def delete_compacted(
        self, team: str, session_id: str, claimer: str, seen_updated_at: datetime
    ) -> bool:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT record FROM sessions WHERE team = ? AND id = ?", (team, session_id)
            ).fetchone()
            if row is None:
                return False
            current = _session(row)
            if (
                current.compacting_by != claimer
                or current.pinned
                or current.updated_at != seen_updated_at
            ):
                return False
            self._drop(tx, team, session_id)
        return True

    def release_compaction(self, team: str, session_id: str, claimer: str) -> None:
        with self._db.write() as tx:
            row = tx.execute(
                "SELECT record FROM sessions WHERE team = ? AND id = ?", (team, session_id)
            ).fetchone()
            if row is None or _session(row).compacting_by != claimer:
                return
            released = _session(row).model_copy(
                update={"compacting_by": None, "compacting_until": None}
            )
            self._update(tx, team, released)

    def put_model(self, team: str, choice: ModelChoice) -> None:
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO session_models (team, persona, wallet, record) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (team, persona, wallet) DO UPDATE SET record = excluded.record",
                (team, choice.persona, choice.wallet_address or "", _json(choice)),
            )

    def get_model(self, team: str, persona: Persona, wallet: str | None) -> ModelChoice | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT record FROM session_models WHERE team = ? AND persona = ? AND wallet = ?",
                (team, persona, wallet or ""),
            )
            .fetchone()
        )
        return ModelChoice.model_validate(from_json(row["record"])) if row else None
