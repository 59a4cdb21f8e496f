"""Each store's DynamoDB items as the embedded store's rows, and back: what moves a team between
the two backends (docs/portability.md, "Across backends").

The export file holds one shape for both backends: the embedded store's rows (`{"kind": <table>,
"row": {<column>: <value>}}`, every column but `team`). SQLite reads and writes them as they are;
on DynamoDB every item kind is turned into its row on export, and every row into the items the
store's DynamoDB adapter would have written on import — built with the adapters' own item
builders where they have one, so an imported item is the one the store writes.

Items that only index another (a key alias, a workflow's name, a knowledge session's newest
node) are derived: left out of the export and rebuilt on import from the record they index.
An item kind this module does not know stops the export, naming it: nothing is left out
silently (`tests/unit/portability/test_every_kind_translates.py` checks every table and item
kind; `test_across_backends.py` moves a team both ways through the tools).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError
from pydantic import BaseModel

from shared.auth.contexts import TeamContext
from shared.config import names
from shared.config.names import TTL_ATTRIBUTE
from shared.connectors.models import ConnectorRecord, ConnectorStatus
from shared.domain_events.adapters.log_item import event_item
from shared.domain_events.adapters.sqlite_log_rows import log_row
from shared.domain_events.log import Event, expires_at
from shared.handoffs.adapters.sqlite import SqliteHandoffStore
from shared.handoffs.models import Handoff
from shared.knowledge.models import CiRun, Entity, KnowledgeNode, Lesson, LessonKey
from shared.knowledge.models import Event as KnowledgeEvent
from shared.memory.adapters.dynamodb import _alias, _memory
from shared.memory.adapters.dynamodb import _item as _memory_item
from shared.memory.adapters.sqlite import _expiry, _namespace, _record
from shared.memory.models import Finding, Memory
from shared.orchestrator.agents.adapters import _item as _agent_item
from shared.orchestrator.agents.adapters import _retired_epoch, agent_from_item
from shared.orchestrator.agents.models import AgentRecord
from shared.orchestrator.agents.sqlite import item_retired_until
from shared.orchestrator.artifacts.adapters import artifact_from_item
from shared.orchestrator.artifacts.models import Artifact
from shared.orchestrator.artifacts.sqlite import _row as _artifact_row
from shared.orchestrator.costs.adapters.sqlite import _row as _cost_row
from shared.orchestrator.costs.models import CostRecord
from shared.orchestrator.tasks.adapters.dynamodb import _queue_sk
from shared.orchestrator.tasks.adapters.sqlite import _row as _task_row
from shared.orchestrator.tasks.models import OPEN_STATUSES, Task
from shared.search.adapters.sqlite_documents import _chunk_row, _entity_row
from shared.search.models import ChunkItem, EntityItem
from shared.sessions.models import Message, ModelChoice, Session
from shared.storage.dynamo import team_pk
from shared.storage.sqlite import to_json
from shared.storage.team_data import TOKEN_KIND, BadRecord, Record
from shared.storage.team_data_dynamo import DynamoTeamData
from shared.storage.times import sortable
from shared.storage.values import from_dynamo, to_dynamo
from shared.sync.models import SyncRun
from shared.workflows.adapters.dynamodb import _execution_item
from shared.workflows.adapters.dynamodb import _record as _workflow_item_json
from shared.workflows.adapters.sqlite import _json as _workflow_json
from shared.workflows.models import Execution, Workflow

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

    from shared.sync.ports import ScheduleBook

Row = dict[str, Any]
Item = dict[str, Any]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Put:
    """One item to write on import. `newer` names a numeric attribute: the item replaces one
    already there when its value is greater (a pointer to the newest record); otherwise an
    item already there is left as it is."""

    table: str
    item: Item
    newer: str | None = None


# ---------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Kind:
    """One SQLite table and the DynamoDB items that hold the same records."""

    table: str  # the SQLite table: the file's `kind`
    dynamo: str  # the DynamoDB table (logical id)
    prefix: str  # the sort key prefix of its items (the partition, for token contexts)
    to_row: Callable[[Item], Row]
    to_items: Callable[[str, Row], list[Put]]


ItemsOf = Callable[[str, Row], list[Put]]
KINDS: list[Kind] = []


def translates(
    table: str, dynamo: str, prefix: str, to_row: Callable[[Item], Row]
) -> Callable[[ItemsOf], ItemsOf]:
    """Register the decorated function (a row of `table` → its items) with `to_row` (an
    item of `dynamo` under `prefix` → its row)."""

    def register(to_items: ItemsOf) -> ItemsOf:
        KINDS.append(Kind(table, dynamo, prefix, to_row, to_items))
        return to_items

    return register


def _fields(item: Mapping[str, Any], model: type[M]) -> M:
    """The model an item carries as attributes (the keys and index attributes left out)."""
    return model.model_validate(
        {k: from_dynamo(v) for k, v in item.items() if k in model.model_fields}
    )


def _of_record(row: Mapping[str, Any], model: type[M], column: str = "record") -> M:
    text = row.get(column)
    if not isinstance(text, str):
        raise BadRecord(f"the row needs `{column}`, the record as JSON text")
    return model.model_validate_json(text)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _columns(names_: tuple[str, ...], values: tuple[Any, ...]) -> Row:
    """A row helper's values (`team` first) as the row, without `team`."""
    return dict(zip(names_, values[1:], strict=True))


