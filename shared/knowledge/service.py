"""The knowledge service: ingest events and answer seed 003's nine tools, within one team.

Filters follow seed 003: `since` (strict `<digits><m|h|d>`, refused when malformed — cairn's
one documented difference), `project` a substring of a linked cwd or git repo, `source` one of
shell / claude / browser / workflow (claude covering every agentic harness), `branch` exact
(ignored for browser events, which have none), all combined with AND; `limit` clamped.
Probe events are stored but never shown: the enricher skips them and every read drops them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from typing import Any

from shared.auth.principal import Principal
from shared.knowledge.enrich import hostname
from shared.knowledge.extractive import extractive_answer
from shared.knowledge.filters import Filters, check_source, clamp_limit, parse_since
from shared.knowledge.models import (
    ENTITY_TYPES,
    AskInput,
    CiRun,
    EntityResult,
    Event,
    EventIn,
    EventResult,
    GetContextInput,
    GetEntitiesInput,
    IngestEventsOutput,
    KnowledgeNode,
    Lesson,
    NodeResult,
    ProjectResult,
    SearchEventsInput,
    SearchHybridInput,
    SearchKnowledgeInput,
)
from shared.knowledge.ports import (
    ChatModel,
    EnrichmentQueue,
    EntityStore,
    EventStore,
    LessonStore,
    ModelUnavailable,
    NodeIndex,
    NodeStore,
)
from shared.knowledge.redaction import redact
from shared.tools.errors import InvalidArgument, ToolError


class BadSignature(ToolError):
    """A webhook delivery whose X-Hub-Signature-256 does not verify (HTTP 401)."""

    code = "unauthorized"
    status = 401


CONTEXT_EMBED_CHARS = 600
# How many index hits a filtered query reads to still fill `limit` after the filters.
FILTERED_DEPTH = 500
# `ask` answers from sources at least this relevant (the calibrated score, 0–1): the hybrid
# engine's evidence line keeps loosely related nodes (SciFact needs it to), which `ask` listed
# at 0 % and 1 %. Chosen on the train half of the labelled questions (`cairn bench knowledge`).
ASK_MIN_RELEVANCE = 0.34
# `recent` mode orders by time; its score is the recency, halving every week.
RECENCY_HALF_LIFE_MS = 7 * 24 * 3_600_000
_WORD = re.compile(r"[a-z0-9_./-]{2,}")
_STOP = frozenset(
    {
        "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "with", "what", "which",
        "was", "were", "is", "are", "did", "do", "does", "how", "why", "when", "who", "i", "we",
        "my", "our", "it", "that", "this", "be", "been", "from", "at", "by", "as", "about", "any",
    }
)  # fmt: skip

ModelFactory = Callable[[], ChatModel | None]


def _redacted(event: EventIn, now_ms: int) -> tuple[Event, bool]:
    """The event as it will be stored: secrets redacted from every free-text field."""
    values = event.model_dump()
    changed = False
    for name in ("command", "summary_text", "url", "title", "cwd", "repo_root"):
        original = values.get(name)
        if original is not None:
            values[name] = redact(original)
            changed |= values[name] != original
    calls = [redact(c) for c in event.tool_calls]
    changed |= calls != event.tool_calls
    values["tool_calls"] = calls
    return Event.model_validate({**values, "ingested_at": now_ms}), changed


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def event_result(event: Event) -> EventResult:
    """Seed 003's per-source projection of an event into the common envelope."""
    if event.source == "shell":
        summary = event.command or ""
        # An event sent without its exit code says so, as workflow events say status=unknown.
        code = "unknown" if event.exit_code is None else event.exit_code
        detail = f"exit={code} duration={event.duration_ms or 0}ms"
    elif event.source == "claude":
        summary = event.summary_text or ""
        detail = f"messages={event.message_count or 0} tools={len(event.tool_calls)}"
    elif event.source == "browser":
        domain = hostname(event.url or "").removeprefix("www.")
        summary = f"{domain} — {event.title or event.url}"
        detail = f"dwell={event.dwell_ms or 0}ms scroll={event.scroll_pct or 0}%"
    else:
        summary = event.summary_text or ""
        detail = f"status={event.status or 'unknown'}"
    browser = event.source == "browser"
    return EventResult(
        id=event.id,
        source=event.source,
        timestamp=event.timestamp,
        summary=summary,
        cwd="" if browser else event.cwd or "",
        detail=detail,
        git_branch="" if browser else event.git_branch or "",
    )


