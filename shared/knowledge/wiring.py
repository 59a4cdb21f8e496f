"""Builds the knowledge group on the configured storage (the one place its adapters are chosen).

Its own settings (`KnowledgeSettings`) are read once from the environment here, beside the
process-wide `Settings`: the model, the enrichment queue and the webhook secrets are the
knowledge group's alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict

from shared import runtime
from shared.config import names
from shared.knowledge.enrich import Enricher
from shared.knowledge.ports import ChatModel, EnrichmentQueue, KnowledgeStores, NodeIndex
from shared.knowledge.service import KnowledgeService, ModelFactory
from shared.storage.backends import Adapters

if TYPE_CHECKING:
    from shared.search.service import SearchService

ENV_MODEL: Final = "CAIRN_KNOWLEDGE_MODEL"
ENV_QUEUE_URL: Final = "CAIRN_KNOWLEDGE_QUEUE_URL"
ENV_WEBHOOK_SECRET_ARN: Final = "CAIRN_GITHUB_WEBHOOK_SECRET_ARN"
WEBHOOK_SECRETS_FILE: Final = "github-webhook-secrets.json"
ORCHESTRATOR: Final = "orchestrator"  # the caller id of the orchestrator's events (no token)


class KnowledgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str | None = None
    queue_url: str | None = None
    webhook_secret_arn: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KnowledgeSettings:
        env = os.environ if environ is None else environ
        return cls(
            model=env.get(ENV_MODEL) or None,
            queue_url=env.get(ENV_QUEUE_URL) or None,
            webhook_secret_arn=env.get(ENV_WEBHOOK_SECRET_ARN) or None,
        )


@runtime.cached
def knowledge_settings() -> KnowledgeSettings:
    return KnowledgeSettings.from_env()


STORES = Adapters[KnowledgeStores].named(
    sqlite="shared.knowledge.adapters.sqlite:SqliteKnowledgeStores",
    dynamodb="shared.knowledge.adapters.dynamodb:DynamoKnowledgeStores",
    table=names.TABLE_KNOWLEDGE,
)


@runtime.cached
def build_stores() -> KnowledgeStores:
    """One object serving the four store ports (they share one table / database)."""
    return runtime.backend().build(STORES)


def build_enricher(search: Callable[[], SearchService]) -> Enricher:
    """The enricher, indexing knowledge nodes through `search` (the search group's service,
    passed by the composition root: `shared.app.wiring`)."""
    from shared.knowledge.adapters.search_index import SearchNodeIndex

    stores = build_stores()
    return Enricher(stores, stores, stores, SearchNodeIndex(search), model=build_model)


@runtime.cached
def build_model() -> ChatModel | None:
    from shared.knowledge.adapters.models import model_from_setting

    return model_from_setting(knowledge_settings().model, runtime.settings().region)


def build_queue(enricher: Enricher) -> EnrichmentQueue:
    from shared.knowledge.adapters.queues import BackgroundQueue, SqsQueue, UnconfiguredQueue

    configured = knowledge_settings()
    if configured.queue_url:
        import boto3

        return SqsQueue(
            boto3.client("sqs", region_name=runtime.settings().region), configured.queue_url
        )
    if runtime.backend().name == "sqlite":
        background = BackgroundQueue(enricher.enrich)
        runtime.on_reconfigure(background.stop)
        return background
    # DynamoDB storage is AWS (the stack sets the queue) or a test, which wires its own queue.
    return UnconfiguredQueue()


def build_knowledge_service(search: Callable[[], SearchService]) -> KnowledgeService:
    """The knowledge group's service, indexing through `search` (as `build_enricher`)."""
    from shared.knowledge.adapters.search_index import SearchNodeIndex

    stores = build_stores()
    enricher = build_enricher(search)
    return KnowledgeService(
        events=stores,
        nodes=stores,
        entities=stores,
        lessons=stores,
        index=SearchNodeIndex(search),
        queue=build_queue(enricher),
        model=build_model,
        webhook_secrets=webhook_secret,
    )


