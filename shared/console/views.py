"""What each console page shows, gathered through tool calls (never from a store).

Each function takes the signed-in `ToolClient` and the tools its token may call, calls the
tools the page needs and returns plain data for the templates. A section whose tool the token
may not call is marked unavailable instead of failing the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from shared.console.client import ConsoleError, SignedOut, ToolClient

BACK_PAGES = frozenset({"review", "memories", "memory", "work"})
MEMORY_KINDS = ("fact", "decision", "preference", "procedure", "observation")
MEMORY_STATUSES = ("active", "proposed", "rejected", "superseded", "retracted")
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")
# The review queue's sections, each paged on its own by a query parameter of this name that
# carries the section's cursor (the tool's next_cursor, passed back unchanged).
QUEUE_SECTIONS = ("proposals", "conflicts", "duplicates", "flagged")
QUEUE_PAGE = {"proposals": 100, "conflicts": 50, "duplicates": 50, "flagged": 100}


def when(value: Any) -> str:
    """A timestamp as people read it: `2026-05-01 14:03 UTC`."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


@dataclass
class Section:
    """One list on a page: its items, or why the token cannot see them; `next_cursor` when
    the tool has more, `cursor` when this is not the first page."""

    items: list[dict[str, Any]] = field(default_factory=list)
    unavailable: str | None = None
    error: str | None = None
    next_cursor: str | None = None
    cursor: str | None = None


def _section(
    client: ToolClient,
    tools: frozenset[str],
    tool: str,
    key: str,
    *,
    cursor: str | None = None,
    **arguments: Any,
) -> Section:
    if tool not in tools:
        return Section(unavailable=f"This token may not call {tool}.")
    if cursor:
        arguments["cursor"] = cursor
    try:
        result = client.call(tool, arguments)
    except SignedOut:
        raise
    except ConsoleError as exc:
        return Section(error=exc.message, cursor=cursor)
    return Section(
        items=list(result.get(key, [])), next_cursor=result.get("next_cursor"), cursor=cursor
    )


@dataclass
class ReviewQueue:
    proposals: Section
    conflicts: Section
    duplicates: Section
    flagged: Section
    may_review: bool
    may_curate: bool
    cursors: dict[str, str] = field(default_factory=dict)

    def page_link(self, section: str, cursor: str | None) -> str:
        """The queue's query string with `section` at `cursor` (None: its first page) and
        every other section where it is now."""
        cursors = {**self.cursors, section: cursor or ""}
        return urlencode([(name, cursors[name]) for name in QUEUE_SECTIONS if cursors.get(name)])


def review_queue(
    client: ToolClient, tools: frozenset[str], cursors: Mapping[str, str] | None = None
) -> ReviewQueue:
    """Proposals, open conflicts and duplicate clusters, and flagged active memories, each
    section a page at a time (`cursors`: the section's cursor from the page's query string)."""
    at = {name: value for name in QUEUE_SECTIONS if (value := (cursors or {}).get(name))}
    return ReviewQueue(
        proposals=_section(
            client,
            tools,
            "memory_query",
            "memories",
            cursor=at.get("proposals"),
            status=["proposed"],
            limit=QUEUE_PAGE["proposals"],
        ),
        conflicts=_section(
            client,
            tools,
            "conflicts_list",
            "items",
            cursor=at.get("conflicts"),
            status="open",
            limit=QUEUE_PAGE["conflicts"],
        ),
        duplicates=_section(
            client,
            tools,
            "duplicates_list",
            "items",
            cursor=at.get("duplicates"),
            status="open",
            limit=QUEUE_PAGE["duplicates"],
        ),
        # Active memories someone flagged (memory_query's default states: filed or pending).
        flagged=_section(
            client,
            tools,
            "memory_query",
            "memories",
            cursor=at.get("flagged"),
            flagged=True,
            limit=QUEUE_PAGE["flagged"],
        ),
        may_review="memory_review" in tools,
        may_curate="conflict_resolve" in tools,
        cursors=at,
    )


