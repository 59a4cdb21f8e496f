"""Bedrock: the one grant every caller of a foundation model needs."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_


def allow_invoke_model(function: lambda_.Function, model_id: str) -> None:
    """Let `function` call `bedrock:InvokeModel` on the foundation model `model_id` only."""
    model = Stack.of(function).format_arn(
        service="bedrock", account="", resource="foundation-model", resource_name=model_id
    )
    function.add_to_role_policy(
        iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[model])
    )
