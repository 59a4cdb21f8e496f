"""Knowledge (seed 003, hippo): captured events, knowledge nodes, entities, CI runs and lessons,
and the inputs and outputs of the nine tools plus `ingest_events`.

Times are epoch milliseconds, as in seed 003's return shapes. Ids are strings: hippo's integer
row ids are cairn's client-chosen event ids (idempotency keys) and random node ids.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Source = Literal["shell", "claude", "browser", "workflow"]
Outcome = Literal["success", "partial", "failure", "unknown"]
EntityType = Literal[
    "project", "file", "tool", "service", "repo", "host", "person", "concept", "domain", "env_var"
]
ENTITY_TYPES: tuple[str, ...] = (
    "project",
    "file",
    "tool",
    "service",
    "repo",
    "host",
    "person",
    "concept",
    "domain",
    "env_var",
)

# Size limits of one event (the whole batch is bounded by the tool's and route's body limit).
MAX_BATCH = 500
MAX_TEXT = 16_000
MAX_FIELD = 1_024
MAX_TOOL_CALLS = 500
# 2100-01-01 in epoch ms: anything later is a unit mistake (seconds or microseconds).
MAX_TIMESTAMP_MS = 4_102_444_800_000
MIN_TIMESTAMP_MS = 946_684_800_000  # 2000-01-01: a timestamp in seconds lands before this


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventIn(_Input):
    """One captured event, as a hook, importer or agent sends it."""

    id: str = Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._:@/+-]+$",
        description="Client-chosen unique id (the idempotency key): sending it again is a no-op.",
    )
    source: Source = Field(description="shell, claude (agent sessions), browser or workflow.")
    timestamp: int = Field(
        ge=MIN_TIMESTAMP_MS,
        le=MAX_TIMESTAMP_MS,
        description="When it happened, epoch milliseconds.",
    )
    command: str | None = Field(default=None, max_length=MAX_TEXT, description="shell: the command")
    exit_code: int | None = Field(default=None, description="shell: the exit status")
    duration_ms: int | None = Field(default=None, ge=0, description="shell: run time in ms")
    cwd: str | None = Field(default=None, max_length=MAX_FIELD)
    repo_root: str | None = Field(
        default=None, max_length=MAX_FIELD, description="The git work tree's top folder."
    )
    git_repo: str | None = Field(default=None, max_length=300, description="owner/repo")
    git_branch: str | None = Field(default=None, max_length=300)
    host: str | None = Field(default=None, max_length=255)
    kind: str | None = Field(
        default=None,
        max_length=64,
        description="Finer kind within the source, e.g. claude-tool for an agent's tool call "
        "captured as a shell event, task or workflow for orchestrator events.",
    )
    harness: str | None = Field(
        default=None, max_length=64, description="claude: claude-code, codex, cursor, opencode"
    )
    session_id: str | None = Field(default=None, max_length=256)
    summary_text: str | None = Field(
        default=None, max_length=MAX_TEXT, description="claude/workflow: what happened"
    )
    message_count: int | None = Field(default=None, ge=0)
    tool_calls: list[str] = Field(
        default_factory=list, max_length=MAX_TOOL_CALLS, description="claude: tools called"
    )
    url: str | None = Field(default=None, max_length=4_096, description="browser: the page")
    title: str | None = Field(default=None, max_length=MAX_FIELD, description="browser: title")
    dwell_ms: int | None = Field(default=None, ge=0)
    scroll_pct: int | None = Field(default=None, ge=0, le=100)
    status: str | None = Field(default=None, max_length=64, description="workflow: outcome")
    probe_tag: str | None = Field(
        default=None,
        max_length=64,
        description="Marks a synthetic probe event: stored, never shown by any tool.",
    )

    @model_validator(mode="after")
    def _needs_its_text(self) -> EventIn:
        needed = {
            "shell": "command",
            "claude": "summary_text",
            "browser": "url",
            "workflow": "summary_text",
        }[self.source]
        value = getattr(self, needed)
        if not value or not str(value).strip():
            raise ValueError(f"a {self.source} event needs `{needed}`")
        return self


class Event(EventIn):
    """A stored event: what was sent (redacted) plus when cairn received it."""

    model_config = ConfigDict(extra="ignore")

    ingested_at: int = 0

    @property
    def places(self) -> list[str]:
        """Where it happened, for seed 003's `project` filter (cwd and git repo)."""
        return [p for p in (self.cwd, self.repo_root, self.git_repo) if p]


