"""The knowledge tool group: seed 003's nine tools, and `ingest_events` for capture.

Where seed 003 returns a list or a string, the text content block carries exactly that value;
`structuredContent` wraps it in an object (`results`, `events`, `entities`, `projects`,
`lessons`, `answer`, `context`, `run`), since MCP requires an object there.

A tool's input fields are its service method's keyword arguments, passed on as they are
(`**args.model_dump()`); `get_entities` renames `type`, which would shadow the builtin.
"""

from __future__ import annotations

from shared.config import names
from shared.knowledge.group import GROUP
from shared.knowledge.models import (
    AskInput,
    AskOutput,
    GetCiStatusInput,
    GetCiStatusOutput,
    GetContextInput,
    GetContextOutput,
    GetEntitiesInput,
    GetEntitiesOutput,
    GetLessonsInput,
    GetLessonsOutput,
    GithubWebhookInput,
    GithubWebhookOutput,
    IngestEventsInput,
    IngestEventsOutput,
    ListProjectsInput,
    ListProjectsOutput,
    SearchEventsInput,
    SearchEventsOutput,
    SearchHybridInput,
    SearchKnowledgeInput,
    SearchResultsOutput,
)
from shared.knowledge.service import KnowledgeService
from shared.tools.registry import READ_ONLY, Annotations, ToolContext, ToolGroup

SCOPE = "knowledge"
INGEST_SCOPE = "ingest"
# Re-sending an event id is a no-op: idempotent, and nothing stored is changed.
INGEST = Annotations(read_only=False, destructive=False, idempotent=True, open_world=False)
# `ask` may call a configured model outside cairn.
ASK = Annotations(read_only=True, destructive=False, idempotent=True, open_world=True)


@GROUP.tool(
    name="ask",
    title="Ask the team's knowledge",
    description=(
        "Natural-language question → synthesized answer with cited sources, from the team's "
        "captured work (shell sessions, agent sessions, browser visits, CI, workflows). Returns "
        "Markdown: the answer, then a Sources: block (score, summary, cwd, branch, date). With "
        "no model configured the answer is extractive. Returns a string starting with 'Error:' "
        "when the configured model is unreachable."
    ),
    scopes=(SCOPE,),
    annotations=ASK,
    text_field="answer",
)
def ask(ctx: ToolContext[KnowledgeService], args: AskInput) -> AskOutput:
    return AskOutput(answer=ctx.service.ask(ctx.principal, args))


