"""Seed 004's engram pin against engram_delete, on DynamoDB (moto) and SQLite alike: the store
checks the pin in the delete's own atomic step, so a pin that lands while a delete is under way
is never followed by the delete."""

from __future__ import annotations

from typing import Any

import pytest

from shared.auth.principal import Principal
from shared.memory.models import Memory
from shared.memory.ports import MemoryPinned
from shared.memory.service import MemoryService
from shared.memory.wiring import build_memory_service, build_memory_store
from shared.tools.errors import Conflict
from tests.unit.storage.conftest import Backend

WALLET = "0xabc"
ALPHA = Principal(team="alpha", token_id="tok", token_name="t", scopes=frozenset({"admin"}))


@pytest.fixture
def memory(backend: Backend) -> MemoryService:
    return build_memory_service()


def engram(memory: MemoryService, key: str = "visitor.vip") -> Memory:
    return memory.engram_create(
        ALPHA,
        wallet_address=WALLET,
        engram_type="knowledge",
        key=key,
        content='"v"',
        tags=[],
        is_public=False,
    )


def read_then_pinned(memory: MemoryService) -> Memory:
    """A new engram as a writer read it (unpinned), pinned in the store since."""
    created = engram(memory)
    memory.engram_set_pinned(ALPHA, engram_id=created.id, pinned=True)
    return created


def test_a_delete_unless_pinned_refuses_the_stored_pin_whatever_copy_it_is_given(
    memory: MemoryService,
) -> None:
    created = read_then_pinned(memory)  # the copy a deleter read: unpinned
    store = build_memory_store()

    with pytest.raises(MemoryPinned):
        store.delete("alpha", created, unless_pinned=True)

    kept = memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip")
    assert kept is not None
    assert kept.pinned is True
    memory.engram_set_pinned(ALPHA, engram_id=created.id, pinned=False)
    store.delete("alpha", created, unless_pinned=True)
    assert memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip") is None


def test_a_pin_landing_while_engram_delete_runs_keeps_the_engram(memory: MemoryService) -> None:
    created = engram(memory)
    original = memory._engram
    pinned: list[bool] = []

    def read_then_pin(team: str, engram_id: str) -> Any:
        seen = original(team, engram_id)  # engram_delete's read: unpinned
        memory._engram = original  # type: ignore[method-assign]
        pinned.append(memory.engram_set_pinned(ALPHA, engram_id=engram_id, pinned=True).pinned)
        return seen

    memory._engram = read_then_pin  # type: ignore[method-assign]
    with pytest.raises(Conflict) as refused:
        memory.engram_delete(ALPHA, engram_id=created.id)

    assert pinned == [True]
    assert refused.value.field == "id"
    assert created.id in str(refused.value)
    kept = memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip")
    assert kept is not None
    assert kept.pinned is True


# Issue 13 follow-up: a pin and an update racing on one engram both land. The pin tools write
# the pin field alone; engram_update's whole-record write keeps the stored pin (conditioned on
# the pin it carries, re-read and retried when one landed since its read).


def test_a_pin_landing_between_engram_updates_read_and_write_is_kept(
    memory: MemoryService,
) -> None:
    created = engram(memory)
    original = memory._engram

    def read_then_pin(team: str, engram_id: str) -> Any:
        seen = original(team, engram_id)  # engram_update's read: unpinned, old content
        memory._engram = original  # type: ignore[method-assign]
        memory.engram_set_pinned(ALPHA, engram_id=engram_id, pinned=True)
        return seen

    memory._engram = read_then_pin  # type: ignore[method-assign]
    updated = memory.engram_update(ALPHA, engram_id=created.id, content='"new"', tags=["t"])

    assert updated.pinned is True  # the reply says what is stored
    store = build_memory_store()
    for stored in (
        store.get("alpha", created.id),  # the record
        memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip"),  # the key's copy
    ):
        assert stored is not None
        assert (stored.pinned, stored.content, stored.tags) == (True, '"new"', ["t"])
    with pytest.raises(Conflict):
        memory.engram_delete(ALPHA, engram_id=created.id)
    with pytest.raises(MemoryPinned):
        store.delete("alpha", created, unless_pinned=True)
    assert memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip") is not None


def test_an_update_landing_between_a_pins_read_and_write_is_kept(memory: MemoryService) -> None:
    created = engram(memory)
    original = memory._engram

    def read_then_update(team: str, engram_id: str) -> Any:
        seen = original(team, engram_id)  # the pin's read: old content
        memory._engram = original  # type: ignore[method-assign]
        memory.engram_update(ALPHA, engram_id=engram_id, content='"new"', tags=None)
        return seen

    memory._engram = read_then_update  # type: ignore[method-assign]
    pinned = memory.engram_set_pinned(ALPHA, engram_id=created.id, pinned=True)

    assert (pinned.pinned, pinned.content) == (True, '"new"')
    store = build_memory_store()
    for stored in (
        store.get("alpha", created.id),
        memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip"),
    ):
        assert stored is not None
        assert (stored.pinned, stored.content) == (True, '"new"')
    with pytest.raises(Conflict):
        memory.engram_delete(ALPHA, engram_id=created.id)


def test_an_unpin_landing_between_an_updates_read_and_write_is_kept(
    memory: MemoryService,
) -> None:
    created = read_then_pinned(memory)
    stale = memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip")
    assert stale is not None
    assert stale.pinned
    memory.engram_set_pinned(ALPHA, engram_id=created.id, pinned=False)
    store = build_memory_store()

    written = store.transition(
        "alpha", stale.model_copy(update={"content": '"new"'}), frozenset({"filed"})
    )

    assert (written.pinned, written.content) == (False, '"new"')
    after = memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip")
    assert after is not None
    assert (after.pinned, after.content) == (False, '"new"')
    memory.engram_delete(ALPHA, engram_id=created.id)  # unpinned: deletable
    assert memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip") is None


def test_a_supersede_written_from_a_stale_copy_keeps_the_old_versions_pin(
    memory: MemoryService,
) -> None:
    created = read_then_pinned(memory)  # the copy a superseder read: unpinned
    store = build_memory_store()
    new = created.model_copy(update={"id": "m-new", "content": '"v2"', "supersedes": created.id})
    closed = created.model_copy(update={"status": "superseded", "superseded_by": "m-new"})

    store.supersede("alpha", closed, frozenset({"filed"}), new)

    old = store.get("alpha", created.id)
    assert old is not None
    assert (old.status, old.pinned) == ("superseded", True)
    current = memory.engram_get(ALPHA, wallet_address=WALLET, key="visitor.vip")
    assert current is not None
    assert current.id == "m-new"