@dataclass
class MemorySearch:
    """The memory browser's filters, as the query string carries them."""

    query: str = ""
    subject: str = ""
    kind: str = ""
    tags: str = ""
    created_by: str = ""
    statuses: list[str] = field(default_factory=list)
    as_of: str = ""
    known_at: str = ""
    cursor: str = ""

    @classmethod
    def from_query(cls, params: Mapping[str, str] | Any) -> MemorySearch:
        def get(name: str) -> str:
            return str(params.get(name) or "").strip()

        return cls(
            query=get("q"),
            subject=get("subject"),
            kind=get("kind"),
            tags=get("tags"),
            created_by=get("created_by"),
            statuses=[s for s in params.getlist("status") if s]
            if hasattr(params, "getlist")
            else [],
            as_of=get("as_of"),
            known_at=get("known_at"),
            cursor=get("cursor"),
        )

    def arguments(self) -> dict[str, Any]:
        """memory_query's arguments; the tool validates them and names a bad field."""
        arguments: dict[str, Any] = {"limit": 25}
        for name, value in (
            ("query", self.query),
            ("subject", self.subject),
            ("kind", self.kind),
            ("created_by", self.created_by),
            ("cursor", self.cursor),
        ):
            if value:
                arguments[name] = value
        tags = [t.strip() for t in self.tags.split(",") if t.strip()]
        if tags:
            arguments["tags"] = tags
        if self.statuses:
            arguments["status"] = self.statuses
        for name, value in (("as_of", self.as_of), ("known_at", self.known_at)):
            if value:
                arguments[name] = _instant(value)
        return arguments

    def next_page(self, cursor: str) -> list[tuple[str, str]]:
        """The query string of the next page: the same filters and the cursor."""
        pairs = [
            ("q", self.query),
            ("subject", self.subject),
            ("kind", self.kind),
            ("tags", self.tags),
            ("created_by", self.created_by),
            ("as_of", self.as_of),
            ("known_at", self.known_at),
        ]
        pairs += [("status", s) for s in self.statuses]
        return [(k, v) for k, v in pairs if v] + [("cursor", cursor)]


def _instant(value: str) -> str:
    """A `datetime-local` field has no zone: the console's times are UTC, so is its input.
    Anything that is not a date and time goes to the tool as typed, so its error quotes what
    the person wrote (not `yesterdayZ`)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        return value
    # A bare date is its midnight, UTC (pydantic reads `2026-02-01Z` as no date at all).
    return value + ("Z" if "T" in value or " " in value else "T00:00:00Z")


@dataclass
class Browse:
    memories: list[dict[str, Any]]
    next_query: list[tuple[str, str]] | None


def browse(client: ToolClient, search: MemorySearch) -> Browse:
    result = client.call("memory_query", search.arguments())
    cursor = result.get("next_cursor")
    return Browse(
        memories=list(result.get("memories", [])),
        next_query=search.next_page(cursor) if cursor else None,
    )


def version_chain(client: ToolClient, memory_id: str) -> list[dict[str, Any]]:
    """Every version of the memory, oldest first (memory_query `versions_of`)."""
    if not memory_id:
        return []
    try:
        result = client.call("memory_query", {"versions_of": memory_id, "limit": 100})
    except SignedOut:
        raise
    except ConsoleError as exc:
        if exc.status == 404:
            return []
        raise
    return list(result.get("memories", []))


@dataclass
class CostChart:
    """Spend against the budget, as bar widths (percent of the larger of the two)."""

    spent: float
    limit: float | None
    spent_pct: float
    limit_pct: float | None
    by_agent: list[tuple[str, float, float]]

    @property
    def over(self) -> bool:
        return self.limit is not None and self.spent > self.limit


@dataclass
class WorkOverview:
    handoffs: Section
    tasks: dict[str, Section]
    workflows: Section
    cost: CostChart | None
    cost_unavailable: str | None


def work_overview(client: ToolClient, tools: frozenset[str]) -> WorkOverview:
    """Open handoffs, tasks by status, workflows with their steps, the month's cost."""
    tasks = {
        status: _section(client, tools, "task.list", "tasks", status=status, limit=50)
        for status in TASK_STATUSES
    }
    cost, unavailable = _cost(client, tools)
    return WorkOverview(
        handoffs=_section(client, tools, "list_handoffs", "handoffs", limit=50),
        tasks=tasks,
        workflows=_section(client, tools, "workflow.list", "workflows", limit=20),
        cost=cost,
        cost_unavailable=unavailable,
    )


def _cost(client: ToolClient, tools: frozenset[str]) -> tuple[CostChart | None, str | None]:
    if "cost.budget" not in tools or "cost.summary" not in tools:
        return None, "This token may not call cost.budget and cost.summary."
    try:
        budget = client.call("cost.budget", {"period": "30d"})
        summary = client.call("cost.summary", {"period": "30d"})
    except SignedOut:
        raise
    except ConsoleError as exc:
        return None, exc.message
    line = budget.get("global") or {}
    spent = float(line.get("spent_usd") or 0.0)
    limit = line.get("limit_usd")
    scale = max(spent, float(limit or 0.0), 1e-9)
    agents = [(g["key"], float(g["total_usd"])) for g in summary.get("by_agent", [])]
    return (
        CostChart(
            spent=spent,
            limit=float(limit) if limit is not None else None,
            spent_pct=round(100 * spent / scale, 1),
            limit_pct=round(100 * float(limit) / scale, 1) if limit is not None else None,
            by_agent=[(key, usd, round(100 * usd / scale, 1)) for key, usd in agents],
        ),
        None,
    )