@GROUP.tool(
    name="search_knowledge",
    title="Search knowledge nodes",
    description=(
        "Search enriched knowledge nodes; no synthesis. Semantic by default; lexical "
        "(substring over summary and embed_text) when asked or when any filter is applied."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="results",
)
def search_knowledge(
    ctx: ToolContext[KnowledgeService], args: SearchKnowledgeInput
) -> SearchResultsOutput:
    return SearchResultsOutput(results=ctx.service.search_knowledge(ctx.principal, args))


@GROUP.tool(
    name="search_hybrid",
    title="Hybrid search over knowledge nodes",
    description=(
        "Hybrid retrieval (BM25 + vectors, RRF fusion) over knowledge nodes, with filter "
        "pushdown and an optional canonical `entity`. Modes: hybrid, semantic, lexical, recent."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="results",
)
def search_hybrid(
    ctx: ToolContext[KnowledgeService], args: SearchHybridInput
) -> SearchResultsOutput:
    return SearchResultsOutput(results=ctx.service.search_hybrid(ctx.principal, args))


@GROUP.tool(
    name="search_events",
    title="Search raw events",
    description=(
        "Search raw events — shell commands, agent sessions, browser visits, workflow events — "
        "not enriched summaries. Substring match; newest first."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="events",
)
def search_events(
    ctx: ToolContext[KnowledgeService], args: SearchEventsInput
) -> SearchEventsOutput:
    return SearchEventsOutput(events=ctx.service.search_events(ctx.principal, args))


@GROUP.tool(
    name="get_entities",
    title="Browse entities",
    description=(
        "The entities knowledge graph: project, file, tool, service, repo, host, person, "
        "concept, domain, env_var; filter by `type`, name substring, project and window."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="entities",
)
def get_entities(ctx: ToolContext[KnowledgeService], args: GetEntitiesInput) -> GetEntitiesOutput:
    return GetEntitiesOutput(entities=ctx.service.get_entities(ctx.principal, args))


@GROUP.tool(
    name="list_projects",
    title="List projects",
    description="Distinct projects (git repo, cwd root) in the corpus, most recent first.",
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="projects",
)
def list_projects(
    ctx: ToolContext[KnowledgeService], args: ListProjectsInput
) -> ListProjectsOutput:
    return ListProjectsOutput(
        projects=ctx.service.list_projects(ctx.principal, **args.model_dump())
    )


@GROUP.tool(
    name="get_context",
    title="Context block for a prompt",
    description=(
        "Hybrid retrieval rendered as a Markdown context block, ready to paste into another "
        "agent's prompt."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="context",
)
def get_context(ctx: ToolContext[KnowledgeService], args: GetContextInput) -> GetContextOutput:
    return GetContextOutput(context=ctx.service.get_context(ctx.principal, args))


@GROUP.tool(
    name="get_ci_status",
    title="CI status",
    description=(
        "Structured CI status of the most recent GitHub Actions run of `repo` (for `sha`, else "
        "`branch`): status, conclusion, jobs with annotations, times, html_url; {} when none."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="run",
)
def get_ci_status(ctx: ToolContext[KnowledgeService], args: GetCiStatusInput) -> GetCiStatusOutput:
    return GetCiStatusOutput(run=ctx.service.get_ci_status(ctx.principal, **args.model_dump()))


@GROUP.tool(
    name="get_lessons",
    title="Lessons from recurring CI failures",
    description=(
        "Distilled past-mistake lessons: CI failures seen in at least 2 runs, by repo, tool "
        "and path prefix. Pre-flight before editing a failure-prone area."
    ),
    scopes=(SCOPE,),
    annotations=READ_ONLY,
    text_field="lessons",
)
def get_lessons(ctx: ToolContext[KnowledgeService], args: GetLessonsInput) -> GetLessonsOutput:
    return GetLessonsOutput(lessons=ctx.service.get_lessons(ctx.principal, **args.model_dump()))


@GROUP.tool(
    name="ingest_events",
    title="Ingest captured events",
    description=(
        "Send captured events (shell commands, agent sessions, browser visits, workflow "
        "events), up to 500 per call. Idempotent by event id; secrets are redacted before "
        "anything is stored; enrichment into knowledge nodes follows in the background."
    ),
    scopes=(INGEST_SCOPE,),
    annotations=INGEST,
)
def ingest_events(
    ctx: ToolContext[KnowledgeService], args: IngestEventsInput
) -> IngestEventsOutput:
    return ctx.service.ingest(ctx.principal, args.events)


# Tools no MCP client sees: what the knowledge function does for the HTTP routes (GitHub's
# webhook). Not in the catalog; the knowledge Lambda serves them beside GROUP's tools.
# Served with the group's own service (`function_group`).
HOOKS: ToolGroup[KnowledgeService] = ToolGroup(name=names.GROUP_KNOWLEDGE)


@HOOKS.tool(
    name="github_webhook",
    title="GitHub webhook delivery",
    description="Record a verified workflow_run / workflow_job delivery for the team.",
    scopes=(INGEST_SCOPE,),
    annotations=INGEST,
)
def github_webhook(
    ctx: ToolContext[KnowledgeService], args: GithubWebhookInput
) -> GithubWebhookOutput:
    import base64

    run, counted = ctx.service.github_webhook(
        ctx.principal.team,
        event=args.event,
        signature=args.signature,
        body=base64.b64decode(args.body_base64),
    )
    return GithubWebhookOutput(
        stored=run is not None, run_id=run.run_id if run else None, lessons_counted=counted
    )


def function_group(group: ToolGroup[KnowledgeService]) -> ToolGroup[KnowledgeService]:
    """What the knowledge function executes: `group`'s MCP tools (as the composition root
    loaded it) and the route-only hooks."""
    return ToolGroup(
        name=group.name,
        build_service=lambda: group.build_service(),
        tools={**group.tools, **HOOKS.tools},
    )
