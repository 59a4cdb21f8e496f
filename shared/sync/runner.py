"""The scheduled sync of one team: what the sync-runner function does when a schedule fires.

It checks the event is its team's own schedule (`ScheduledSync.checked`), then runs the team's
connectors and memory pruning under the sync lock (a sync already running for the team makes this
one a no-op), and rebuilds the team's document index (`embeddings_build`), which reuses cached
embeddings for unchanged text. The runner has 15 minutes, where a tool call has 24 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shared.auth.principal import Principal
from shared.search.service import SearchService
from shared.sync.schedules import ScheduledSync
from shared.sync.service import SyncService


def run_scheduled_sync(
    event: Mapping[str, Any],
    *,
    sync: SyncService,
    search: SearchService,
    team_exists: Callable[[str], bool],
) -> dict[str, Any]:
    """Sync the team `event` names; returns what was done (ids and counts only)."""
    scheduled = ScheduledSync.model_validate(event)
    team = scheduled.checked(team_exists)
    # The schedule acts for its team with the sync scope only; writes record it as the actor.
    principal = Principal(
        team=team,
        token_id=f"schedule:{scheduled.schedule}",
        token_name=scheduled.schedule,
        scopes=frozenset({"sync"}),
    )
    outcome = sync.sync(principal, source=None, lock=True)
    if outcome.skipped:
        return {"team": team, "skipped": True, "reason": outcome.reason}
    chunks = search.rebuild(team)
    return {
        "team": team,
        "skipped": False,
        "connectors": [
            {"source": c.source, "success": c.success, "message": c.message}
            for c in outcome.connectors or []
        ],
        "memory_pruned": outcome.memory_pruned,
        "chunks_indexed": chunks,
    }
