"""A deployed stack's outputs: how the CLI finds its tables, secrets and functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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
