"""What each console page shows, gathered through tool calls (never from a store).

Each function takes the signed-in `ToolClient` and the tools its token may call, calls the
tools the page needs and returns plain data for the templates. A section whose tool the token
may not call is marked unavailable instead of failing the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from shared.console.client import ConsoleError, SignedOut, ToolClient

BACK_PAGES = frozenset({"review", "memories", "memory", "work"})
MEMORY_KINDS = ("fact", "decision", "preference", "procedure", "observation")
MEMORY_STATUSES = ("active", "proposed", "rejected", "superseded", "retracted")
TASK_STATUSES = ("pending", "claimed", "running", "completed", "failed", "cancelled")
# The review queue's sections, one shown at a time (`review?section=<name>`), each paged by
# `cursor` (the tool's next_cursor, passed back unchanged).
QUEUE_SECTIONS = ("proposals", "conflicts", "duplicates", "flagged")
QUEUE_TITLES = {
    "proposals": "Proposals",
    "conflicts": "Conflicts",
    "duplicates": "Duplicates",
    "flagged": "Flags",
}
QUEUE_PAGE = dict.fromkeys(QUEUE_SECTIONS, 10)
# A section is counted up to this many items (pages of 100); beyond, the count reads "500+".
COUNT_CAP = 500
COUNT_PAGE = 100
# The scope that lets a token call each tool the console uses, for the one line that says
# what would allow a control or a list this token does not get (tests/console checks it
# against the catalog). `tools/list` says what the token may call; this says why not.
TOOL_SCOPES = {
    "memory_query": "memory.read",
    "conflicts_list": "memory.read",
    "duplicates_list": "memory.read",
    "memory_review": "memory.review",
    "conflict_resolve": "memory.write",
    "duplicate_resolve": "memory.write",
    "memory_retract": "memory.write",
    "memory_supersede": "memory.write",
    "list_handoffs": "handoff",
    "task.list": "task.read",
    "workflow.list": "workflow.read",
    "cost.budget": "cost.read",
    "cost.summary": "cost.read",
    "sync_status": "sync",
}


def needs(tool: str, doing: str) -> str:
    """The one line shown instead of a control or a list the token may not use."""
    return f"{doing} needs the {TOOL_SCOPES[tool]} scope, which this token does not have."


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
    reading: str = "Reading this",
    **arguments: Any,
) -> Section:
    if tool not in tools:
        return Section(unavailable=needs(tool, reading))
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


# -- names -----------------------------------------------------------------------------------

NAMES_BATCH = 500  # agent.names' limit per call


def actor_names(client: ToolClient, tools: frozenset[str], actors: Iterable[str]) -> dict[str, str]:
    """What people call the actors a page shows (agent ids, `token:<id>`), in one call of
    agent.names per 500; {} when the token may not call it (the page shows the ids)."""
    wanted = sorted({a for a in actors if a})
    if not wanted or "agent.names" not in tools:
        return {}
    names: dict[str, str] = {}
    for start in range(0, len(wanted), NAMES_BATCH):
        try:
            result = client.call("agent.names", {"ids": wanted[start : start + NAMES_BATCH]})
        except SignedOut:
            raise
        except ConsoleError:
            return names  # names are a courtesy: the page still shows every id
        names.update(result.get("names") or {})
    return names


def memory_actors(memories: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Everyone a memory card names: its author, who flagged it, who did what in its history."""
    for memory in memories:
        yield str(memory.get("created_by") or "")
        for flag in memory.get("flags") or []:
            yield str(flag.get("agent_id") or "")
        for event in memory.get("history") or []:
            yield str(event.get("by") or "")


# -- the review queue ------------------------------------------------------------------------


@dataclass
class QueueCount:
    """A section's link in the queue's navigation: its count (None: the token may not read
    it), `capped` when there are more than `COUNT_CAP`."""

    name: str
    title: str
    count: int | None
    capped: bool = False

    @property
    def label(self) -> str:
        if self.count is None:
            return "–"
        return f"{self.count}+" if self.capped else str(self.count)


# How each section reads: the tool, the key of its list, its arguments.
_QUEUE_READS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "proposals": ("memory_query", "memories", {"status": ["proposed"]}),
    "conflicts": ("conflicts_list", "items", {"status": "open"}),
    "duplicates": ("duplicates_list", "items", {"status": "open"}),
    # Active memories someone flagged (memory_query's default states: filed or pending).
    "flagged": ("memory_query", "memories", {"flagged": True}),
}
# What a person does in each section, the tool it takes, and the words for the one line
# shown instead when the token may not.
QUEUE_ACTIONS = {
    "proposals": ("memory_review", "Approving or rejecting a proposal"),
    "conflicts": ("conflict_resolve", "Resolving a conflict"),
    "duplicates": ("duplicate_resolve", "Merging or dismissing duplicates"),
    "flagged": ("memory_retract", "Retracting or correcting a flagged memory"),
}


def _count(client: ToolClient, tools: frozenset[str], section: str) -> QueueCount:
    tool, key, arguments = _QUEUE_READS[section]
    title = QUEUE_TITLES[section]
    if tool not in tools:
        return QueueCount(section, title, None)
    total, cursor = 0, None
    while True:
        try:
            result = client.call(
                tool, {**arguments, "limit": COUNT_PAGE, **({"cursor": cursor} if cursor else {})}
            )
        except SignedOut:
            raise
        except ConsoleError:
            return QueueCount(section, title, None)
        total += len(result.get(key, []))
        cursor = result.get("next_cursor")
        if not cursor:
            return QueueCount(section, title, total)
        if total >= COUNT_CAP:
            return QueueCount(section, title, total, capped=True)


