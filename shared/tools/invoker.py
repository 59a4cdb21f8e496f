"""How the gateway reaches a tool group: in-process locally and in tests, Lambda Invoke in AWS."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from shared.tools.dispatch import execute
from shared.tools.envelope import Envelope, Reply
from shared.tools.registry import ToolGroup

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class Invoker(Protocol):
    def invoke(self, group: str, envelope: Envelope, *, read_only: bool) -> Reply: ...


class GroupInvocationError(Exception):
    """The group function failed outside the tool's own error model (a crash, a timeout)."""


class InProcessInvoker:
    """Runs the group in this process.

    moto has no per-item locking, so every call holds one process-wide lock: concurrent requests
    can never interleave a read-modify-write and corrupt state. Reads hold it too, because a
    read may write (an expired memory is pruned when it is seen). Only tools that are not
    read-only mark the state dirty for the snapshot; a prune seen by a read is saved with the
    next write or at shutdown, and is harmless to lose (the item is expired either way).
    """

    def __init__(
        self,
        groups: Mapping[str, ToolGroup[Any]],
        lock: threading.RLock,
        after_write: Callable[[], None] | None = None,
    ) -> None:
        self._groups = groups
        self._lock = lock
        self._after_write = after_write

    def invoke(self, group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        tool_group = self._groups[group]
        with self._lock:
            reply = execute(tool_group, envelope)
        if not read_only and self._after_write is not None:
            self._after_write()
        return reply


class LambdaInvoker:
    """Invokes the group's function synchronously with the envelope as its event."""

    def __init__(self, client: LambdaClient, function_names: Mapping[str, str]) -> None:
        self._client = client
        self._function_names = function_names

    def invoke(self, group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        response = self._client.invoke(
            FunctionName=self._function_names[group],
            InvocationType="RequestResponse",
            Payload=envelope.model_dump_json().encode(),
        )
        payload = response["Payload"].read()
        if response.get("FunctionError"):
            # Unhandled error in the group function: its message is logged there, not echoed.
            raise GroupInvocationError(f"{group} function failed: {response['FunctionError']}")
        return Reply.model_validate(json.loads(payload))