class KnowledgeNode(BaseModel):
    """An enriched unit of work: one session of events (or one agent session, visit, run)."""

    uuid: str
    summary: str
    intent: str = ""
    outcome: Outcome = "unknown"
    tags: list[str] = Field(default_factory=list)
    embed_text: str = ""
    cwd: str = ""
    git_branch: str = ""
    git_repo: str = ""
    captured_at: int = 0
    started_at: int = 0
    linked_event_ids: list[str] = Field(default_factory=list)
    linked_claude_session_ids: list[str] = Field(default_factory=list)
    linked_browser_event_ids: list[str] = Field(default_factory=list)
    # For the filters: every source, place (cwd / repo root / git repo) and branch linked.
    sources: list[str] = Field(default_factory=list)
    places: list[str] = Field(default_factory=list)
    branches: list[str] = Field(default_factory=list)
    # "type:canonical" of each linked entity (search_hybrid's `entity` argument).
    entities: list[str] = Field(default_factory=list)
    # The sessionizer's key: events with this key within the gap join this node.
    session_key: str = ""
    # Every event of the session (an agent session node links session ids, not event ids).
    member_event_ids: list[str] = Field(default_factory=list)
    enriched_by: str = "deterministic"


class EntitySighting(BaseModel):
    """One entity seen at one time, in one place."""

    type: EntityType
    name: str
    canonical: str
    seen_at: int
    place: str = ""


class Entity(BaseModel):
    type: EntityType
    name: str
    canonical: str
    first_seen: int
    last_seen: int
    places: list[str] = Field(default_factory=list)


class CiAnnotation(BaseModel):
    path: str = ""
    line: int | None = None
    level: str = "failure"
    message: str = ""
    tool: str = ""
    rule_id: str = ""


class CiJob(BaseModel):
    id: str
    name: str
    status: str = ""
    conclusion: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    html_url: str | None = None
    annotations: list[CiAnnotation] = Field(default_factory=list)


class CiRun(BaseModel):
    """A GitHub Actions workflow run and its jobs, as the webhook or the scheduled pull saw it."""

    repo: str
    run_id: str
    workflow: str = ""
    sha: str = ""
    branch: str = ""
    status: str = ""
    conclusion: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    html_url: str | None = None
    jobs: list[CiJob] = Field(default_factory=list)
    updated_at: int = 0


class LessonKey(BaseModel):
    repo: str
    tool: str
    rule_id: str
    path_prefix: str

    @property
    def key(self) -> str:
        return "\x1f".join((self.repo, self.tool, self.rule_id, self.path_prefix))


class Lesson(BaseModel):
    """Seed 003's `Lesson`; a candidate until `occurrences` reaches 2."""

    id: str
    repo: str
    tool: str
    rule_id: str
    path_prefix: str
    summary: str
    fix_hint: str = ""
    occurrences: int
    first_seen_at: int
    last_seen_at: int


class LessonOccurrence(BaseModel):
    """One failure of the lesson `key` a CI run shows; its `id` counts once however often the
    run is delivered."""

    key: LessonKey
    id: str
    summary: str
    fix_hint: str
    seen_at: int

    def first_lesson(self) -> Lesson:
        """The lesson before any occurrence is counted (its id from the key)."""
        import hashlib

        return Lesson(
            id="lsn_" + hashlib.sha256(self.key.key.encode()).hexdigest()[:16],
            repo=self.key.repo,
            tool=self.key.tool,
            rule_id=self.key.rule_id,
            path_prefix=self.key.path_prefix,
            summary=self.summary,
            fix_hint=self.fix_hint,
            occurrences=0,
            first_seen_at=self.seen_at,
            last_seen_at=self.seen_at,
        )

    def counted_in(self, lesson: Lesson, *, first: bool) -> Lesson:
        """`lesson` with this occurrence counted (`first`: the lesson was not stored yet)."""
        return lesson.model_copy(
            update={
                "occurrences": lesson.occurrences + 1,
                "summary": self.summary or lesson.summary,
                "fix_hint": self.fix_hint or lesson.fix_hint,
                "first_seen_at": self.seen_at if first else min(lesson.first_seen_at, self.seen_at),
                "last_seen_at": max(lesson.last_seen_at, self.seen_at),
            }
        )


class Project(BaseModel):
    git_repo: str
    cwd_root: str
    last_seen: int


# --------------------------------------------------------------------------- tool inputs


class _Filtered(_Input):
    project: str = Field(
        default="",
        max_length=MAX_FIELD,
        description="Substring match on the cwd or git repo of the linked events/sessions.",
    )
    since: str = Field(
        default="",
        max_length=32,
        description="Time window <digits><unit>, unit m/h/d ('30m', '24h', '7d'); empty: all.",
    )
    source: str = Field(
        default="",
        max_length=16,
        description="shell, claude (every agentic harness), browser or workflow; empty: all.",
    )


class AskInput(_Filtered):
    question: str = Field(min_length=1, max_length=4_096, description="The question.")
    limit: int = Field(default=10, ge=1, description="Knowledge nodes retrieved as context.")
    branch: str = Field(default="", max_length=300, description="Exact git branch.")


class SearchKnowledgeInput(_Filtered):
    query: str = Field(min_length=1, max_length=4_096, description="Search query text.")
    mode: Literal["semantic", "lexical"] = Field(
        default="semantic",
        description="semantic (vectors) or lexical (substring over summary and embed_text); "
        "any filter forces lexical.",
    )
    limit: int = Field(default=10, ge=1)
    branch: str = Field(default="", max_length=300, description="Exact git branch.")