@dataclass
class ReviewQueue:
    """One section of the queue, a page of it, and every section's count for the links."""

    section: str
    counts: list[QueueCount]
    page: Section
    # Where this page starts in the section (0 on the first page), for "11–20 of 35".
    start: int
    # None when the token may use the section's control, else the line saying what would.
    action_refused: str | None
    names: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return QUEUE_TITLES[self.section]

    @property
    def count(self) -> QueueCount:
        return next(c for c in self.counts if c.name == self.section)

    def link(self, section: str, cursor: str | None = None, start: int = 0) -> str:
        """This queue's URL for `section` at `cursor` (None: its first page)."""
        pairs = [("section", section)]
        if cursor:
            pairs += [("cursor", cursor), ("start", str(start))]
        return "review?" + urlencode(pairs)

    @property
    def next_link(self) -> str | None:
        if not self.page.next_cursor:
            return None
        return self.link(self.section, self.page.next_cursor, self.start + len(self.page.items))

    def anchor(self, item: Mapping[str, Any]) -> str:
        """The id of an item's card: `proposal-<memory id>`, `conflict-<finding id>`, …"""
        if self.section in {"proposals", "flagged"}:
            return f"{'proposal' if self.section == 'proposals' else 'flagged'}-{item['id']}"
        return f"{self.section[:-1]}-{item['finding']['id']}"


def review_queue(
    client: ToolClient, tools: frozenset[str], params: Mapping[str, str] | None = None
) -> ReviewQueue:
    """The queue's section `params["section"]` (default: the first with something in it), a
    page at a time (`cursor`, `start`), with every section's count and the actors' names."""
    params = params or {}
    counts = [_count(client, tools, name) for name in QUEUE_SECTIONS]
    section = str(params.get("section") or "")
    if section not in QUEUE_SECTIONS:
        section = next((c.name for c in counts if c.count), QUEUE_SECTIONS[0])
    cursor = str(params.get("cursor") or "") or None
    try:
        start = max(0, int(str(params.get("start") or 0))) if cursor else 0
    except ValueError:
        start = 0
    tool, key, arguments = _QUEUE_READS[section]
    page = _section(
        client,
        tools,
        tool,
        key,
        cursor=cursor,
        reading=f"Reading {QUEUE_TITLES[section].lower()}",
        **arguments,
        limit=QUEUE_PAGE[section],
    )
    action, doing = QUEUE_ACTIONS[section]
    memories = (
        page.items
        if section in {"proposals", "flagged"}
        else [m for item in page.items for m in item.get("memories", [])]
    )
    return ReviewQueue(
        section=section,
        counts=counts,
        page=page,
        start=start,
        action_refused=None if action in tools else needs(action, doing),
        names=actor_names(client, tools, memory_actors(memories)),
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
    names: dict[str, str] = field(default_factory=dict)


def browse(client: ToolClient, tools: frozenset[str], search: MemorySearch) -> Browse:
    result = client.call("memory_query", search.arguments())
    cursor = result.get("next_cursor")
    memories = list(result.get("memories", []))
    return Browse(
        memories=memories,
        next_query=search.next_page(cursor) if cursor else None,
        names=actor_names(client, tools, memory_actors(memories)),
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
    # (agent key, USD, bar width in percent), largest spend first.
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
    names: dict[str, str] = field(default_factory=dict)


def work_overview(client: ToolClient, tools: frozenset[str]) -> WorkOverview:
    """Open handoffs, tasks by status, workflows with their steps, the month's cost, and the
    names of everyone they mention (one agent.names call)."""
    tasks = {
        status: _section(
            client, tools, "task.list", "tasks", reading="Reading tasks", status=status, limit=50
        )
        for status in TASK_STATUSES
    }
    cost, unavailable = _cost(client, tools)
    handoffs = _section(
        client, tools, "list_handoffs", "handoffs", reading="Reading handoffs", limit=50
    )
    workflows = _section(
        client, tools, "workflow.list", "workflows", reading="Reading workflows", limit=20
    )
    actors = [str(h.get("created_by") or "") for h in handoffs.items]
    actors += [str(t.get(k) or "") for s in tasks.values() for t in s.items for k in _TASK_ACTORS]
    for flow in workflows.items:
        execution = flow.get("execution") or {}
        actors.append(str(execution.get("started_by") or ""))
        actors += [str(step.get("agent") or "") for step in execution.get("steps") or []]
    actors += [key for key, _, _ in cost.by_agent] if cost else []
    return WorkOverview(
        handoffs=handoffs,
        tasks=tasks,
        workflows=workflows,
        cost=cost,
        cost_unavailable=unavailable,
        names=actor_names(client, tools, actors),
    )


_TASK_ACTORS = ("claimed_by", "created_by")


def _cost(client: ToolClient, tools: frozenset[str]) -> tuple[CostChart | None, str | None]:
    if "cost.budget" not in tools or "cost.summary" not in tools:
        return None, needs("cost.summary", "Reading costs")
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
    agents = sorted(
        ((g["key"], float(g["total_usd"])) for g in summary.get("by_agent", [])),
        key=lambda agent: -agent[1],
    )
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


def sync_connectors(client: ToolClient, tools: frozenset[str]) -> Section:
    """The team's connectors and document sources as `sync_status` reports them: name, kind,
    entities, last sync, the last sync's counts and error (never a setting or a secret: the
    tool answers none)."""
    return _section(client, tools, "sync_status", "connectors", reading="Reading sync status")
