"""Two reviewers racing on one proposal on the embedded store (SQLite, the local default):
exactly one decision wins, the other is told which.

Both reviewers are held until each has read the proposal as still `proposed`, so the race is
decided by the store's conditional transition, not by one reviewer reading the other's
decision first (which would pass without the condition)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.auth.principal import Principal
from shared.config.settings import Settings
from shared.memory.lifecycle import Lifecycle
from shared.memory.lifecycle_models import ReviewOutcome
from shared.memory.models import Memory
from shared.memory.ports import MemoryStore
from shared.memory.wiring import build_finding_store, build_memory_service, build_memory_store
from shared.search.memory_index import SearchMemoryIndex


@pytest.fixture
def local(tmp_path: Path) -> Iterator[None]:
    runtime.configure(Settings(environment="test", storage="sqlite", data_dir=tmp_path))
    yield
    runtime.configure(Settings())


class _ReadTogether:
    """The memory store, except that each `get` waits until both reviewers have read."""

    def __init__(self, store: MemoryStore, readers: threading.Barrier) -> None:
        self._store = store
        self._readers = readers

    def get(self, team: str, memory_id: str) -> Memory | None:
        memory = self._store.get(team, memory_id)
        self._readers.wait(timeout=30)
        return memory

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def _principal(name: str, scopes: frozenset[str]) -> Principal:
    return Principal(team="alpha", token_id=name, token_name=name, scopes=scopes, agent_id=name)


def test_two_reviewers_racing_on_one_proposal_see_exactly_one_decision(local: None) -> None:
    service = build_memory_service()
    author = _principal("author", frozenset({"memory"}))
    proposal = service.lifecycle.propose(
        author,
        content="The VPN endpoint moved to vpn2.example.com.",
        subject="vpn",
        kind="fact",
    )
    outcomes: dict[str, ReviewOutcome] = {}
    readers = threading.Barrier(2)
    store: Any = _ReadTogether(build_memory_store(), readers)
    lifecycle = Lifecycle(store, SearchMemoryIndex(), build_finding_store())

    def review(name: str, decision: str) -> None:
        reviewer = _principal(name, frozenset({"memory", "memory.review"}))
        (outcome,) = lifecycle.review(
            reviewer,
            ids=[proposal.id],
            decision="approve" if decision == "approve" else "reject",
            note=name,
        )
        outcomes[name] = outcome

    threads = [
        threading.Thread(target=review, args=("lead-1", "approve")),
        threading.Thread(target=review, args=("lead-2", "reject")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not readers.broken  # both read `proposed` before either wrote
    decided = [o for o in outcomes.values() if o.decided]
    assert len(decided) == 1
    (loser,) = [o for o in outcomes.values() if not o.decided]
    stored = service.get(author, memory_id=proposal.id, key=None)
    assert stored is not None
    assert stored.status == decided[0].status
    assert loser.status == stored.status  # the loser is told what won
    assert [e.action for e in stored.history].count("approved") + [
        e.action for e in stored.history
    ].count("rejected") == 1