def node_result(node: KnowledgeNode, score: float) -> NodeResult:
    return NodeResult(
        uuid=node.uuid,
        score=round(score, 4),
        summary=node.summary,
        intent=node.intent,
        outcome=node.outcome,
        tags=node.tags,
        embed_text=node.embed_text,
        cwd=node.cwd,
        git_branch=node.git_branch,
        captured_at=node.captured_at,
        linked_event_ids=node.linked_event_ids,
        linked_claude_session_ids=node.linked_claude_session_ids,
        linked_browser_event_ids=node.linked_browser_event_ids,
    )


@dataclass(eq=False)
class KnowledgeService:
    """Seed 003 over the knowledge stores, the hybrid engine, a queue and an optional model."""

    _: KW_ONLY
    events: EventStore
    nodes: NodeStore
    entities: EntityStore
    lessons: LessonStore
    index: NodeIndex
    queue: EnrichmentQueue
    model: ModelFactory = lambda: None
    webhook_secrets: Callable[[str], str | None] = lambda team: None
    clock: Callable[[], float] = time.time

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _filters(self, since: str, project: str, source: str, branch: str = "") -> Filters:
        return Filters(
            since_ms=parse_since(since, self.now_ms()),
            project=project,
            source=check_source(source),
            branch=branch,
        )

    # ------------------------------------------------------------------ ingest

    def ingest(self, principal: Principal, events: Sequence[EventIn]) -> IngestEventsOutput:
        """Store new events (redacted first), skip known ids, queue the new ones for enrichment."""
        ids = [e.id for e in events]
        if len(set(ids)) != len(ids):
            repeated = next(i for i in ids if ids.count(i) > 1)
            raise InvalidArgument(
                f"`events`: id {repeated!r} appears twice in one batch; give each event its own id",
                field="events",
            )
        now = self.now_ms()
        redacted = [_redacted(e, now) for e in events]
        stored = self.events.put_new(principal.team, [e for e, _ in redacted])
        if stored:
            self.queue.submit(principal.team, stored)
        new = set(stored)
        return IngestEventsOutput(
            accepted=len(stored),
            duplicates=len(events) - len(stored),
            redacted=sum(1 for e, changed in redacted if changed and e.id in new),
        )

    # ------------------------------------------------------------------ events and projects

    def search_events(self, principal: Principal, asked: SearchEventsInput) -> list[EventResult]:
        """Raw events matching every filter, newest first."""
        # `all` is valid here (and named by the error): checked before the common filters.
        source = check_source(asked.source, allow_all=True)
        wanted = self._filters(asked.since, asked.project, source, asked.branch)
        needle = asked.query.lower()
        found: list[EventResult] = []
        for event in self.events.recent(principal.team, since_ms=wanted.since_ms):
            if event.probe_tag is not None:
                continue
            if wanted.source and event.source != wanted.source:
                continue
            if not wanted.project_matches(event.places):
                continue
            if event.source != "browser" and not wanted.branch_matches(event.git_branch):
                continue
            result = event_result(event)
            haystack = f"{result.summary}\n{event.url or ''}".lower()
            if needle and needle not in haystack:
                continue
            found.append(result)
            if len(found) >= clamp_limit(asked.limit):
                break
        return found

    def list_projects(self, principal: Principal, *, limit: int = 50) -> list[ProjectResult]:
        return [
            ProjectResult(git_repo=p.git_repo, cwd_root=p.cwd_root, last_seen=p.last_seen)
            for p in self.events.projects(principal.team, clamp_limit(limit))
        ]

    def get_entities(self, principal: Principal, asked: GetEntitiesInput) -> list[EntityResult]:
        entity_type, project = asked.type, asked.project
        if entity_type and entity_type not in ENTITY_TYPES:
            raise InvalidArgument(
                f"`type` must be one of {', '.join(ENTITY_TYPES)} or empty (got {entity_type!r})",
                field="type",
            )
        since_ms = parse_since(asked.since, self.now_ms())
        needle = asked.query.lower()
        found: list[EntityResult] = []
        for entity in self.entities.entities(principal.team, entity_type=entity_type):
            if entity.last_seen < since_ms:
                continue
            if (
                needle
                and needle not in entity.name.lower()
                and needle not in entity.canonical.lower()
            ):
                continue
            if project and not any(project in p for p in entity.places):
                continue
            found.append(
                EntityResult.model_validate(
                    entity.model_dump(include=set(EntityResult.model_fields))
                )
            )
            if len(found) >= clamp_limit(asked.limit):
                break
        return found

    # ------------------------------------------------------------------ knowledge nodes

    def _keep(self, node: KnowledgeNode, wanted: Filters, entity: str = "") -> bool:
        if node.captured_at < wanted.since_ms:
            return False
        if wanted.source and wanted.source not in node.sources:
            return False
        if not wanted.project_matches([*node.places, node.cwd, node.git_repo]):
            return False
        if (
            wanted.branch
            and wanted.branch not in node.branches
            and node.git_branch != wanted.branch
        ):
            return False
        return not entity or any(e.split(":", 1)[1] == entity for e in node.entities)

    def _ranked(
        self, team: str, query: str, mode: str, limit: int, wanted: Filters, entity: str = ""
    ) -> list[tuple[KnowledgeNode, float]]:
        filtered = bool(
            wanted.since_ms or wanted.project or wanted.source or wanted.branch or entity
        )
        if mode == "recent":
            recent = self.nodes.recent_nodes(team, since_ms=wanted.since_ms)
            kept = [n for n in recent if self._keep(n, wanted, entity)][:limit]
            now = self.now_ms()
            # Newest first, so the recency never rises down the list (equal times, equal scores).
            return [(n, 0.5 ** (max(0, now - n.captured_at) / RECENCY_HALF_LIFE_MS)) for n in kept]
        depth = FILTERED_DEPTH if filtered else limit
        hits = self.index.query(team, query, mode, depth)
        position = {uuid: rank for rank, (uuid, _) in enumerate(hits)}
        scores = dict(hits)
        nodes = self.nodes.get_nodes(team, [uuid for uuid, _ in hits])
        kept = [n for n in nodes if self._keep(n, wanted, entity)]
        # By score, best first (the index already answers so; the store's read order is not
        # part of its contract), equal scores in the index's order.
        kept.sort(key=lambda n: (-scores[n.uuid], position[n.uuid]))
        return [(n, scores[n.uuid]) for n in kept[:limit]]

    def _lexical(
        self, team: str, query: str, limit: int, wanted: Filters
    ) -> list[tuple[KnowledgeNode, float]]:
        """Seed 003's lexical path: substring matching over summary and embed_text."""
        terms = _terms(query) or [query.lower()]
        scored: list[tuple[KnowledgeNode, float]] = []
        for node in self.nodes.recent_nodes(team, since_ms=wanted.since_ms):
            if not self._keep(node, wanted):
                continue
            text = f"{node.summary}\n{node.embed_text}".lower()
            matched = sum(1 for t in terms if t in text)
            if matched:
                scored.append((node, matched / len(terms)))
        scored.sort(key=lambda pair: (-pair[1], -pair[0].captured_at))
        return scored[:limit]

    def search_knowledge(
        self, principal: Principal, asked: SearchKnowledgeInput
    ) -> list[NodeResult]:
        """Semantic without filters; lexical when asked or when any filter is given."""
        wanted = self._filters(asked.since, asked.project, asked.source, asked.branch)
        limit = clamp_limit(asked.limit)
        filtered = bool(wanted.since_ms or wanted.project or wanted.source or wanted.branch)
        if asked.mode == "lexical" or filtered:
            pairs = self._lexical(principal.team, asked.query, limit, wanted)
        else:
            pairs = self._ranked(principal.team, asked.query, "semantic", limit, wanted)
        return [node_result(n, s) for n, s in pairs]

    def search_hybrid(self, principal: Principal, asked: SearchHybridInput) -> list[NodeResult]:
        wanted = self._filters(asked.since, asked.project, asked.source, asked.branch)
        limit = clamp_limit(asked.limit)
        pairs = self._ranked(principal.team, asked.query, asked.mode, limit, wanted, asked.entity)
        return [node_result(n, s) for n, s in pairs]

    def get_context(self, principal: Principal, asked: GetContextInput) -> str:
        """Seed 003's Markdown context block (hybrid retrieval, 600-character embed text)."""
        wanted = self._filters(asked.since, asked.project, asked.source)
        query = asked.query
        pairs = self._ranked(principal.team, query, "hybrid", clamp_limit(asked.limit), wanted)
        lines = [f"# Hippo context for: {query}", ""]
        if not pairs:
            lines.append("_No relevant knowledge found._")
            return "\n".join(lines)
        for number, (node, score, repeats) in enumerate(_folded(pairs), start=1):
            embed = _detail(node)
            if len(embed) > CONTEXT_EMBED_CHARS:
                embed = embed[:CONTEXT_EMBED_CHARS] + "…"
            lines += [
                f"## [{number}] {node.summary} (score: {score:.2f})",
                f"- **Outcome:** {node.outcome}",
                f"- **CWD:** `{node.cwd}`",
                f"- **Branch:** `{node.git_branch}`",
                f"- **When:** {_iso(node.captured_at)}",
                f"- **uuid:** `{node.uuid}`",
            ]
            if repeats:
                again = ", ".join(f"{_iso(r.captured_at)} `{r.uuid}`" for r in repeats)
                lines.append(f"- **Same session again:** {again}")
            lines += ["", embed, ""] if embed else [""]
        return "\n".join(lines).rstrip() + "\n"

    # ------------------------------------------------------------------ ask

    def ask_sources(
        self, principal: Principal, asked: AskInput, min_relevance: float = ASK_MIN_RELEVANCE
    ) -> list[tuple[KnowledgeNode, float]]:
        """The sources `ask` answers from, numbered as its `Sources:` block numbers them: the
        hybrid ranking, best score first, without those below `min_relevance`, and a session
        repeated word for word once."""
        blocks = self._ask_blocks(principal.team, asked, min_relevance)
        return [(node, score) for node, score, _ in blocks]

    def _ask_blocks(
        self, team: str, asked: AskInput, min_relevance: float
    ) -> list[tuple[KnowledgeNode, float, list[KnowledgeNode]]]:
        wanted = self._filters(asked.since, asked.project, asked.source, asked.branch)
        ranked = self._ranked(team, asked.question, "hybrid", clamp_limit(asked.limit), wanted)
        return _folded([(node, score) for node, score in ranked if score >= min_relevance])

    def ask(self, principal: Principal, asked: AskInput) -> str:
        """The answer, then a `Sources:` block; an `Error: …` string when the model fails."""
        question = asked.question
        blocks = self._ask_blocks(principal.team, asked, ASK_MIN_RELEVANCE)
        if not blocks:
            return f"No relevant knowledge found for: {question}\n\nSources:\n(none)\n"
        pairs = [(node, score) for node, score, _ in blocks]
        sources = _sources_block(blocks)
        model = self.model()
        if model is None:
            return f"{extractive_answer(question, pairs)}\n\n{sources}"
        try:
            answer = model.complete(_SYSTEM_PROMPT, _prompt(question, pairs)).strip()
        except ModelUnavailable as exc:
            return f"Error: the model {model.name!r} is unreachable or misconfigured: {exc}"
        return f"{answer}\n\n{sources}"

    # ------------------------------------------------------------------ CI and lessons

    def get_ci_status(
        self, principal: Principal, *, repo: str, sha: str | None = None, branch: str | None = None
    ) -> dict[str, Any]:
        run = self.lessons.latest_run(principal.team, repo, sha=sha, branch=branch)
        return {} if run is None else run.model_dump(mode="json", exclude={"updated_at"})

    def get_lessons(
        self,
        principal: Principal,
        *,
        repo: str | None = None,
        path: str | None = None,
        tool: str | None = None,
        limit: int = 10,
    ) -> list[Lesson]:
        found: list[Lesson] = []
        for lesson in self.lessons.lessons(principal.team):
            if repo and lesson.repo != repo:
                continue
            if tool and lesson.tool != tool:
                continue
            if path is not None and not path.startswith(lesson.path_prefix):
                continue
            found.append(lesson)
        return found[: clamp_limit(limit)]

    def github_webhook(
        self, team: str, *, event: str, signature: str | None, body: bytes
    ) -> tuple[CiRun | None, int]:
        """Verify a delivery against the team's secret, then record its run; nothing is stored
        (and `BadSignature` raised) when the team has no secret or the signature is wrong."""
        import json

        from shared.knowledge.github import run_from_webhook, signature_valid

        secret = self.webhook_secrets(team)
        if secret is None or not signature_valid(secret, body, signature):
            raise BadSignature(
                "X-Hub-Signature-256 does not match the team's webhook secret", field="signature"
            )
        try:
            payload = json.loads(body)
        except ValueError as exc:
            raise InvalidArgument("the webhook body is not JSON", field="body") from exc
        run = run_from_webhook(event, payload) if isinstance(payload, dict) else None
        if run is None or not run.repo or not run.run_id:
            return None, 0
        lessons = self.record_ci_run(team, run)
        return run, len(lessons)

    def pull_ci(self, team: str, repo: str, fetch: Callable[[str], Any]) -> int:
        """Record the repo's latest Actions runs (the scheduled pull); returns how many."""
        from shared.knowledge.github import pull_runs

        runs = pull_runs(fetch, repo)
        for run in runs:
            self.record_ci_run(team, run)
        return len(runs)

    def record_ci_run(self, team: str, run: CiRun) -> list[Lesson]:
        """Store a run; each failure annotation counts toward its lesson."""
        from shared.knowledge.github import lesson_candidates, merge_runs

        stored = self.lessons.get_run(team, run.repo, run.run_id)
        run = merge_runs(stored, run).model_copy(update={"updated_at": self.now_ms()})
        self.lessons.put_run(team, run)
        return [self.lessons.record_occurrence(team, o) for o in lesson_candidates(run)]


