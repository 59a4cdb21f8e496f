"""The services put together from more than one group's, built once per process: sessions
keep engrams as memories, and knowledge indexes its nodes through search. (Sync, which indexes
through search and prunes memories, is put together in `shared.app.sync_service`; the
orchestrator and workflows, whose services react to each other, in `shared.app.reactions`: a
module per function's reach, so each bundle carries only what its function can import.)

Each group's wiring is imported where it is first needed, so a function loads no other
group's modules at init, and a bundle carries only what its function can reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime

if TYPE_CHECKING:
    from shared.knowledge.enrich import Enricher
    from shared.knowledge.service import KnowledgeService
    from shared.sessions.service import SessionService


@runtime.cached
def build_session_service() -> SessionService:
    """The sessions group's service: its engrams are the memory group's memories."""
    from shared.memory.wiring import build_memory_service
    from shared.sessions.wiring import build_session_service as session_parts

    return session_parts(build_memory_service())


@runtime.cached
def build_knowledge_service() -> KnowledgeService:
    """The knowledge group's service: it indexes and ranks its nodes through the search
    group (built at the first use, as search is not needed to record an event)."""
    from shared.knowledge.wiring import build_knowledge_service as knowledge_parts
    from shared.search.wiring import build_search_service

    return knowledge_parts(build_search_service)


def build_enricher() -> Enricher:
    """The knowledge worker's enricher, indexing through the search group."""
    from shared.knowledge.wiring import build_enricher as enricher_parts
    from shared.search.wiring import build_search_service

    return enricher_parts(build_search_service)
