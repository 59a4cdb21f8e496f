"""What the cost service needs from storage: the team's append-only ledger of usage reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shared.domain_events.models import DomainEvent
from shared.orchestrator.costs.models import CostRecord


@dataclass(frozen=True)
class BudgetCrossing:
    """Spend over `budget` (its period and limit, e.g. `30d:50.0`) at `at`, over at least until
    `over_until` without new reports."""

    budget: str
    at: datetime
    over_until: datetime


class CostLedger(Protocol):
    """Cost reports of one team at a time, in report-time order."""

    def record(self, team: str, report: CostRecord) -> None:
        """Add one report (reports are never changed or removed)."""
        ...

    def reports_since(self, team: str, since: datetime | None) -> list[CostRecord]:
        """Every report of the team with `reported_at` at or after `since` (None: all of them),
        oldest first (reports of the same microsecond in no set order). A strongly
        consistent read: it sees every report recorded before it began."""
        ...

    def mark_over_budget(
        self, team: str, crossing: BudgetCrossing, *, events: Sequence[DomainEvent] = ()
    ) -> bool:
        """Record that the team's spend is over the crossing's budget at `at`, and stays over
        at least until `over_until` without new reports.

        One conditional write: when the team was not over that budget at `at` (never, or its
        last `over_until` has passed) this is a new crossing: it is recorded with `events`
        in the same transaction and True is returned. Otherwise the crossing is the one
        already recorded: only its `over_until` moves later (never earlier), no event is
        written, and False is returned. Of reports racing across the limit, exactly one gets
        True."""
        ...
