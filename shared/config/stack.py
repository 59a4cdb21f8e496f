"""A deployed stack's outputs: how the CLI finds its tables, secrets and functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.config.settings import Settings


class StackOutputsError(Exception):
    """The stack cannot be read, or lacks an output; the message names the stack and the fix."""


def stack_outputs(stack: str, required: Sequence[str], cloudformation: Any) -> dict[str, str]:
    """`stack`'s outputs by key, with every key of `required` present."""
    try:
        described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    except Exception as exc:  # botocore raises many types: no credentials, no stack, ...
        raise StackOutputsError(f"cannot read stack {stack!r}: {exc}") from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    missing = [key for key in required if key not in outputs]
    if missing:
        raise StackOutputsError(
            f"stack {stack!r} has no output(s) {', '.join(missing)}: is it a cairn stack of "
            "this version?"
        )
    return outputs


def read_stack(stack: str, required: Sequence[str], cloudformation: Any = None) -> dict[str, str]:
    """`stack_outputs` through the environment's CloudFormation client unless one is given."""
    if cloudformation is None:
        import boto3

        cloudformation = boto3.client("cloudformation")
    return stack_outputs(stack, required, cloudformation)


def stack_settings(
    outputs: Mapping[str, str], tables: Mapping[str, str], **update: Any
) -> Settings:
    """This process's settings pointed at a deployed stack, to run a command here on its
    stores with the environment's AWS credentials: DynamoDB, each table of `tables` (logical
    name → output key) named by its output, and `update` on top."""
    from shared.config.settings import Settings

    return Settings.from_env().model_copy(
        update={
            "environment": "aws",
            "storage": "dynamodb",  # a deployed stack's tables, whatever CAIRN_STORAGE says
            "tables": {
                **Settings().tables,
                **{logical: outputs[key] for logical, key in tables.items()},
            },
            **update,
        }
    )
