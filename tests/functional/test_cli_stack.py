"""Token administration against a deployed stack: its outputs name the tokens table and the
pepper secret. DynamoDB and Secrets Manager are moto; CloudFormation's one call
(`DescribeStacks`) is answered through botocore's Stubber with the stack's real output keys."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from shared import runtime
from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.service import TokenService, hash_secret
from shared.cli.tokens import StackAdmin, TokenAdminError
from shared.config import names
from shared.config.settings import Settings

STACK = "cairn-dev-tester"
PEPPER = "pepper-kept-in-secrets-manager"


def _cloudformation(stack: str, outputs: dict[str, str] | None) -> Any:
    client = boto3.client("cloudformation", region_name="us-east-1")
    stubber = Stubber(client)
    if outputs is None:
        stubber.add_client_error(
            "describe_stacks",
            service_error_code="ValidationError",
            service_message=f"Stack with id {stack} does not exist",
            expected_params={"StackName": stack},
        )
    else:
        stubber.add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": stack,
                        "CreationTime": datetime.now(tz=UTC),
                        "StackStatus": "CREATE_COMPLETE",
                        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
                    }
                ]
            },
            {"StackName": stack},
        )
    stubber.activate()
    return client


@pytest.fixture
def stack_outputs(aws: Settings) -> Iterator[dict[str, str]]:
    secret_arn = boto3.client("secretsmanager").create_secret(
        Name="cairn-pepper", SecretString=PEPPER
    )["ARN"]
    yield {
        names.Outputs.TOKENS_TABLE: aws.table(names.TABLE_TOKENS),
        names.Outputs.TOKEN_PEPPER_SECRET: secret_arn,
        names.Outputs.MCP_URL: "https://example.execute-api.us-east-1.amazonaws.com/v1/mcp",
    }
    runtime.configure(Settings())


def test_create_list_and_revoke_use_the_stacks_table_and_pepper_secret(
    aws: Settings, stack_outputs: dict[str, str]
) -> None:
    admin = StackAdmin(STACK, cloudformation=_cloudformation(STACK, stack_outputs))

    secret, record = admin.create({"team": "acme", "name": "ci", "scopes": ["memory", "search"]})

    assert secret.startswith("cairn_sk_")
    table = boto3.resource("dynamodb").Table(aws.table(names.TABLE_TOKENS))
    stored = repr(table.scan()["Items"])
    assert secret not in stored
    assert hash_secret(PEPPER.encode(), secret) in stored  # keyed by the stack's pepper
    service = TokenService(DynamoTokenStore(table), PEPPER.encode())
    assert service.authenticate(secret)[0].team == "acme"
    assert [r["token_id"] for r in admin.list("acme")] == [record["token_id"]]
    assert admin.list("other-team") == []

    admin.revoke(record["token_id"])

    found = service.find(secret)
    assert found is not None
    assert not service.is_active(found)


def test_a_bad_token_request_is_an_admin_error_naming_the_field(
    stack_outputs: dict[str, str],
) -> None:
    admin = StackAdmin(STACK, cloudformation=_cloudformation(STACK, stack_outputs))

    with pytest.raises(TokenAdminError, match="scopes"):
        admin.create({"team": "acme", "name": "ci", "scopes": ["teleport"]})


def test_a_stack_without_cairn_outputs_is_a_clear_error(aws: Settings) -> None:
    client = _cloudformation("not-cairn", {"Other": "x"})

    with pytest.raises(TokenAdminError, match="has no output"):
        StackAdmin("not-cairn", cloudformation=client)


def test_a_missing_stack_is_a_clear_error(aws: Settings) -> None:
    client = _cloudformation("nowhere", None)

    with pytest.raises(TokenAdminError, match="cannot read stack 'nowhere'"):
        StackAdmin("nowhere", cloudformation=client)
