"""Sessions in DynamoDB (the sessions table).

- a session: `TEAM#<team>` / `SESSION#<id>`, its record's fields as attributes, plus `owner_pk`
  (`TEAM#<team>#<persona>#<wallet>`) and `updated_key` (`<UTC µs>#<id>`), the keys of the
  `sessions_by_owner` index that lists a persona's sessions with a wallet, newest first;
- a message: `TEAM#<team>` / `MSG#<session id>#<seq:06d>` (one contiguous range per session);
- a model choice: `TEAM#<team>` / `MODEL#<persona>#<wallet>` (`*` for the team default).

An append is one transaction: the session's update, conditional on the message count it read,
and the new messages; two appends racing cannot number two messages alike (the loser retries).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError
from pydantic import TypeAdapter

from shared.config.tables import SESSIONS_BY_OWNER_INDEX
from shared.sessions.models import Message, ModelChoice, Persona, Session
from shared.sessions.ports import (
    CompactionLost,
    SessionBusy,
    SessionOwner,
    SessionPinned,
    UnknownSession,
)
from shared.storage.dynamo import (
    ConditionLost,
    delete_if,
    query_all,
    query_page,
    team_pk,
    update_if,
)
from shared.storage.pages import Page
from shared.storage.times import sortable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

_APPEND_ATTEMPTS = 16
_APPEND_MAX_PAUSE = 0.2  # seconds


def _session_key(team: str, session_id: str) -> dict[str, str]:
    return {"pk": team_pk(team), "sk": f"SESSION#{session_id}"}


def _owner_pk(team: str, persona: str, wallet: str) -> str:
    return f"{team_pk(team)}#{persona}#{wallet}"


def _updated_key(session: Session) -> str:
    return f"{sortable(session.updated_at)}#{session.id}"


def _message_prefix(session_id: str) -> str:
    return f"MSG#{session_id}#"


def _session(item: dict[str, Any]) -> Session:
    return Session.model_validate({k: v for k, v in item.items() if k in Session.model_fields})


def _message(item: dict[str, Any]) -> Message:
    return Message.model_validate({k: v for k, v in item.items() if k in Message.model_fields})


class DynamoSessionStore:
    """`SessionStore` on the sessions table (see `shared.config.tables.SESSIONS`)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def _item(self, team: str, session: Session) -> dict[str, Any]:
        item: dict[str, Any] = {
            **_session_key(team, session.id),
            "team": team,
            "owner_pk": _owner_pk(team, session.persona, session.wallet_address),
            "updated_key": _updated_key(session),
            **session.model_dump(mode="json", exclude_none=True),
        }
        if session.compacting_until is not None:
            # Compared as text with `:now` in the claim's condition: one format, sortable.
            item["compacting_until"] = sortable(session.compacting_until)
        return item

    def _message_item(self, team: str, session_id: str, message: Message) -> dict[str, Any]:
        return {
            "pk": team_pk(team),
            "sk": f"{_message_prefix(session_id)}{message.seq:06d}",
            **message.model_dump(mode="json"),
        }

    def create(self, team: str, session: Session, messages: list[Message]) -> None:
        client = self._table.meta.client
        puts: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": self._item(team, session),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ]
        puts += [
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": self._message_item(team, session.id, m),
                }
            }
            for m in messages
        ]
        client.transact_write_items(TransactItems=puts)  # type: ignore[arg-type]

    def get(self, team: str, session_id: str) -> Session | None:
        item = self._table.get_item(Key=_session_key(team, session_id), ConsistentRead=True).get(
            "Item"
        )
        return _session(item) if item else None

    def _require(self, team: str, session_id: str) -> Session:
        session = self.get(team, session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    def _message_items(self, team: str, session_id: str) -> Iterable[dict[str, Any]]:
        return query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(_message_prefix(session_id)),
            ConsistentRead=True,
        )

    def messages(self, team: str, session_id: str, last: int | None = None) -> list[Message]:
        if last is None:
            return [_message(item) for item in self._message_items(team, session_id)]
        newest: list[Message] = []
        for item in query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team))
            & Key("sk").begins_with(_message_prefix(session_id)),
            ConsistentRead=True,
            ScanIndexForward=False,
            Limit=min(last, 1000),
        ):
            if len(newest) == last:
                break
            newest.append(_message(item))
        return newest[::-1]

    def append(
        self, team: str, session_id: str, messages: list[tuple[str, str]], now: datetime
    ) -> tuple[Session, list[Message]]:
        client = self._table.meta.client
        for attempt in range(_APPEND_ATTEMPTS):
            current = self._require(team, session_id)
            updated, added = current.appended(messages, now)
            items: list[dict[str, Any]] = [
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": self._item(team, updated),
                        # The whole item is written back: it must be the one read, or a
                        # pin or a cleanup's claim made meanwhile would be undone.
                        "ConditionExpression": "attribute_exists(pk) AND message_count = :seen"
                        " AND pinned = :pinned AND "
                        + (
                            "compacting_by = :claim"
                            if current.compacting_by is not None
                            else "attribute_not_exists(compacting_by)"
                        ),
                        "ExpressionAttributeValues": {
                            ":seen": current.message_count,
                            ":pinned": current.pinned,
                            **(
                                {":claim": current.compacting_by}
                                if current.compacting_by is not None
                                else {}
                            ),
                        },
                    }
                }
            ]
            items += [
                {
                    "Put": {
                        "TableName": self._table.name,
                        "Item": self._message_item(team, session_id, m),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
                for m in added
            ]
            try:
                client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                # Another write (an append, a pin, a claim or a delete) won: read again after
                # a jittered pause, so that racing appends spread out instead of colliding
                # again in lockstep.
                time.sleep(random.uniform(0, min(_APPEND_MAX_PAUSE, 0.005 * 2**attempt)))  # noqa: S311 - jitter
                continue
            return updated, added
        raise SessionBusy(session_id)

    def touch(self, team: str, session_id: str, now: datetime) -> Session:
        # Only the two time attributes: a pin or a claim written meanwhile is kept.
        moment = now.astimezone(UTC)
        try:
            item = update_if(
                self._table,
                _session_key(team, session_id),
                "SET updated_at = :at, updated_key = :key",
                "attribute_exists(pk)",
                values={
                    ":at": TypeAdapter(datetime).dump_python(moment, mode="json"),
                    ":key": f"{sortable(moment)}#{session_id}",
                },
            )
        except ConditionLost as lost:
            raise UnknownSession(session_id) from lost
        return _session(item)

    def set_pinned(self, team: str, session_id: str, pinned: bool) -> Session:
        self._require(team, session_id)
        try:
            item = update_if(
                self._table,
                _session_key(team, session_id),
                "SET pinned = :pinned",
                "attribute_exists(pk)",
                values={":pinned": pinned},
            )
        except ConditionLost as lost:
            raise UnknownSession(session_id) from lost
        return _session(item)

    def delete(self, team: str, session_id: str) -> Session:
        try:
            item = delete_if(
                self._table,
                _session_key(team, session_id),
                "attribute_exists(pk) AND pinned = :false",
                values={":false": False},
            )
        except ConditionLost as lost:
            if lost.item is None:
                raise UnknownSession(session_id) from lost
            raise SessionPinned(_session(lost.item)) from lost
        self._drop_messages(team, session_id)
        return _session(item)

    def _drop_messages(self, team: str, session_id: str) -> None:
        # After the session item went: a crash in between leaves messages no read reaches.
        with self._table.batch_writer() as batch:
            for item in self._message_items(team, session_id):
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})

    def list_owner(
        self, team: str, owner: SessionOwner, *, limit: int, cursor: str | None = None
    ) -> Page[Session]:
        return query_page(
            self._table,
            team,
            _session,
            limit=limit,
            cursor=cursor,
            key_attributes=("pk", "sk", "owner_pk", "updated_key"),
            IndexName=SESSIONS_BY_OWNER_INDEX,
            KeyConditionExpression=Key("owner_pk").eq(_owner_pk(team, owner.persona, owner.wallet)),
            ScanIndexForward=False,
        )

    def claim_for_compaction(
        self, team: str, session_id: str, claimer: str, now: datetime, until: datetime
    ) -> Session:
        try:
            item = update_if(
                self._table,
                _session_key(team, session_id),
                "SET compacting_by = :me, compacting_until = :until",
                "attribute_exists(pk) AND pinned = :false AND (attribute_not_exists(compacting_by)"
                " OR compacting_by = :me OR compacting_until < :now)",
                values={
                    ":me": claimer,
                    ":until": sortable(until),
                    ":now": sortable(now),
                    ":false": False,
                },
            )
        except ConditionLost as lost:
            raise CompactionLost(session_id) from lost
        return _session(item)

    def delete_compacted(
        self, team: str, session_id: str, claimer: str, seen_updated_at: datetime
    ) -> bool:
        try:
            delete_if(
                self._table,
                _session_key(team, session_id),
                "compacting_by = :me AND pinned = :false AND updated_key = :seen",
                values={
                    ":me": claimer,
                    ":false": False,
                    ":seen": f"{sortable(seen_updated_at)}#{session_id}",
                },
            )
        except ConditionLost:
            return False
        self._drop_messages(team, session_id)
        return True

    def release_compaction(self, team: str, session_id: str, claimer: str) -> None:
        try:
            update_if(
                self._table,
                _session_key(team, session_id),
                "REMOVE compacting_by, compacting_until",
                "compacting_by = :me",
                values={":me": claimer},
            )
        except ConditionLost:
            return

    def _model_key(self, team: str, persona: str, wallet: str | None) -> dict[str, str]:
        return {"pk": team_pk(team), "sk": f"MODEL#{persona}#{wallet or '*'}"}

    def put_model(self, team: str, choice: ModelChoice) -> None:
        self._table.put_item(
            Item={
                **self._model_key(team, choice.persona, choice.wallet_address),
                **choice.model_dump(mode="json", exclude_none=True),
            }
        )

    def get_model(self, team: str, persona: Persona, wallet: str | None) -> ModelChoice | None:
        item = self._table.get_item(
            Key=self._model_key(team, persona, wallet), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        return ModelChoice.model_validate(
            {k: v for k, v in item.items() if k in ModelChoice.model_fields}
        )
