"""`Engrams` on the memory group's service: the persona tools write the very records that
`engram_get`, `engram_search` and `recall` read (one memory model, DESIGN §2)."""

from __future__ import annotations

from shared.auth.principal import Principal
from shared.memory.models import Memory
from shared.memory.service import MemoryService
from shared.sessions.ports import NewEngram, StoredEngram
from shared.tools.errors import Conflict, InvalidArgument

_PUT_ATTEMPTS = 3


def _stored(memory: Memory) -> StoredEngram:
    return StoredEngram.model_validate(memory, from_attributes=True)


class MemoryEngrams:
    """`Engrams` over `MemoryService` (its engram methods)."""

    def __init__(self, memory: MemoryService) -> None:
        self._memory = memory

    def put(self, principal: Principal, engram: NewEngram) -> tuple[StoredEngram, bool]:
        wallet, key = engram.wallet, engram.key
        for _ in range(_PUT_ATTEMPTS):
            existing = self._memory.engram_get(principal, wallet_address=wallet, key=key)
            if existing is not None:
                if existing.engram_type != engram.engram_type:
                    raise InvalidArgument(
                        f"`engram_type`: wallet {wallet!r} already keeps a "
                        f"{existing.engram_type} engram under `key` {key!r}; remember it as "
                        f"{existing.engram_type}, or use another key",
                        field="engram_type",
                    )
                if existing.content == engram.content:
                    return _stored(existing), False  # the same write again: nothing changes
                updated = self._memory.engram_update(
                    principal, engram_id=existing.id, content=engram.content, tags=None
                )
                return _stored(updated), False
            try:
                created = self.create(principal, engram)
            except Conflict:
                continue  # created concurrently: replace that one
            return created, True
        raise InvalidArgument(
            f"`key` {key!r} is being written concurrently; retry the call", field="key"
        )

    def create(self, principal: Principal, engram: NewEngram) -> StoredEngram:
        memory = self._memory.engram_create(
            principal,
            wallet_address=engram.wallet,
            engram_type=engram.engram_type,  # type: ignore[arg-type]
            key=engram.key,
            content=engram.content,
            tags=list(engram.tags),
            is_public=False,
        )
        return _stored(memory)

    def set_pinned(self, principal: Principal, *, engram_id: str, pinned: bool) -> StoredEngram:
        return _stored(
            self._memory.engram_set_pinned(principal, engram_id=engram_id, pinned=pinned)
        )
