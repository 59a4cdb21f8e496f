"""The outbox contract, on DynamoDB (moto) and SQLite alike: a store method that makes a
reportable change writes the events it is given in the change's own transaction.

- an accepted change always has its events in the team's event log;
- a refused conditional change (a lost claim, a fenced-out completion, an unknown id) writes
  none;
- an event that cannot be written keeps the change out too (one transaction, not two writes:
  the case a function killed between two writes used to lose).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.domain_events.adapters.event_log import as_log_event
from shared.domain_events.emitter import DomainEvents
from shared.domain_events.models import DomainEvent, Kind
from shared.handoffs.models import Claim, Handoff
from shared.handoffs.ports import AlreadyClaimed, HandoffStore, UnknownHandoff
from shared.handoffs.wiring import build_handoff_store
from shared.orchestrator.events.ports import EventLog
from shared.orchestrator.events.wiring import build_event_log
from shared.orchestrator.tasks.models import Task
from shared.orchestrator.tasks.ports import (
    ClaimLost,
    ClaimNotHeld,
    TaskClaim,
    TaskFinish,
    TaskStore,
)
from shared.orchestrator.tasks.wiring import build_task_store
from tests.unit.storage.conftest import Backend

# Events are read back through the log, which drops what is older than its retention: now.
NOW = datetime.now(UTC).replace(microsecond=0)
LEASE = timedelta(minutes=15)
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
MAKE = DomainEvents()


def logged(log: EventLog, team: str = "alpha") -> list[tuple[str, str]]:
    """(event_type, event id) of the team's log, oldest first."""
    return [(e.event_type, e.event_id) for e in log.read_after(team, EPOCH, None, 500)]


def event(kind: Kind, **fields: str | int | None) -> DomainEvent:
    return MAKE.event("alpha", kind, "agent-a", **fields)


@pytest.fixture
def log(backend: Backend) -> EventLog:
    return build_event_log()


# ---------------------------------------------------------------- tasks


@pytest.fixture
def tasks(backend: Backend) -> TaskStore:
    return build_task_store()


def new_task(number: int = 1) -> Task:
    return Task(id=f"tsk_{number:04d}", name="t", created_by="boss", created_at=NOW, updated_at=NOW)


def test_a_created_task_has_its_event(tasks: TaskStore, log: EventLog) -> None:
    created = event(Kind.TASK_CREATED, task_id="tsk_0001")
    tasks.create("alpha", new_task(), events=[created])
    assert logged(log) == [("cairn.task.created", created.id)]
    assert logged(log, "beta") == []


def test_a_claim_writes_its_events_and_a_lost_claim_writes_none(
    tasks: TaskStore, log: EventLog
) -> None:
    tasks.create("alpha", new_task())
    requeued = event(Kind.TASK_REQUEUED, task_id="tsk_0001")
    won = event(Kind.TASK_CLAIMED, task_id="tsk_0001", fence=1)
    claimed = tasks.claim(
        "alpha", "tsk_0001", TaskClaim("a", NOW, NOW + LEASE, 0), events=[requeued, won]
    )
    assert (claimed.status, claimed.claimed_by, claimed.fence) == ("claimed", "a", 1)
    assert sorted(logged(log)) == sorted(
        [("cairn.task.requeued", requeued.id), ("cairn.task.claimed", won.id)]
    )

    # Refused: a live lease, then a stale fence, then an unknown task.
    for task_id, fence in (("tsk_0001", 1), ("tsk_0001", 0), ("tsk_0404", 0)):
        with pytest.raises(ClaimLost):
            tasks.claim(
                "alpha",
                task_id,
                TaskClaim("b", NOW, NOW + LEASE, fence),
                events=[event(Kind.TASK_CLAIMED, task_id=task_id)],
            )
    assert len(logged(log)) == 2


def test_a_completion_writes_its_event_and_a_fenced_out_one_writes_none(
    tasks: TaskStore, log: EventLog
) -> None:
    tasks.create("alpha", new_task())
    tasks.claim("alpha", "tsk_0001", TaskClaim("a", NOW - 2 * LEASE, NOW - LEASE, 0))
    # a's lease ran out and b took the task over: a's completion is refused, with no event.
    tasks.claim("alpha", "tsk_0001", TaskClaim("b", NOW, NOW + LEASE, 1))
    with pytest.raises(ClaimNotHeld):
        tasks.finish(
            "alpha",
            "tsk_0001",
            TaskFinish("a", 1, "completed", {"output": "stale"}, NOW),
            events=[event(Kind.TASK_COMPLETED, task_id="tsk_0001")],
        )
    assert logged(log) == []
    failed = event(Kind.TASK_FAILED, task_id="tsk_0001")
    finished = tasks.finish(
        "alpha", "tsk_0001", TaskFinish("b", 2, "failed", {"error": "e"}, NOW), events=[failed]
    )
    assert finished.status == "failed"
    assert logged(log) == [("cairn.task.failed", failed.id)]


def test_an_event_that_cannot_be_written_keeps_the_claim_out(
    tasks: TaskStore, log: EventLog
) -> None:
    tasks.create("alpha", new_task())
    taken = event(Kind.TASK_CLAIMED, task_id="tsk_0001")
    log.append("alpha", as_log_event(taken))  # its id is taken: the event's write must fail
    with pytest.raises(Exception):  # noqa: B017, PT011 - each adapter's own refusal
        tasks.claim("alpha", "tsk_0001", TaskClaim("a", NOW, NOW + LEASE, 0), events=[taken])
    current = tasks.get("alpha", "tsk_0001")
    assert current is not None
    assert (current.status, current.fence) == ("pending", 0)