class SearchHybridInput(_Filtered):
    query: str = Field(min_length=1, max_length=4_096, description="Search query text.")
    mode: Literal["hybrid", "semantic", "lexical", "recent"] = Field(
        default="hybrid", description="hybrid (RRF fusion), semantic, lexical or recent."
    )
    limit: int = Field(default=10, ge=1)
    branch: str = Field(default="", max_length=300, description="Exact git branch.")
    entity: str = Field(
        default="",
        max_length=MAX_FIELD,
        description="A canonical entity name that must be among the node's entities.",
    )


class SearchEventsInput(_Input):
    query: str = Field(
        default="",
        max_length=4_096,
        description="Substring of the command, agent session summary or browser title/url.",
    )
    source: str = Field(default="all", description="shell, claude, browser, workflow or all.")
    since: str = Field(default="", max_length=32, description="<digits><m|h|d>; empty: all.")
    project: str = Field(default="", max_length=MAX_FIELD)
    branch: str = Field(default="", max_length=300)
    limit: int = Field(default=20, ge=1)


class GetEntitiesInput(_Input):
    type: str = Field(default="", description="One entity type, or empty for all.")
    query: str = Field(default="", max_length=MAX_FIELD, description="Substring of the name.")
    limit: int = Field(default=50, ge=1)
    project: str = Field(default="", max_length=MAX_FIELD)
    since: str = Field(default="", max_length=32, description="Window on last_seen.")


class ListProjectsInput(_Input):
    limit: int = Field(default=50, ge=1)


class GetContextInput(_Filtered):
    query: str = Field(min_length=1, max_length=4_096)
    limit: int = Field(default=10, ge=1)


class GetCiStatusInput(_Input):
    repo: str = Field(
        min_length=3, max_length=300, pattern=r"^[^/\s]+/[^/\s]+$", description="owner/repo"
    )
    sha: str | None = Field(default=None, max_length=64, description="Commit SHA (or prefix).")
    branch: str | None = Field(default=None, max_length=300, description="Used without a sha.")


class GetLessonsInput(_Input):
    repo: str | None = Field(default=None, max_length=300, description="owner/repo")
    path: str | None = Field(
        default=None, max_length=MAX_FIELD, description="Lessons whose path_prefix prefixes it."
    )
    tool: str | None = Field(default=None, max_length=64, description="ruff, clippy, …")
    limit: int = Field(default=10, ge=1)


class IngestEventsInput(_Input):
    events: list[EventIn] = Field(
        min_length=1, max_length=MAX_BATCH, description="Up to 500 events per call."
    )


# --------------------------------------------------------------------------- tool outputs


class NodeResult(BaseModel):
    """Seed 003's SearchResult."""

    uuid: str
    score: float
    summary: str
    intent: str
    outcome: Outcome
    tags: list[str]
    embed_text: str
    cwd: str
    git_branch: str
    captured_at: int
    linked_event_ids: list[str]
    linked_claude_session_ids: list[str]
    linked_browser_event_ids: list[str]


class EventResult(BaseModel):
    """Seed 003's normalized event envelope."""

    id: str
    source: Source
    timestamp: int
    summary: str
    cwd: str
    detail: str
    git_branch: str


class EntityResult(BaseModel):
    type: EntityType
    name: str
    canonical: str
    first_seen: int
    last_seen: int


class ProjectResult(BaseModel):
    git_repo: str
    cwd_root: str
    last_seen: int


class AskOutput(BaseModel):
    """Seed 003 returns a string: the text block carries `answer` alone."""

    answer: str


class SearchResultsOutput(BaseModel):
    """Seed 003 returns a list: the text block carries `results` alone."""

    results: list[NodeResult]


class SearchEventsOutput(BaseModel):
    events: list[EventResult]


class GetEntitiesOutput(BaseModel):
    entities: list[EntityResult]


class ListProjectsOutput(BaseModel):
    projects: list[ProjectResult]


class GetContextOutput(BaseModel):
    context: str


class GetCiStatusOutput(BaseModel):
    """The most recent matching run, or `{}` when none."""

    run: dict[str, Any]


class GetLessonsOutput(BaseModel):
    lessons: list[Lesson]


class IngestEventsOutput(BaseModel):
    accepted: int = Field(description="Events stored by this call.")
    duplicates: int = Field(description="Events whose id was already stored (not changed).")
    redacted: int = Field(description="Events in which a secret was redacted before storing.")


class GithubWebhookInput(_Input):
    """A GitHub delivery as the HTTP route received it (the team comes from the route)."""

    event: str = Field(max_length=64, description="The X-GitHub-Event header.")
    signature: str | None = Field(default=None, max_length=200)
    body_base64: str = Field(max_length=2_000_000, description="The raw body, base64.")


class GithubWebhookOutput(BaseModel):
    stored: bool = Field(description="A workflow_run / workflow_job delivery was recorded.")
    run_id: str | None = None
    lessons_counted: int = 0