def _key(team: str, sk: str) -> Item:
    return {"pk": team_pk(team), "sk": sk}


def _with_record(model: BaseModel, columns: Row, *, compact: bool = True) -> Row:
    """`columns` and the record as the store writes it (`compact`: its None fields left out,
    as most stores leave them; the knowledge store keeps them)."""
    return {**columns, "record": to_json(model.model_dump(mode="json", exclude_none=compact))}


def _record_item(table: str, team: str, sk: str, model: BaseModel, *, compact: bool) -> list[Put]:
    """The one item of a record stored as its attributes (`compact`: None fields left out)."""
    return [Put(table, {**_key(team, sk), **model.model_dump(mode="json", exclude_none=compact)})]


def _record_kind(
    table: str,
    dynamo: str,
    prefix: str,
    model: type[M],
    *,
    sk: Callable[[M, Row], str],
    columns: Callable[[M, Item], Row],
    compact: bool,
) -> None:
    """Register a kind whose item is its record's attributes under `sk`, and whose row is
    `columns` beside the record (`compact`: None fields left out of both)."""

    def to_row(item: Item) -> Row:
        record = _fields(item, model)
        return _with_record(record, columns(record, item), compact=compact)

    def to_items(team: str, row: Row) -> list[Put]:
        record = _of_record(row, model)
        return _record_item(dynamo, team, sk(record, row), record, compact=compact)

    KINDS.append(Kind(table, dynamo, prefix, to_row, to_items))


def _plain(team: str, sk: str, row: Row, columns: tuple[str, ...]) -> Item:
    """An item whose attributes are some of the row's columns as they are."""
    return {**_key(team, sk), **{column: row[column] for column in columns}}


def _timed(team: str, sk: str, series: str, ms: int, ident: str, fields: Item) -> Item:
    """A knowledge item listed by time: `by_time` keys it by series within the team."""
    return {
        **_key(team, sk),
        "ts_pk": f"{team_pk(team)}#{series}",
        "ts_sk": f"{ms:015d}#{ident}",
        **fields,
    }


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


# ---------------------------------------------------------------------------- memories


def _memory_row(item: Item) -> Row:
    memory = _memory(item)
    keyed = memory.key is not None and memory.active
    return {
        "id": memory.id,
        "expires_at": _expiry(memory),
        "updated_at": sortable(memory.updated_at),
        "record": _record(memory),
        "status": memory.status,
        # The row holding the key is the active memory the key's alias names.
        "alias_namespace": _namespace(memory.wallet_address) if keyed else None,
        "alias_key": memory.key if keyed else None,
    }


@translates("memories", names.TABLE_MEMORIES, "MEMORY#", _memory_row)
def _memory_items(team: str, row: Row) -> list[Put]:
    memory = _of_record(row, Memory)
    puts = [Put(names.TABLE_MEMORIES, _memory_item(team, memory))]
    if row.get("alias_key") is not None and memory.key is not None:
        puts.append(Put(names.TABLE_MEMORIES, _alias(team, memory)))
    return puts


