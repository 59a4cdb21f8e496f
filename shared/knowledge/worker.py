"""The enrichment worker's body: an SQS batch of `{"team", "event_ids"}` messages in, the
messages that failed out (`batchItemFailures`), so only those are retried and, after the
queue's receive limit, land in the dead-letter queue."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("cairn.knowledge")


def handle_batch(
    event: dict[str, Any], enrich: Callable[[str, Sequence[str]], object]
) -> dict[str, list[dict[str, str]]]:
    """Enrich each message's events; report the message ids that failed.

    >>> handle_batch({"Records": []}, lambda team, ids: None)
    {'batchItemFailures': []}
    """
    failures: list[dict[str, str]] = []
    for record in event.get("Records", []):
        message_id = str(record.get("messageId", ""))
        try:
            body = json.loads(record["body"])
            team, ids = str(body["team"]), [str(i) for i in body["event_ids"]]
            enrich(team, ids)
        except Exception:
            # A FIFO group stops at its first failure: later messages of the team wait for it.
            logger.exception("enrichment message failed", extra={"message_id": message_id})
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}


def run_ci_pull(
    targets: dict[str, tuple[str, list[str]]],
    pull: Callable[[str, str, str], int],
) -> dict[str, int]:
    """The scheduled pull: `pull(team, repo, token)` for each configured repo; a repo that
    fails is logged and the others still run. Returns runs recorded per `team/repo`."""
    recorded: dict[str, int] = {}
    for team, (token, repos) in targets.items():
        for repo in repos:
            try:
                recorded[f"{team}/{repo}"] = pull(team, repo, token)
            except Exception:
                logger.exception("CI pull failed", extra={"team": team, "repo": repo})
    return recorded
