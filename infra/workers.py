"""Workers: what triggers the functions no tool call reaches.

The curator files the memories `remember` leaves `pending`: the memories table's stream feeds
it through an event source mapping that

- only invokes it for inserts and modifications of a memory record (`MEMORY#…`) whose new
  image is `pending` (to file it) or filed (no `status`: to look for conflicts and duplicates
  around it) — Lambda event filters, so other writes cost no invocation;
- takes batches of `CURATOR_BATCH_SIZE` from the newest record on (`LATEST`: a new stack has
  nothing pending, and a memory left pending earlier is curated on its next write that keeps
  it pending);
- lets the handler report the records it failed on (`ReportBatchItemFailures`), bisects a
  failing batch and retries `CURATOR_RETRIES` times;
- then sends the failed records' stream coordinates (shard, sequence numbers, never the item)
  to an encrypted, TLS-only dead-letter queue kept 14 days, which `Observability` alarms on.

The functions themselves (runtime, role, environment) are built by `infra.functions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.bedrock import allow_invoke_model
from infra.config import DeployConfig
from infra.data import Data
from infra.functions import CURATOR
from infra.queues import dead_letter_queue
from infra.streams import add_stream_mapping, record_filter
from shared.config import names
from shared.config.names import Env

CURATOR_BATCH_SIZE: Final = 10
CURATOR_RETRIES: Final = 3
MEMORY_SORT_KEY_PREFIX: Final = "MEMORY#"
PENDING: Final = "pending"


class Workers(Construct):
    """`dead_letter_queues[name]` and `stream_functions[name]` of the stream-fed workers."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        data: Data,
        workers: Mapping[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        curator = workers[CURATOR]
        if config.curator_model:
            self._allow_curator_model(curator, config.curator_model)
        dead_letters = self._dead_letter_queue(CURATOR)
        add_stream_mapping(
            curator,
            data.table(names.TABLE_MEMORIES),
            starting_position=lambda_.StartingPosition.LATEST,
            batch_size=CURATOR_BATCH_SIZE,
            retries=CURATOR_RETRIES,
            dead_letters=dead_letters,
            filters=[
                record_filter(
                    lambda_.FilterRule.or_("INSERT", "MODIFY"),
                    MEMORY_SORT_KEY_PREFIX,
                    {"status": {"S": lambda_.FilterRule.is_equal(PENDING)}},
                ),
                # A memory written filed (the default status, left out of the item):
                # checked for conflicts and duplicates (shared.memory.detection).
                record_filter(
                    lambda_.FilterRule.or_("INSERT", "MODIFY"),
                    MEMORY_SORT_KEY_PREFIX,
                    {"status": lambda_.FilterRule.not_exists()},
                ),
            ],
        )
        self.dead_letter_queues: dict[str, sqs.Queue] = {CURATOR: dead_letters}
        self.stream_functions: dict[str, lambda_.IFunction] = {CURATOR: curator}

    def _allow_curator_model(self, curator: lambda_.Function, model_id: str) -> None:
        """The curator asks this Bedrock model (Converse) whether two memories contradict:
        its id in the environment, InvokeModel on that foundation model only."""
        curator.add_environment(Env.CURATOR_MODEL_ID, model_id)
        allow_invoke_model(curator, model_id)

    def _dead_letter_queue(self, worker: str) -> sqs.Queue:
        return dead_letter_queue(
            self,
            f"{worker.capitalize()}DeadLetters",
            removal_policy=self._config.removal_policy,
            holds=f"the {worker}'s stream mapping (its on-failure destination)",
        )