def _finding_row(item: Item) -> Row:
    finding = _fields(item, Finding)
    return _with_record(finding, {"id": finding.id, "status": finding.status})


@translates("memory_findings", names.TABLE_MEMORIES, "FINDING#", _finding_row)
def _finding_item(team: str, row: Row) -> list[Put]:
    finding = _of_record(row, Finding)
    item = {**_key(team, "FINDING#" + finding.id), "team": team, **to_dynamo(_dump(finding))}
    return [Put(names.TABLE_MEMORIES, item)]


# ---------------------------------------------------------------------------- handoffs


def _handoff_row(item: Item) -> Row:
    handoff = _fields(item, Handoff)
    return _columns(
        ("id", "status", "created_at", "project_key", "cwd", "harness", "record"),
        SqliteHandoffStore._row("", handoff),
    )


@translates("handoffs", names.TABLE_HANDOFFS, "HANDOFF#", _handoff_row)
def _handoff_items(team: str, row: Row) -> list[Put]:
    handoff = _of_record(row, Handoff)
    item = {**_key(team, "HANDOFF#" + handoff.id), "team": team, **_dump(handoff)}
    if handoff.status == "open":  # the sparse index lists exactly the claimable ones
        item["open_pk"] = team_pk(team)
    return [Put(names.TABLE_HANDOFFS, item)]


# ---------------------------------------------------------------------------- coordination

_TASK_COLUMNS = (
    "id",
    "status",
    "priority",
    "created_at",
    "workflow_id",
    "claimed_by",
    "fence",
    "lease_epoch",
    "record",
)


def _task_row_of(item: Item) -> Row:
    task = _fields(item, Task)
    lease = item.get("lease_epoch")
    return _columns(_TASK_COLUMNS, _task_row("", task, None if lease is None else int(lease)))


@translates("tasks", names.TABLE_COORDINATION, "TASK#", _task_row_of)
def _task_items(team: str, row: Row) -> list[Put]:
    task = _of_record(row, Task)
    item: Item = {**_key(team, "TASK#" + task.id), "team": team}
    if task.status in OPEN_STATUSES:
        item.update({"queue_pk": team_pk(team), "queue_sk": _queue_sk(task)})
    if row.get("lease_epoch") is not None:
        item["lease_epoch"] = int(row["lease_epoch"])
    item.update(to_dynamo(_dump(task), "input_data"))
    return [Put(names.TABLE_COORDINATION, item)]


def _agent_row(item: Item) -> Row:
    agent = agent_from_item(item)
    retired = item_retired_until(item, agent)
    return _with_record(agent, {"id": agent.agent_id, "expires_at": retired})


@translates("agents", names.TABLE_COORDINATION, "AGENT#", _agent_row)
def _agent_items(team: str, row: Row) -> list[Put]:
    agent = _of_record(row, AgentRecord)
    item = _agent_item(team, agent)
    if agent.deregistered_at is not None:  # a retired record is collected by TTL
        item[TTL_ATTRIBUTE] = _retired_epoch(agent.deregistered_at)
    return [Put(names.TABLE_COORDINATION, item)]


def _agent_name_row(item: Item) -> Row:
    return {"name": str(item["sk"]).removeprefix("AGENT_NAME#"), "agent_id": item["agent_id"]}


@translates("agent_names", names.TABLE_COORDINATION, "AGENT_NAME#", _agent_name_row)
def _agent_name_items(team: str, row: Row) -> list[Put]:
    item = {**_key(team, f"AGENT_NAME#{row['name']}"), "team": team, "agent_id": row["agent_id"]}
    return [Put(names.TABLE_COORDINATION, item)]


def _artifact_row_of(item: Item) -> Row:
    artifact = artifact_from_item(item)
    return _columns(("id", "task_id", "workflow_id", "record"), _artifact_row("", artifact))


@translates("artifacts", names.TABLE_COORDINATION, "ARTIFACT#", _artifact_row_of)
def _artifact_items(team: str, row: Row) -> list[Put]:
    artifact = _of_record(row, Artifact)
    item = {
        **_key(team, "ARTIFACT#" + artifact.artifact_id),
        "team": team,
        **artifact.model_dump(mode="json", exclude_none=True, exclude={"metadata"}),
        "metadata_json": json.dumps(artifact.metadata, ensure_ascii=False),
    }
    return [Put(names.TABLE_COORDINATION, item)]


