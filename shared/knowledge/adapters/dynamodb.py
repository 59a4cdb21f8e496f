"""The knowledge stores in DynamoDB: one table, `TEAM#<team>` partitions.

| item | sk | also |
|---|---|---|
| event | `EVENT#<id>` | `ts_pk = TEAM#t#EVENT`, `ts_sk = <ts>#<id>` (the `by_time` index) |
| project | `PROJECT#<repo>\\x1f<root>` | `last_seen` raised by a conditional write |
| node | `NODE#<uuid>` | `ts_pk = TEAM#t#NODE` |
| session pointer | `SESSION#<key>` | the newest node of a session key and its time |
| entity | `ENTITY#<type>#<canonical>` | |
| CI run | `CIRUN#<repo>#<run id>` | `ts_pk = TEAM#t#CI#<repo>`, `ts_sk = <updated>#<run id>` |
| lesson | `LESSON#<key hash>` | `seen_ids`: the occurrences counted (an occurrence counts once) |

An event is written with `attribute_not_exists(pk)`: the id is the idempotency key. Entity
and node writes are read-modify-write: the enrichment queue is FIFO per team (one message
group per team), so one team's enrichment never runs twice at once.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from boto3.dynamodb.conditions import ConditionBase, Key
from pydantic import BaseModel

from shared.config.tables import KNOWLEDGE_TIME_INDEX
from shared.knowledge.adapters.sqlite import (
    MAX_OCCURRENCE_IDS,
    combine,
    merge_sightings,
    project_of,
)
from shared.knowledge.models import (
    CiRun,
    Entity,
    EntitySighting,
    Event,
    KnowledgeNode,
    Lesson,
    LessonOccurrence,
    Project,
)
from shared.knowledge.ports import SCAN_CAP
from shared.storage.dynamo import ConditionLost, put_if, query_all, team_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

M = TypeVar("M", bound=BaseModel)


def _ts(ms: int, ident: str) -> str:
    return f"{ms:015d}#{ident}"


def _fields(item: dict[str, Any], model: type[Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in item.items() if k in model.model_fields}


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal: ints (every number here is one) as int."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class DynamoKnowledgeStores:
    """`EventStore`, `NodeStore`, `EntityStore` and `LessonStore` on the knowledge table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def _get(self, team: str, sk: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key={"pk": team_pk(team), "sk": sk}, ConsistentRead=True).get(
            "Item"
        )
        return dict(item) if item else None

    def _batch_get(self, team: str, sks: Sequence[str]) -> dict[str, dict[str, Any]]:
        # The resource's client (`meta.client`) takes and returns plain Python values.
        found: dict[str, dict[str, Any]] = {}
        client = self._table.meta.client
        name = self._table.name
        unique = list(dict.fromkeys(sks))
        for start in range(0, len(unique), 100):
            keys = [{"pk": team_pk(team), "sk": sk} for sk in unique[start : start + 100]]
            request: dict[str, Any] = {name: {"Keys": keys, "ConsistentRead": True}}
            while request:
                response = client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(name, []):
                    found[str(item["sk"])] = dict(item)
                request = dict(response.get("UnprocessedKeys") or {})
        return found

    def _records(self, team: str, kind: str, model: type[M], ids: Sequence[str]) -> list[M]:
        """The `kind#<id>` items of `ids` as `model`s, in the order of `ids` (unknown ids left
        out)."""
        found = self._batch_get(team, [f"{kind}#{i}" for i in ids])
        return [
            model.model_validate(_fields(found[f"{kind}#{i}"], model))
            for i in ids
            if f"{kind}#{i}" in found
        ]

    def _by_time(self, partition: str, since_ms: int, cap: int) -> Iterator[dict[str, Any]]:
        condition: ConditionBase = Key("ts_pk").eq(partition)
        if since_ms:
            condition = condition & Key("ts_sk").gte(f"{since_ms:015d}")
        for count, item in enumerate(
            query_all(
                self._table,
                IndexName=KNOWLEDGE_TIME_INDEX,
                KeyConditionExpression=condition,
                ScanIndexForward=False,
            )
        ):
            if count >= cap:
                return
            yield item

    # ------------------------------------------------------------------ events

    def put_new(self, team: str, events: Sequence[Event]) -> list[str]:
        stored: list[str] = []
        for event in events:
            item: dict[str, Any] = {
                "pk": team_pk(team),
                "sk": f"EVENT#{event.id}",
                "ts_pk": f"{team_pk(team)}#EVENT",
                "ts_sk": _ts(event.timestamp, event.id),
                **event.model_dump(mode="json", exclude_none=True),
            }
            try:
                put_if(self._table, item, "attribute_not_exists(pk)")
            except ConditionLost:
                continue
            stored.append(event.id)
            if (project := project_of(event)) is not None:
                self._raise_project(team, project, event.timestamp)
        return stored

    def _raise_project(self, team: str, project: tuple[str, str], seen: int) -> None:
        item = {
            "pk": team_pk(team),
            "sk": "PROJECT#" + "\x1f".join(project),
            "git_repo": project[0],
            "cwd_root": project[1],
            "last_seen": seen,
        }
        with contextlib.suppress(ConditionLost):  # a later activity is already recorded
            put_if(
                self._table,
                item,
                "attribute_not_exists(pk) OR last_seen < :seen",
                values={":seen": seen},
            )

    def get_many(self, team: str, ids: Sequence[str]) -> list[Event]:
        return self._records(team, "EVENT", Event, ids)

    def recent(self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP) -> Iterator[Event]:
        for item in self._by_time(f"{team_pk(team)}#EVENT", since_ms, cap):
            yield Event.model_validate(_fields(item, Event))

    def projects(self, team: str, limit: int) -> list[Project]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with("PROJECT#"),
        )
        projects = [Project.model_validate(_fields(i, Project)) for i in items]
        projects.sort(key=lambda p: (-p.last_seen, p.git_repo, p.cwd_root))
        return projects[:limit]

    # ------------------------------------------------------------------ nodes

    def put(self, team: str, node: KnowledgeNode) -> None:
        self._table.put_item(
            Item={
                "pk": team_pk(team),
                "sk": f"NODE#{node.uuid}",
                "ts_pk": f"{team_pk(team)}#NODE",
                "ts_sk": _ts(node.captured_at, node.uuid),
                **node.model_dump(mode="json"),
            }
        )
        pointer = self._get(team, f"SESSION#{node.session_key}")
        if pointer is None or int(pointer["captured_at"]) <= node.captured_at:
            self._table.put_item(
                Item={
                    "pk": team_pk(team),
                    "sk": f"SESSION#{node.session_key}",
                    "node": node.uuid,
                    "captured_at": node.captured_at,
                }
            )

    def get_nodes(self, team: str, ids: Sequence[str]) -> list[KnowledgeNode]:
        return self._records(team, "NODE", KnowledgeNode, ids)

    def open_session(self, team: str, session_key: str, after_ms: int) -> KnowledgeNode | None:
        pointer = self._get(team, f"SESSION#{session_key}")
        if pointer is None or int(pointer["captured_at"]) < after_ms:
            return None
        nodes = self.get_nodes(team, [str(pointer["node"])])
        return nodes[0] if nodes else None

    def recent_nodes(
        self, team: str, *, since_ms: int = 0, cap: int = SCAN_CAP
    ) -> Iterator[KnowledgeNode]:
        for item in self._by_time(f"{team_pk(team)}#NODE", since_ms, cap):
            yield KnowledgeNode.model_validate(_fields(item, KnowledgeNode))

    # ------------------------------------------------------------------ entities

    def record(self, team: str, sightings: Sequence[EntitySighting]) -> None:
        merged = merge_sightings(sightings)
        if not merged:
            return
        sks = [f"ENTITY#{e.type}#{e.canonical}" for e in merged]
        existing = self._batch_get(team, sks)
        with self._table.batch_writer() as batch:
            for sk, entity in zip(sks, merged, strict=True):
                if sk in existing:
                    entity = combine(Entity.model_validate(_fields(existing[sk], Entity)), entity)
                batch.put_item(
                    Item={"pk": team_pk(team), "sk": sk, **entity.model_dump(mode="json")}
                )

    def entities(self, team: str, *, entity_type: str = "", cap: int = SCAN_CAP) -> list[Entity]:
        prefix = f"ENTITY#{entity_type}#" if entity_type else "ENTITY#"
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with(prefix),
        )
        found = [Entity.model_validate(_fields(i, Entity)) for i in items]
        found.sort(key=lambda e: (-e.last_seen, e.type, e.canonical))
        return found[:cap]

    # ------------------------------------------------------------------ CI and lessons

    def put_run(self, team: str, run: CiRun) -> None:
        item: dict[str, Any] = {
            "pk": team_pk(team),
            "sk": f"CIRUN#{run.repo}#{run.run_id}",
            "ts_pk": f"{team_pk(team)}#CI#{run.repo}",
            "ts_sk": _ts(run.updated_at, run.run_id),
            **run.model_dump(mode="json", exclude_none=True),
        }
        with contextlib.suppress(ConditionLost):  # a newer delivery is stored already
            put_if(
                self._table,
                item,
                "attribute_not_exists(pk) OR updated_at <= :updated",
                values={":updated": run.updated_at},
            )

    def get_run(self, team: str, repo: str, run_id: str) -> CiRun | None:
        item = self._get(team, f"CIRUN#{repo}#{run_id}")
        return CiRun.model_validate(_fields(item, CiRun)) if item else None

    def latest_run(
        self, team: str, repo: str, *, sha: str | None = None, branch: str | None = None
    ) -> CiRun | None:
        for item in self._by_time(f"{team_pk(team)}#CI#{repo}", 0, SCAN_CAP):
            run = CiRun.model_validate(_fields(item, CiRun))
            if sha and not run.sha.startswith(sha):
                continue
            if not sha and branch and run.branch != branch:
                continue
            return run
        return None

    def record_occurrence(self, team: str, occurrence: LessonOccurrence) -> Lesson:
        sk = "LESSON#" + hashlib.sha256(occurrence.key.key.encode()).hexdigest()[:32]
        for _ in range(5):
            item = self._get(team, sk)
            seen: list[str] = list(item.get("seen_ids", [])) if item else []
            lesson = (
                Lesson.model_validate(_fields(item, Lesson)) if item else occurrence.first_lesson()
            )
            if occurrence.id in seen:
                return lesson
            updated = occurrence.counted_in(lesson, first=item is None)
            try:
                put_if(
                    self._table,
                    {
                        "pk": team_pk(team),
                        "sk": sk,
                        "seen_ids": [*seen, occurrence.id][-MAX_OCCURRENCE_IDS:],
                        **updated.model_dump(mode="json"),
                    },
                    "attribute_not_exists(pk) OR occurrences = :was",
                    values={":was": lesson.occurrences},
                )
            except ConditionLost:
                continue  # another delivery counted meanwhile: read again
            return updated
        raise RuntimeError("lesson occurrence kept losing its conditional write")

    def lessons(self, team: str, *, min_occurrences: int = 2) -> list[Lesson]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(team_pk(team)) & Key("sk").begins_with("LESSON#"),
        )
        found = [Lesson.model_validate(_fields(i, Lesson)) for i in items]
        found = [lesson for lesson in found if lesson.occurrences >= min_occurrences]
        found.sort(key=lambda lesson: (-lesson.last_seen_at, lesson.id))
        return found
