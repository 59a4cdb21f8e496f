"""Domain events: the stack's EventBridge bus and the publisher that feeds it.

The services append each domain event to the team's event log in the coordination table (the
outbox, `shared.domain_events`); the table's stream feeds the event publisher through an event
source mapping that

- only invokes it for inserted event-log items (`EVENT#…`) whose type is one of cairn's
  (`cairn.…`) — Lambda event filters, so task writes and agents' own events cost no invoke;
- reads from the oldest record kept (`TRIM_HORIZON`: an event written while the mapping was
  being created is still forwarded) in batches of `PUBLISHER_BATCH_SIZE`, PutEvents' limit;
- lets the handler report the first record EventBridge kept refusing
  (`ReportBatchItemFailures`), bisects a failing batch and retries `PUBLISHER_RETRIES` times,
  then sends the records' stream coordinates to an encrypted dead-letter queue (14 days),
  which `Observability` alarms on.

A bus of the stack's own rather than the account's default bus: a team's rules see cairn's
events of this stage only (dev and prod never cross), the bus is deleted with a developer
stack (in prod too: it holds no data, and its fixed name must be free for the next stack), and
its name is a stack output. PutEvents on it is granted to the publisher only; an
archive keeps its events (`ARCHIVE_DAYS`) so a consumer that lost some can replay them.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import DeployConfig
from infra.data import Data
from infra.queues import dead_letter_queue
from infra.streams import add_stream_mapping, record_filter
from shared.config import names
from shared.config.names import Env
from shared.domain_events.models import RESERVED_PREFIX, SOURCE
from shared.domain_events.publisher import EVENT_SORT_KEY_PREFIX

PUBLISHER_BATCH_SIZE: Final = 10
PUBLISHER_RETRIES: Final = 5
ARCHIVE_DAYS: Final = {"prod": 30}
DEFAULT_ARCHIVE_DAYS: Final = 7


class DomainEventBus(Construct):
    """`bus`, `publisher` and the mapping's `dead_letter_queue`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        data: Data,
        publisher: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        # Deleted with its stack in every environment, prod too: a bus holds no data (the
        # outbox in the retained coordination table is the record), and a bus retained under
        # its fixed name would stop the stack being created again (tests/infra/test_recreate.py).
        self.bus = events.EventBus(self, "Bus", event_bus_name=f"{config.stack_name}-events")
        self.bus.apply_removal_policy(RemovalPolicy.DESTROY)
        self.bus.archive(
            "Archive",
            description="cairn's domain events, kept for replay",
            event_pattern=events.EventPattern(source=[SOURCE]),
            retention=Duration.days(ARCHIVE_DAYS.get(config.environment, DEFAULT_ARCHIVE_DAYS)),
        )
        self.publisher = publisher
        publisher.add_environment(Env.EVENT_BUS_NAME, self.bus.event_bus_name)
        self.bus.grant_put_events_to(publisher)
        self.dead_letter_queue = dead_letter_queue(
            self,
            "PublisherDeadLetters",
            removal_policy=config.removal_policy,
            holds="the event publisher's stream mapping (its on-failure destination)",
        )
        add_stream_mapping(
            publisher,
            data.table(names.TABLE_COORDINATION),
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=PUBLISHER_BATCH_SIZE,
            retries=PUBLISHER_RETRIES,
            dead_letters=self.dead_letter_queue,
            filters=[
                record_filter(
                    lambda_.FilterRule.is_equal("INSERT"),
                    EVENT_SORT_KEY_PREFIX,
                    {"event_type": {"S": lambda_.FilterRule.begins_with(RESERVED_PREFIX)}},
                )
            ],
        )