def _cost_row_of(item: Item) -> Row:
    report = CostRecord.model_validate(from_dynamo(item))
    report_id = str(item["sk"]).removeprefix("COST#")
    return _columns(("id", "reported_at", "record"), _cost_row("", report_id, report))


@translates("costs", names.TABLE_COORDINATION, "COST#", _cost_row_of)
def _cost_items(team: str, row: Row) -> list[Put]:
    report = _of_record(row, CostRecord)
    item = {
        **_key(team, f"COST#{row['id']}"),
        **to_dynamo(_dump(report), "estimated_cost_usd"),
    }
    return [Put(names.TABLE_COORDINATION, item)]


def _budget_row(item: Item) -> Row:
    return {
        "budget": str(item["sk"]).removeprefix("BUDGET#"),
        "crossed_at": item["crossed_at"],
        "over_until": item["over_until"],
    }


@translates("budget_crossings", names.TABLE_COORDINATION, "BUDGET#", _budget_row)
def _budget_items(team: str, row: Row) -> list[Put]:
    item = _plain(team, f"BUDGET#{row['budget']}", row, ("crossed_at", "over_until"))
    return [Put(names.TABLE_COORDINATION, item)]


_EVENT_COLUMNS = ("id", "event_type", "published_at", "expires_epoch", "record")


def _event_row(item: Item) -> Row:
    event = Event.model_validate(from_dynamo(item))
    ttl = item.get(TTL_ATTRIBUTE)
    epoch = int(ttl) if ttl is not None else _epoch(expires_at(event))
    return _columns(_EVENT_COLUMNS, log_row("", event, epoch))


@translates("events", names.TABLE_COORDINATION, "EVENT#", _event_row)
def _event_items(team: str, row: Row) -> list[Put]:
    item = event_item(team, _of_record(row, Event))
    if row.get("expires_epoch") is not None:
        item[TTL_ATTRIBUTE] = int(row["expires_epoch"])
    return [Put(names.TABLE_COORDINATION, item)]


def _workflow_row(item: Item) -> Row:
    workflow = Workflow.model_validate_json(str(item["record"]))
    return {
        "id": workflow.id,
        "name": workflow.name,
        "created_at": sortable(workflow.created_at),
        "updated_at": sortable(workflow.updated_at),
        "record": _workflow_json(workflow),
    }


@translates("workflows", names.TABLE_COORDINATION, "WF#", _workflow_row)
def _workflow_items(team: str, row: Row) -> list[Put]:
    workflow = _of_record(row, Workflow)
    item = {
        **_key(team, "WF#" + workflow.id),
        "team": team,
        "name": workflow.name,
        "updated_at": sortable(workflow.updated_at),
        "record": _workflow_item_json(workflow),
    }
    name = {**_key(team, "WFNAME#" + workflow.name), "workflow_id": workflow.id}
    return [Put(names.TABLE_COORDINATION, item), Put(names.TABLE_COORDINATION, name)]


def _execution_row(item: Item) -> Row:
    execution = Execution.model_validate_json(str(item["record"]))
    return {
        "id": execution.id,
        "workflow_id": execution.workflow_id,
        "status": execution.status,
        "revision": execution.revision,
        "record": _workflow_json(execution),
    }


@translates("workflow_executions", names.TABLE_COORDINATION, "WFX#", _execution_row)
def _execution_items(team: str, row: Row) -> list[Put]:
    return [Put(names.TABLE_COORDINATION, _execution_item(team, _of_record(row, Execution)))]


# ---------------------------------------------------------------------------- documents


def _document_row(item: Item) -> Row:
    entity = _fields(item, EntityItem)
    ttl = item.get(TTL_ATTRIBUTE)
    return _columns(
        ("id", "source", "deleted", "expires_at", "record"),
        _entity_row("", entity, None if ttl is None else int(ttl)),
    )


