"""Names of resources that outlive their stack.

Prod retains its stateful resources when its stack is deleted (`DeployConfig.removal_policy`).
A retained resource under a fixed name would make CloudFormation refuse to create the stack
again ("already exists"), so such a name ends with a part of the stack's own id, which is new
with each creation of the stack (tests/infra/test_recreate.py checks every named type).
"""

from __future__ import annotations

from aws_cdk import Aws, Fn


def stack_id_suffix() -> str:
    """The first eight hex digits of the stack id's UUID (a token, resolved at deploy)."""
    stack_uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    return Fn.select(0, Fn.split("-", stack_uuid))


def unique_name(prefix: str) -> str:
    """`prefix` followed by the stack id's suffix: never the name of an earlier stack's
    retained resource."""
    return Fn.join("", [prefix, stack_id_suffix()])
