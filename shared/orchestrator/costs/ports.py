"""What the cost service needs from storage: the team's append-only ledger of usage reports."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from shared.orchestrator.costs.models import CostRecord


class CostLedger(Protocol):
    """Cost reports of one team at a time, in report-time order."""

    def record(self, team: str, report: CostRecord) -> None:
        """Add one report (reports are never changed or removed)."""
        ...

    def reports_since(self, team: str, since: datetime | None) -> list[CostRecord]:
        """Every report of the team with `reported_at` at or after `since` (None: all of them),
        oldest first (reports of the same microsecond in no set order)."""
        ...
