"""DynamoDB stream mappings: one shape for every function a table's stream feeds (the curator,
the domain-event publisher)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs

from infra.nag import suppress


def record_filter(
    event_name: Any, sort_key_prefix: str, new_image: Mapping[str, Any]
) -> Mapping[str, Any]:
    """A Lambda event filter: stream records named `event_name` (a filter rule) of items whose
    sort key begins with `sort_key_prefix` and whose new image matches `new_image`."""
    return lambda_.FilterCriteria.filter(
        {
            "eventName": event_name,
            "dynamodb": {
                "Keys": {"sk": {"S": lambda_.FilterRule.begins_with(sort_key_prefix)}},
                "NewImage": new_image,
            },
        }
    )


def add_stream_mapping(
    function: lambda_.Function,
    table: dynamodb.ITable,
    *,
    starting_position: lambda_.StartingPosition,
    batch_size: int,
    retries: int,
    dead_letters: sqs.IQueue,
    filters: Sequence[Mapping[str, Any]],
) -> None:
    """Feed `table`'s stream to `function` in batches of `batch_size`, only the records that
    match one of `filters`. The handler reports the records it failed on; a failing batch is
    bisected and retried `retries` times, then its stream coordinates (never the items) go to
    `dead_letters`."""
    function.add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=starting_position,
            batch_size=batch_size,
            report_batch_item_failures=True,
            bisect_batch_on_error=True,
            retry_attempts=retries,
            on_failure=sources.SqsDlq(dead_letters),
            filters=list(filters),
        )
    )
    assert function.role is not None, f"{function.node.path} has no role"
    # The mapping's grant: stream reads on the stream ARN, and ListStreams, which has no
    # resource-level permissions (IAM knows it only with Resource "*").
    suppress(
        function.role,
        "IAM5",
        "dynamodb:ListStreams (needed by the stream mapping) supports only Resource '*'.",
        ["Resource::*"],
    )