def test_events_of_another_team_are_refused(tasks: TaskStore, log: EventLog) -> None:
    stray = MAKE.event("beta", Kind.TASK_CREATED, "agent-a", task_id="tsk_0001")
    with pytest.raises(ValueError, match="beta"):
        tasks.create("alpha", new_task(), events=[stray])
    assert tasks.get("alpha", "tsk_0001") is None
    assert logged(log, "beta") == []


# ---------------------------------------------------------------- handoffs


@pytest.fixture
def handoffs(backend: Backend) -> HandoffStore:
    return build_handoff_store()


def new_handoff() -> Handoff:
    return Handoff(
        id="hof_0001",
        title="t",
        document_md="# d",
        created_by="agent-a",
        created_at=NOW,
        status="open",
    )


def test_a_stored_and_a_claimed_handoff_have_their_events(
    handoffs: HandoffStore, log: EventLog
) -> None:
    stored = event(Kind.HANDOFF_STORED, handoff_id="hof_0001")
    handoffs.create("alpha", new_handoff(), events=[stored])
    claimed = event(Kind.HANDOFF_CLAIMED, handoff_id="hof_0001", created_by="agent-a")
    won = handoffs.claim("alpha", "hof_0001", Claim(agent_id="b", claimed_at=NOW), events=[claimed])
    assert won.status == "claimed"
    assert won.claim is not None
    assert won.claim.agent_id == "b"
    assert sorted(logged(log)) == sorted(
        [("cairn.handoff.stored", stored.id), ("cairn.handoff.claimed", claimed.id)]
    )


def test_a_lost_or_unknown_handoff_claim_writes_no_event(
    handoffs: HandoffStore, log: EventLog
) -> None:
    handoffs.create("alpha", new_handoff())
    handoffs.claim("alpha", "hof_0001", Claim(agent_id="b", claimed_at=NOW))
    with pytest.raises(AlreadyClaimed) as lost:
        handoffs.claim(
            "alpha",
            "hof_0001",
            Claim(agent_id="c", claimed_at=NOW),
            events=[event(Kind.HANDOFF_CLAIMED, handoff_id="hof_0001")],
        )
    assert lost.value.claim is not None
    assert lost.value.claim.agent_id == "b"
    with pytest.raises(UnknownHandoff):
        handoffs.claim(
            "alpha",
            "hof_0404",
            Claim(agent_id="c", claimed_at=NOW),
            events=[event(Kind.HANDOFF_CLAIMED, handoff_id="hof_0404")],
        )
    assert logged(log) == []


# ---------------------------------------------------------------- workflow executions


def test_an_execution_start_and_end_have_their_events_and_a_stale_write_none(
    backend: Backend, log: EventLog
) -> None:
    from shared.workflows.ports import StaleWrite
    from shared.workflows.wiring import build_workflow_store
    from tests.unit.storage.test_workflow_store_contract import execution

    store = build_workflow_store()
    started = event(Kind.WORKFLOW_STARTED, execution_id="wfx_0001")
    store.create_execution("alpha", execution(1), events=[started])
    stored = store.get_execution("alpha", "wfx_0001")
    assert stored is not None
    ended = event(Kind.WORKFLOW_SUCCEEDED, execution_id="wfx_0001")
    stored.status = "completed"
    stored.revision += 1
    store.save_execution("alpha", stored, events=[ended])
    # A writer that read the execution before that write loses, and records nothing.
    stale = execution(1)
    stale.status = "cancelled"
    stale.revision = 1
    with pytest.raises(StaleWrite):
        store.save_execution(
            "alpha", stale, events=[event(Kind.WORKFLOW_CANCELLED, execution_id="wfx_0001")]
        )
    assert sorted(logged(log)) == sorted(
        [("cairn.workflow.started", started.id), ("cairn.workflow.succeeded", ended.id)]
    )


# ---------------------------------------------------------------- memories and findings


def test_a_proposal_has_its_event_and_a_taken_key_writes_none(
    backend: Backend, log: EventLog
) -> None:
    from shared.memory.ports import KeyTaken
    from shared.memory.wiring import build_memory_store
    from tests.unit.storage.test_memory_store_contract import memory

    store = build_memory_store()
    awaiting = event(Kind.MEMORY_PROPOSAL_AWAITING_REVIEW, memory_id="mem_0001")
    store.create("alpha", memory(1, key="k"), events=[awaiting])
    with pytest.raises(KeyTaken):
        store.create(
            "alpha",
            memory(2, key="k"),
            events=[event(Kind.MEMORY_PROPOSAL_AWAITING_REVIEW, memory_id="mem_0002")],
        )
    assert logged(log) == [("cairn.memory.proposal_awaiting_review", awaiting.id)]


def test_a_new_finding_has_its_event_and_a_repeat_writes_none(
    backend: Backend, log: EventLog
) -> None:
    from shared.memory.wiring import build_finding_store
    from tests.unit.storage.test_memory_store_contract import finding

    store = build_finding_store()
    detected = event(Kind.MEMORY_CONFLICT_DETECTED, finding_id="fnd_0001")
    assert store.add("alpha", finding(1), events=[detected])
    again = event(Kind.MEMORY_CONFLICT_DETECTED, finding_id="fnd_0001")
    assert not store.add("alpha", finding(1), events=[again])  # a replayed stream record
    assert logged(log) == [("cairn.memory.conflict_detected", detected.id)]
