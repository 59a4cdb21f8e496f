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


def test_a_delete_unless_pinned_refuses_the_stored_pin_whatever_copy_it_is_given(
    memory: MemoryService,
) -> None:
    created = engram(memory)  # the copy a deleter read: unpinned
    memory.engram_set_pinned(ALPHA, engram_id=created.id, pinned=True)
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