@translates("document_entities", names.TABLE_DOCUMENTS, "ENTITY#", _document_row)
def _document_items(team: str, row: Row) -> list[Put]:
    entity = _of_record(row, EntityItem)
    item = {**_key(team, "ENTITY#" + entity.id), **entity.model_dump(exclude_none=True)}
    if row.get("expires_at") is not None:  # a tombstone, collected by TTL
        item[TTL_ATTRIBUTE] = int(row["expires_at"])
    return [Put(names.TABLE_DOCUMENTS, item)]


def _chunk_row_of(item: Item) -> Row:
    return _columns(
        ("entity_id", "chunk_index", "record"), _chunk_row("", _fields(item, ChunkItem))
    )


@translates("document_chunks", names.TABLE_DOCUMENTS, "CHUNK#", _chunk_row_of)
def _chunk_items(team: str, row: Row) -> list[Put]:
    chunk = _of_record(row, ChunkItem)
    sk = f"CHUNK#{chunk.entity_id}#{chunk.chunk_index:05d}"
    return [Put(names.TABLE_DOCUMENTS, {**_key(team, sk), **chunk.model_dump(exclude_none=True)})]


# ---------------------------------------------------------------------------- sessions


def _session_row(item: Item) -> Row:
    session = _fields(item, Session)
    columns = {"id": session.id, "persona": session.persona, "wallet": session.wallet_address}
    return _with_record(session, {**columns, "updated_at": sortable(session.updated_at)})


@translates("sessions", names.TABLE_SESSIONS, "SESSION#", _session_row)
def _session_items(team: str, row: Row) -> list[Put]:
    session = _of_record(row, Session)
    item: Item = {
        **_key(team, "SESSION#" + session.id),
        "team": team,
        "owner_pk": f"{team_pk(team)}#{session.persona}#{session.wallet_address}",
        "updated_key": f"{sortable(session.updated_at)}#{session.id}",
        **_dump(session),
    }
    if session.compacting_until is not None:
        item["compacting_until"] = sortable(session.compacting_until)
    return [Put(names.TABLE_SESSIONS, item)]


def _message_session(item: Item) -> str:
    return str(item["sk"]).removeprefix("MSG#").rsplit("#", 1)[0]


_record_kind(
    "session_messages",
    names.TABLE_SESSIONS,
    "MSG#",
    Message,
    sk=lambda message, row: f"MSG#{row['session_id']}#{message.seq:06d}",
    columns=lambda message, item: {"session_id": _message_session(item), "seq": message.seq},
    compact=False,
)
_record_kind(
    "session_models",
    names.TABLE_SESSIONS,
    "MODEL#",
    ModelChoice,
    sk=lambda choice, _: f"MODEL#{choice.persona}#{choice.wallet_address or '*'}",
    columns=lambda choice, _: {"persona": choice.persona, "wallet": choice.wallet_address or ""},
    compact=True,
)

# ---------------------------------------------------------------------------- knowledge


def _knowledge_event_row(item: Item) -> Row:
    event = _fields(item, KnowledgeEvent)
    return _with_record(event, {"id": event.id, "ts": event.timestamp}, compact=False)


@translates("knowledge_events", names.TABLE_KNOWLEDGE, "EVENT#", _knowledge_event_row)
def _knowledge_event_items(team: str, row: Row) -> list[Put]:
    event = _of_record(row, KnowledgeEvent)
    item = _timed(team, "EVENT#" + event.id, "EVENT", event.timestamp, event.id, _dump(event))
    return [Put(names.TABLE_KNOWLEDGE, item)]


def _project_row(item: Item) -> Row:
    return {
        "git_repo": item["git_repo"],
        "cwd_root": item["cwd_root"],
        "last_seen": int(item["last_seen"]),
    }


@translates("knowledge_projects", names.TABLE_KNOWLEDGE, "PROJECT#", _project_row)
def _project_items(team: str, row: Row) -> list[Put]:
    sk = "PROJECT#" + "\x1f".join((row["git_repo"], row["cwd_root"]))
    item = _plain(team, sk, row, ("git_repo", "cwd_root", "last_seen"))
    return [Put(names.TABLE_KNOWLEDGE, item)]


