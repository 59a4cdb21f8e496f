"""The sync group's service, put together with the search and memory groups' (built once per
process): it indexes through search, and prunes and writes memories.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime

if TYPE_CHECKING:
    from shared.sync.service import SyncService


@runtime.cached
def build_sync_service() -> SyncService:
    """The sync group's service: it indexes through the search group and prunes and writes
    memories through the memory group."""
    from shared.memory.wiring import build_memory_service, build_memory_store
    from shared.search.wiring import build_search_service
    from shared.sync.wiring import build_sync_service as sync_parts

    return sync_parts(
        search=build_search_service(),
        memory=build_memory_service(),
        memory_store=build_memory_store(),
        sync=build_sync_service,
    )