def _sources_block(blocks: Iterable[tuple[KnowledgeNode, float, list[KnowledgeNode]]]) -> str:
    lines = ["Sources:"]
    for number, (node, score, repeats) in enumerate(blocks, start=1):
        summary = node.summary if len(node.summary) <= 120 else node.summary[:119] + "…"
        branch = f" ({node.git_branch})" if node.git_branch else ""
        lines.append(f"{number}. [{round(score * 100)}%] {summary}")
        lines.append(f"   {node.cwd or '-'}{branch} — {_day(node.captured_at)}")
        if repeats:
            days = ", ".join(_day(r.captured_at) for r in repeats)
            lines.append(f"   the same session again: {days}")
    return "\n".join(lines)


def _detail(node: KnowledgeNode) -> str:
    """A node's embed text without its summary (the heading says it already)."""
    text = node.embed_text
    if text.startswith(node.summary):
        text = text[len(node.summary) :].lstrip()
    return text


def _folded(
    pairs: Sequence[tuple[KnowledgeNode, float]],
) -> list[tuple[KnowledgeNode, float, list[KnowledgeNode]]]:
    """Each node once, and a node that repeats an earlier one word for word (the same
    commands run again another day) listed under it rather than as a block of its own."""
    blocks: list[tuple[KnowledgeNode, float, list[KnowledgeNode]]] = []
    first: dict[tuple[str, str], int] = {}
    seen: set[str] = set()
    for node, score in pairs:
        if node.uuid in seen:
            continue
        seen.add(node.uuid)
        same = (node.summary, _detail(node))
        if same in first:
            blocks[first[same]][2].append(node)
            continue
        first[same] = len(blocks)
        blocks.append((node, score, []))
    return blocks


_SYSTEM_PROMPT = (
    "You answer a developer's question about their team's recent work from numbered knowledge "
    "notes (shell sessions, agent sessions, browser visits, CI runs). Answer briefly and only "
    "from the notes; cite notes as [n]. If the notes do not answer it, say so."
)


def _prompt(question: str, pairs: Sequence[tuple[KnowledgeNode, float]]) -> str:
    notes = []
    for number, (node, _) in enumerate(pairs, start=1):
        embed = node.embed_text[:CONTEXT_EMBED_CHARS]
        notes.append(
            f"[{number}] {node.summary}\noutcome: {node.outcome}; cwd: {node.cwd}; "
            f"branch: {node.git_branch}; when: {_iso(node.captured_at)}\n{embed}"
        )
    return "Notes:\n\n" + "\n\n".join(notes) + f"\n\nQuestion: {question}"