def _node_row(item: Item) -> Row:
    node = _fields(item, KnowledgeNode)
    columns = {"id": node.uuid, "captured_at": node.captured_at, "session_key": node.session_key}
    return _with_record(node, columns, compact=False)


@translates("knowledge_nodes", names.TABLE_KNOWLEDGE, "NODE#", _node_row)
def _node_items(team: str, row: Row) -> list[Put]:
    node = _of_record(row, KnowledgeNode)
    fields = node.model_dump(mode="json")
    item = _timed(team, "NODE#" + node.uuid, "NODE", node.captured_at, node.uuid, fields)
    # The session's newest node: what `open_session` reads (the newest one wins).
    pointer = {"node": node.uuid, "captured_at": node.captured_at}
    return [
        Put(names.TABLE_KNOWLEDGE, item),
        Put(
            names.TABLE_KNOWLEDGE,
            {**_key(team, "SESSION#" + node.session_key), **pointer},
            "captured_at",
        ),
    ]


_record_kind(
    "knowledge_entities",
    names.TABLE_KNOWLEDGE,
    "ENTITY#",
    Entity,
    sk=lambda entity, _: f"ENTITY#{entity.type}#{entity.canonical}",
    columns=lambda e, _: {"type": e.type, "canonical": e.canonical, "last_seen": e.last_seen},
    compact=False,
)


def _ci_row(item: Item) -> Row:
    run = _fields(item, CiRun)
    columns = {"repo": run.repo, "run_id": run.run_id, "sha": run.sha, "branch": run.branch}
    return _with_record(run, {**columns, "updated_at": run.updated_at}, compact=False)


@translates("knowledge_ci_runs", names.TABLE_KNOWLEDGE, "CIRUN#", _ci_row)
def _ci_items(team: str, row: Row) -> list[Put]:
    run = _of_record(row, CiRun)
    sk, series = f"CIRUN#{run.repo}#{run.run_id}", f"CI#{run.repo}"
    return [
        Put(names.TABLE_KNOWLEDGE, _timed(team, sk, series, run.updated_at, run.run_id, _dump(run)))
    ]


def _lesson_key(lesson: Lesson) -> str:
    return LessonKey(
        repo=lesson.repo, tool=lesson.tool, rule_id=lesson.rule_id, path_prefix=lesson.path_prefix
    ).key


def _lesson_row(item: Item) -> Row:
    lesson = _fields(item, Lesson)
    seen = to_json([str(i) for i in item.get("seen_ids", [])])
    columns = {"key": _lesson_key(lesson), "occurrences": lesson.occurrences, "seen_ids": seen}
    return _with_record(lesson, {**columns, "last_seen": lesson.last_seen_at}, compact=False)


@translates("knowledge_lessons", names.TABLE_KNOWLEDGE, "LESSON#", _lesson_row)
def _lesson_items(team: str, row: Row) -> list[Put]:
    import hashlib

    lesson = _of_record(row, Lesson)
    sk = "LESSON#" + hashlib.sha256(_lesson_key(lesson).encode()).hexdigest()[:32]
    seen = json.loads(str(row.get("seen_ids") or "[]"))
    item = {**_key(team, sk), "seen_ids": seen, **lesson.model_dump(mode="json")}
    return [Put(names.TABLE_KNOWLEDGE, item)]


# ---------------------------------------------------------------------------- sync


def _last_sync_row(item: Item) -> Row:
    return {"source": item["source"], "last_sync": item["last_sync"]}


@translates("sync_connectors", names.TABLE_SYNC, "CONNECTOR#", _last_sync_row)
def _last_sync_items(team: str, row: Row) -> list[Put]:
    sk = f"CONNECTOR#{row['source']}"
    return [Put(names.TABLE_SYNC, _plain(team, sk, row, ("source", "last_sync")))]


def _run_row(item: Item) -> Row:
    run = SyncRun.model_validate_json(str(item["body"]))
    return {"run_id": run.run_id, "body": run.model_dump_json()}