def build_inline_service(
    stores: KnowledgeStores,
    index: NodeIndex,
    *,
    clock: Callable[[], float],
    model: ModelFactory = lambda: None,
) -> KnowledgeService:
    """A service on `stores` and `index` that enriches what it ingests before it answers (no
    queue, no worker): for benchmarks and tests, at the time `clock` gives."""
    from shared.knowledge.adapters.queues import InlineQueue

    enricher = Enricher(stores, stores, stores, index)
    return KnowledgeService(
        events=stores,
        nodes=stores,
        entities=stores,
        lessons=stores,
        index=index,
        queue=InlineQueue(enricher.enrich),
        model=model,
        clock=clock,
    )


def _secret_document() -> dict[str, object]:
    configured = knowledge_settings()
    if configured.webhook_secret_arn:
        import boto3

        client = boto3.client("secretsmanager", region_name=runtime.settings().region)
        value = client.get_secret_value(SecretId=configured.webhook_secret_arn)["SecretString"]
        document: dict[str, object] = json.loads(value)
        return document
    data_dir = runtime.settings().data_dir
    path = Path(data_dir) / WEBHOOK_SECRETS_FILE if data_dir else None
    if path is None or not path.exists():
        return {}
    stored: dict[str, object] = json.loads(path.read_text())
    return stored


def ci_pull_targets() -> dict[str, tuple[str, list[str]]]:
    """team → (GitHub token, repos) of the scheduled pull: the secret's `pull` entry,
    `{"pull": {"<team>": {"token": "...", "repos": ["owner/repo"]}}}`."""
    pull = _secret_document().get("pull")
    targets: dict[str, tuple[str, list[str]]] = {}
    if isinstance(pull, dict):
        for team, entry in pull.items():
            if isinstance(entry, dict) and entry.get("token") and entry.get("repos"):
                targets[str(team)] = (str(entry["token"]), [str(r) for r in entry["repos"]])
    return targets


def forget_webhook_secret(team: str) -> bool:
    """Remove `team`'s GitHub webhook secret and scheduled-pull entry (a team's erasure), from
    the same document `webhook_secret` reads; whether it held any."""
    document = _secret_document()
    pull = document.get("pull")
    held = team in document or (isinstance(pull, dict) and team in pull)
    if not held:
        return False
    document.pop(team, None)
    if isinstance(pull, dict):
        pull.pop(team, None)
    text = json.dumps(document, indent=2, sort_keys=True)
    configured = knowledge_settings()
    if configured.webhook_secret_arn:
        import boto3

        client = boto3.client("secretsmanager", region_name=runtime.settings().region)
        client.put_secret_value(SecretId=configured.webhook_secret_arn, SecretString=text)
        return True
    data_dir = runtime.settings().data_dir
    assert data_dir is not None  # the document was read from there
    path = Path(data_dir) / WEBHOOK_SECRETS_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.chmod(0o600)
    os.replace(partial, path)
    return True


def webhook_secret(team: str) -> str | None:
    """The team's GitHub webhook secret: Secrets Manager in AWS (a JSON object team → secret),
    else `github-webhook-secrets.json` in the data folder."""
    secret = _secret_document().get(team)
    return secret if isinstance(secret, str) and secret else None


def record_workflow_event(
    service: KnowledgeService,
    team: str,
    *,
    event_id: str,
    timestamp_ms: int,
    summary: str,
    status: str,
    workflow_id: str,
    kind: str,
) -> None:
    """Capture one orchestrator outcome (a task or workflow step that finished) as a
    `workflow`-source event of the team; idempotent by `event_id`."""
    from shared.auth.principal import Principal
    from shared.knowledge.models import EventIn

    caller = Principal(
        team=team, token_id=ORCHESTRATOR, token_name=ORCHESTRATOR, scopes=frozenset({"ingest"})
    )
    event = EventIn(
        id=event_id[:128],
        source="workflow",
        timestamp=timestamp_ms,
        summary_text=summary[:16_000],
        status=status,
        session_id=workflow_id[:256],
        kind=kind,
    )
    service.ingest(caller, [event])
