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


def work_queue(
    scope: Construct,
    name: str,
    *,
    removal_policy: RemovalPolicy,
    holds: str,
    visibility_timeout: Duration,
    max_receives: int,
    fifo: bool = False,
) -> tuple[sqs.Queue, sqs.Queue]:
    """`<name>Queue`, an encrypted, TLS-only queue keeping messages 4 days, and its
    `<name>DeadLetters` (a `dead_letter_queue` of `holds`), where a message goes once it has
    been received `max_receives` times."""
    dead_letters = dead_letter_queue(
        scope, f"{name}DeadLetters", removal_policy=removal_policy, holds=holds, fifo=fifo
    )
    queue = sqs.Queue(
        scope,
        f"{name}Queue",
        fifo=fifo or None,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(4),
        visibility_timeout=visibility_timeout,
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=max_receives),
        removal_policy=removal_policy,
    )
    return queue, dead_letters
