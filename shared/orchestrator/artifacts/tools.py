"""Seed 000's artifact.* tools on the orchestrator group."""

from __future__ import annotations

from shared.orchestrator.artifacts.models import (
    ArtifactGetInput,
    ArtifactGetOutput,
    ArtifactListInput,
    ArtifactListOutput,
    ArtifactOutput,
    ArtifactPutInput,
)
from shared.orchestrator.group import GROUP
from shared.orchestrator.service import Orchestrator
from shared.tools.registry import APPEND, READ_ONLY, ToolContext

# Each call stores a new artifact under a new id: not idempotent; nothing existing changes.
# Closed world: a content_url is recorded, never fetched.
PUT = APPEND
# artifact.get and artifact.list read records and bytes only: READ_ONLY.


@GROUP.tool(
    name="artifact.put",
    title="Store an artifact",
    description="Store an artifact for a task of your team: exactly one of content (text), "
    "content_base64 (bytes) or content_url (a reference cairn never fetches), at most "
    "5 MiB. Each call stores a new artifact (art_…) with its size and SHA-256; the "
    "artifact takes the task's workflow_id.",
    scopes=("artifact.write",),
    annotations=PUT,
)
def artifact_put(ctx: ToolContext[Orchestrator], args: ArtifactPutInput) -> ArtifactOutput:
    artifact = ctx.service.artifacts.put(ctx.principal, **args.model_dump())
    return ArtifactOutput(artifact=artifact)


@GROUP.tool(
    name="artifact.get",
    title="Get an artifact",
    description="Retrieve an artifact's record; with include_content also its bytes, as "
    'content (UTF-8 text/* or JSON) or content_base64. {"artifact": null} when your team '
    "has none with that id.",
    scopes=("artifact.read",),
    annotations=READ_ONLY,
)
def artifact_get(ctx: ToolContext[Orchestrator], args: ArtifactGetInput) -> ArtifactGetOutput:
    artifact = ctx.service.artifacts.get(
        ctx.principal, args.artifact_id, include_content=args.include_content
    )
    return ArtifactGetOutput(artifact=artifact)


@GROUP.tool(
    name="artifact.list",
    title="List artifacts",
    description="List the artifacts of a task or a workflow (give task_id, workflow_id or "
    "both), newest first, without their content.",
    scopes=("artifact.read",),
    annotations=READ_ONLY,
)
def artifact_list(ctx: ToolContext[Orchestrator], args: ArtifactListInput) -> ArtifactListOutput:
    return ArtifactListOutput(artifacts=ctx.service.artifacts.list_artifacts(ctx.principal, args))