@translates("sync_runs", names.TABLE_SYNC, "RUN#", _run_row)
def _run_items(team: str, row: Row) -> list[Put]:
    from shared.sync.adapters.dynamodb import RUN_TTL_SECONDS

    run = _of_record(row, SyncRun, "body")
    item = {
        **_key(team, "RUN#" + run.run_id),
        "body": run.model_dump_json(),
        TTL_ATTRIBUTE: _epoch(run.created_at) + RUN_TTL_SECONDS,
    }
    return [Put(names.TABLE_SYNC, item)]


def _connector_row(item: Item) -> Row:
    record = ConnectorRecord.model_validate_json(str(item["body"]))
    status = ConnectorStatus.model_validate_json(str(item.get("status") or "{}"))
    return {
        "name": record.name,
        "body": record.model_copy(update={"status": status}).model_dump_json(),
    }


@translates("connectors", names.TABLE_SYNC, "SOURCE#", _connector_row)
def _connector_items(team: str, row: Row) -> list[Put]:
    record = _of_record(row, ConnectorRecord, "body")
    item = {
        **_key(team, "SOURCE#" + record.name),
        "body": record.model_dump_json(exclude={"status"}),
        "status": record.status.model_dump_json(),
    }
    return [Put(names.TABLE_SYNC, item)]


def _connector_item_row(item: Item) -> Row:
    name = str(item["sk"]).removeprefix("ITEM#").split("#", 1)[0]
    return {"name": name, "item": item["item"], "version": item["version"]}


@translates("connector_items", names.TABLE_SYNC, "ITEM#", _connector_item_row)
def _connector_item_items(team: str, row: Row) -> list[Put]:
    from shared.sync.adapters.dynamodb_connectors import _item_sk

    sk = _item_sk(str(row["name"]), str(row["item"]))
    return [Put(names.TABLE_SYNC, _plain(team, sk, row, ("item", "version")))]


# ---------------------------------------------------------------------------- tokens


def _context_row(item: Item) -> Row:
    from shared.auth.adapters.dynamodb import _context

    context = _context(item)
    return _with_record(context, {"name": context.name}, compact=False)


@translates("token_contexts", names.TABLE_TOKENS, "CONTEXT#", _context_row)
def _context_items(team: str, row: Row) -> list[Put]:
    context = _of_record(row, TeamContext)
    item = {
        "pk": f"CONTEXT#{team}#{context.name}",
        "sk": "CONTEXT",
        **_dump(context),
        "tools": list(context.tools or ()),
        "all_tools": context.tools is None,
    }
    return [Put(names.TABLE_TOKENS, item)]


# ---------------------------------------------------------------------------- the registry


# Every kind, registered by `translates` above.
BY_TABLE = {kind.table: kind for kind in KINDS}

# Items that index a record held elsewhere: rebuilt on import from that record.
DERIVED: frozenset[tuple[str, str]] = frozenset(
    {
        (names.TABLE_MEMORIES, "KEY#"),
        (names.TABLE_MEMORIES, "ENGRAM#"),
        (names.TABLE_COORDINATION, "WFNAME#"),
        (names.TABLE_KNOWLEDGE, "SESSION#"),
    }
)
# SQLite tables whose records DynamoDB keeps outside its tables (the sync schedule: in
# EventBridge Scheduler), handled by the portability service.
SCHEDULE_TABLE = "sync_schedules"
OUTSIDE_TABLES = frozenset({SCHEDULE_TABLE})


def kind_of(dynamo: str, item: Item) -> Kind | None:
    """The kind of `item` of table `dynamo`; None when it is derived. `BadRecord` when no kind
    holds it (prefixes end in `#`, so none is another's prefix)."""
    key = str(item.get("pk", "")) if dynamo == names.TABLE_TOKENS else str(item.get("sk", ""))
    for kind in KINDS:
        if kind.dynamo == dynamo and key.startswith(kind.prefix):
            return kind
    if any(t == dynamo and key.startswith(p) for t, p in DERIVED):
        return None
    raise BadRecord(f"no row kind for the {dynamo} item {key.split('#', 1)[0]}#…")


def rows_of(dynamo: str, item: Item) -> Iterator[tuple[str, Row]]:
    """The row `item` is, as (table, row); nothing for a derived item."""
    kind = kind_of(dynamo, item)
    if kind is not None:
        yield kind.table, kind.to_row(item)


