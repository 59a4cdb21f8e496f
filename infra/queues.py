"""Dead-letter queues: one shape for every function's or queue's given-up records."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import suppress


def dead_letter_queue(
    scope: Construct,
    construct_id: str,
    *,
    removal_policy: RemovalPolicy,
    holds: str,
    fifo: bool = False,
) -> sqs.Queue:
    """An encrypted, TLS-only queue keeping failed records 14 days (the most SQS allows), for
    an operator to inspect and redrive; `holds` says whose failures it holds (cdk-nag's SQS3
    asks every queue for a dead-letter queue of its own, which a dead-letter queue is not)."""
    queue = sqs.Queue(
        scope,
        construct_id,
        fifo=fifo or None,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
        removal_policy=removal_policy,
    )
    suppress(queue, "SQS3", f"This queue is the dead-letter queue of {holds}.")
    return queue
