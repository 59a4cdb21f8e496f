"""What the sync-runner function does, for one team per event. Two kinds of event start it:

- a team's schedule firing, `{"team": ..., "schedule": "sync-<team>"}`: the runner checks the
  event is its team's own schedule (`ScheduledSync.checked`), records a `scheduled` run and does
  it: the team's connectors and memory pruning under the sync lock (a sync already running for
  the team makes this one `skipped`), then the rebuild of the team's document index and the
  re-index of its memories (`embeddings_build`, reusing cached embeddings). A connector's
  schedule also carries `"source"`: its run syncs and rebuilds that connector's documents only;
- a background run a tool call queued, `{"run": {"team": ..., "run_id": ...}}` (an asynchronous
  invoke): the runner checks the team has tokens and runs the recorded run once.

The runner has 15 minutes, where a tool call has 24 s. Its answer carries ids and counts only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared.sync.runs import LOCK_LEASE_SECONDS, lock_holder, new_run
from shared.sync.schedules import TEAM_PATTERN, ScheduledSync, ScheduleError
from shared.sync.service import SyncService


class QueuedRun(BaseModel):
    """What a tool call's asynchronous invoke hands the runner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str = Field(min_length=1, max_length=64, pattern=TEAM_PATTERN)
    run_id: str = Field(min_length=1, max_length=80, pattern=r"^run_[0-9a-z_]+$")


def run_event(
    event: Mapping[str, Any],
    *,
    sync: SyncService,
    team_exists: Callable[[str], bool],
) -> dict[str, Any]:
    """Do what `event` asks (a schedule firing or a queued run); returns ids and counts."""
    if "run" in event:
        queued = QueuedRun.model_validate(event["run"])
        if not team_exists(queued.team):
            raise ScheduleError(f"team {queued.team!r} has no tokens: nothing to run for it")
        run = sync.runs.execute(queued.team, queued.run_id)
        return {"team": queued.team, "run_id": run.run_id, "state": run.state, **run.counts}
    return run_scheduled_sync(event, sync=sync, team_exists=team_exists)


def run_scheduled_sync(
    event: Mapping[str, Any],
    *,
    sync: SyncService,
    team_exists: Callable[[str], bool],
) -> dict[str, Any]:
    """Sync the team `event` names as a `scheduled` run; returns what was done."""
    scheduled = ScheduledSync.model_validate(event)
    team = scheduled.checked(team_exists)
    state, now = sync.state, sync.now()
    run = new_run(
        "scheduled",
        source=scheduled.source,
        requested_by=f"schedule:{scheduled.schedule}",
        now=now,
        holds_lock=True,
    )
    if not state.acquire_lock(team, lock_holder(run.run_id), now, LOCK_LEASE_SECONDS):
        skipped = run.model_copy(
            update={"state": "skipped", "finished_at": now, "error": "another sync holds the lock"}
        )
        state.put_run(team, skipped)
        return {"team": team, "run_id": run.run_id, "skipped": True, "reason": "lock"}
    state.put_run(team, run)
    done = sync.runs.execute(team, run.run_id)
    return {
        "team": team,
        "run_id": done.run_id,
        "skipped": False,
        "state": done.state,
        **done.counts,
    }