def puts_of(table: str, team: str, row: Row) -> list[Put]:
    """What to write in DynamoDB for one row of `table`; `BadRecord` naming what is wrong."""
    kind = BY_TABLE.get(table)
    if kind is None:
        raise BadRecord(f"`kind` {table!r} is no table of the export format")
    try:
        return kind.to_items(team, row)
    except BadRecord:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise BadRecord(f"a {table} row that is not one: {exc}") from exc


# ---------------------------------------------------------------------------- the adapter


class DynamoRows:
    """`TeamData` on DynamoDB whose records are the embedded store's rows (the export format):
    items are read and written through `items` (`DynamoTeamData`) and turned into rows and
    back here. A record of format 1 holding an `item` is still taken as it is. `schedules`:
    where the team's sync schedule lives outside the tables (EventBridge Scheduler)."""

    backend = "dynamodb"

    def __init__(
        self,
        items: DynamoTeamData,
        tables: Mapping[str, Table],
        schedules: Callable[[], ScheduleBook | None] = lambda: None,
    ) -> None:
        self._items = items
        self._tables = dict(tables)
        self._schedules = schedules

    def export_team(self, team: str) -> Iterator[Record]:
        for record in self._items.export_team(team):
            if record["kind"] == TOKEN_KIND:
                yield record
                continue
            for table, row in rows_of(str(record["kind"]), record["item"]):
                yield {"kind": table, "row": row}
        book = self._schedules()
        view = book.get(team) if book is not None else None
        if view is not None:
            yield {
                "kind": SCHEDULE_TABLE,
                "row": {
                    "expression": view.expression,
                    # Scheduler keeps no creation time: the export's stands for it.
                    "created_at": datetime.now(UTC).isoformat(),
                    "last_fired_at": view.last_fired_at.isoformat()
                    if view.last_fired_at is not None
                    else None,
                },
            }

    def check_record(self, record: Record) -> None:
        if record.get("kind") == TOKEN_KIND:
            return
        if "item" in record:  # format 1, exported from DynamoDB
            self._items.check_record(record)
            return
        row = record.get("row")
        kind = record.get("kind")
        if not isinstance(row, dict) or not isinstance(kind, str):
            raise BadRecord("a record needs `kind`, a table, and `row`, an object of its columns")
        if kind == SCHEDULE_TABLE:
            if not isinstance(row.get("expression"), str):
                raise BadRecord("a sync_schedules row needs `expression`")
            return
        puts_of(kind, "team", row)

    def import_records(
        self, team: str, records: Sequence[Record], exported_team: str | None = None
    ) -> int:
        for record in records:  # every record checked before any is written
            self.check_record(record)
        legacy = [r for r in records if "item" in r]
        written = self._items.import_records(team, legacy, exported_team) if legacy else 0
        rows = [r for r in records if "row" in r and r["kind"] != TOKEN_KIND]
        schedules = [r["row"] for r in rows if r["kind"] == SCHEDULE_TABLE]
        puts = [puts_of(r["kind"], team, r["row"]) for r in rows if r["kind"] != SCHEDULE_TABLE]
        for row in schedules:
            written += self._put_schedule(team, str(row["expression"]))
        for record_puts in puts:
            # The row counts as written when its own item was (the rest index it). Each put
            # is tried even when the record is there: a run cut between a record and its
            # index items is completed by the next.
            wrote = [self._put(put) for put in record_puts]
            written += int(wrote[0])
        return written

    def _put_schedule(self, team: str, expression: str) -> int:
        book = self._schedules()
        if book is None or book.get(team) is not None:
            return 0
        book.put(team, expression)
        return 1

    def _put(self, put: Put) -> bool:
        table = self._tables[put.table]
        item = to_dynamo(put.item, "item")
        condition = "attribute_not_exists(pk)"
        values: dict[str, Any] = {}
        if put.newer is not None:
            condition += f" OR {put.newer} < :newer"
            values[":newer"] = item[put.newer]
        try:
            if values:
                table.put_item(
                    Item=item, ConditionExpression=condition, ExpressionAttributeValues=values
                )
            else:
                table.put_item(Item=item, ConditionExpression=condition)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def delete_team(self, team: str) -> dict[str, int]:
        return self._items.delete_team(team)
