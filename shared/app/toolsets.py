"""The toolsets: named sets of tools a connection picks by URL (docs/toolsets.md).

Every tool is in at least one toolset (tests/unit/test_toolsets.py). `core` is what `/mcp`
serves the token `cairn serve` prints: what a general agent needs to remember, recall, search,
hand work off and claim it, within 32 KiB of `tools/list`. The seed-shaped sets (`hoard`,
`verbs`, `hippo`, `nullblock`) are exactly one seed's tools, for a client written against it.
"""

from __future__ import annotations

from typing import Final

from shared.auth.contexts import AGENT_TOOLS
from shared.protocol.toolsets import ALL, Toolset, Toolsets

CORE: Final = "core"

_MEMORY_ADVANCED: Final = (
    "memory_write",
    "memory_query",
    "memory_retract",
    "memory_supersede",
    "memory_propose",
    "memory_review",
    "conflicts_list",
    "conflict_resolve",
    "duplicates_list",
    "duplicate_resolve",
)
# The engram CRUD tools (the agent context's preset), then the user profile.
_ENGRAMS: Final = (*AGENT_TOOLS, "user_profile_get", "user_profile_update")
_PERSONA_SESSIONS: Final = tuple(
    f"{persona}_{verb}"
    for persona, verbs in (
        (
            "hecate",
            (
                "new_session",
                "list_sessions",
                "resume_session",
                "delete_session",
                "remember",
                "pin_engram",
                "unpin_engram",
                "cleanup",
                "set_model",
            ),
        ),
        ("moros", ("remember", "pin_engram", "unpin_engram", "cleanup", "set_model")),
    )
    for verb in verbs
)
_SEARCH: Final = ("search", "get", "get_chunk")
_SYNC: Final = ("sync", "sync_status", "sync_run", "embeddings_build", "inbox_put")
_HANDOFFS: Final = ("store_handoff", "list_handoffs", "claim_handoff")
_AGENTS: Final = (
    "agent.register",
    "agent.heartbeat",
    "agent.capabilities",
    "agent.list",
    "agent.deregister",
)
_TASKS: Final = (
    "task.create",
    "task.poll",
    "task.claim",
    "task.start",
    "task.complete",
    "task.fail",
    "task.cancel",
    "task.delegate",
    "task.get",
    "task.list",
)
_ARTIFACTS_EVENTS_COSTS: Final = (
    "artifact.put",
    "artifact.get",
    "artifact.list",
    "event.publish",
    "event.poll",
    "cost.report",
    "cost.summary",
    "cost.budget",
)
_WORKFLOWS: Final = (
    "workflow.create",
    "workflow.start",
    "workflow.pause",
    "workflow.resume",
    "workflow.cancel",
    "workflow.status",
    "workflow.get",
    "workflow.list",
)
_KNOWLEDGE: Final = (
    "ask",
    "search_knowledge",
    "search_hybrid",
    "search_events",
    "get_entities",
    "list_projects",
    "get_context",
    "get_ci_status",
    "get_lessons",
)

TOOLSETS: Final = Toolsets(
    [
        Toolset(
            CORE,
            "recall, remember, search, hand off and claim work",
            (
                "recall",
                "remember",
                "flag_memory",
                "search",
                "get",
                "search_references",
                *_HANDOFFS,
                "task.create",
                "task.poll",
                "task.claim",
                "task.complete",
                "task.fail",
            ),
        ),
        Toolset(
            "memory",
            "the seven verbs' memory and Hoard's keyed memory",
            ("recall", "remember", "flag_memory", "memory_put", "memory_get", "memory_search"),
        ),
        Toolset(
            "structured-memory",
            "typed, time-aware memory: propose, review, supersede, conflicts, duplicates",
            _MEMORY_ADVANCED,
        ),
        Toolset("engrams", "NullBlock's engrams and user profiles", _ENGRAMS),
        Toolset("search", "documents and references", (*_SEARCH, "search_references")),
        Toolset("handoffs", "hand unfinished work to another agent", _HANDOFFS),
        Toolset(
            "orchestrator",
            "agents, tasks, artifacts, events and costs",
            (*_AGENTS, "agent.names", *_TASKS, *_ARTIFACTS_EVENTS_COSTS),
        ),
        Toolset("workflows", "multi-step workflows run as tasks", _WORKFLOWS),
        Toolset(
            "knowledge",
            "what the team did: events, sessions, CI, lessons",
            (*_KNOWLEDGE, "ingest_events"),
        ),
        Toolset(
            "sessions",
            "persona chat sessions and their memory",
            (*_PERSONA_SESSIONS, "session_append_messages", "session_pin"),
        ),
        Toolset(
            "sync",
            "connectors, their schedules and the inbox",
            (*_SYNC, "sync_schedule_set", "sync_schedule_get", "sync_schedule_delete"),
        ),
        Toolset(
            "admin",
            "review and curation, sync schedules, agent registration, budgets",
            (
                "memory_review",
                "conflicts_list",
                "conflict_resolve",
                "duplicates_list",
                "duplicate_resolve",
                "embeddings_build",
                "sync_schedule_set",
                "sync_schedule_get",
                "sync_schedule_delete",
                "agent.register",
                "agent.deregister",
                "cost.budget",
            ),
        ),
        # Seed-shaped endpoints: one seed's tools, names and schemas as it gives them.
        Toolset(
            "hoard",
            "seed 000/001 (Hoard)",
            (
                *_SEARCH,
                "memory_get",
                "memory_put",
                "memory_search",
                *_SYNC,
                *_AGENTS,
                *_TASKS,
                *_ARTIFACTS_EVENTS_COSTS,
                *_WORKFLOWS,
                *_MEMORY_ADVANCED,
            ),
            listed=False,
        ),
        Toolset(
            "verbs",
            "seed 002 (the seven verbs)",
            ("recall", "remember", "flag_memory", *_HANDOFFS, "search_references"),
            listed=False,
        ),
        Toolset("hippo", "seed 003 (hippo)", _KNOWLEDGE, listed=False),
        Toolset("nullblock", "seed 004 (NullBlock)", (*_ENGRAMS, *_PERSONA_SESSIONS), listed=False),
    ]
)
SEED_ENDPOINTS: Final = ("hoard", "verbs", "hippo", "nullblock")
# What the banner of `cairn serve` and the docs offer besides `/mcp`: (URL segment, what it is).
ENDPOINTS_SHOWN: Final = (
    (ALL, "every tool the token may call"),
    *((name, f"{TOOLSETS.by_name[name].summary}, its tools exactly") for name in SEED_ENDPOINTS),
)
