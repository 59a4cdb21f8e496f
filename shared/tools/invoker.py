"""How the gateway reaches a tool group: in-process locally and in tests, Lambda Invoke in AWS."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
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

    On the SQLite stores (`make serve`) calls run concurrently: each store's writes are
    transactions of their own. On moto (the functional tests) pass a `lock`: moto has no
    per-item locking, so every call holds it and concurrent requests can never interleave a
    read-modify-write (reads too, because a read may prune an expired memory).
    """

    def __init__(
        self, groups: Mapping[str, ToolGroup[Any]], lock: threading.RLock | None = None
    ) -> None:
        self._groups = groups
        self._lock = lock

    def invoke(self, group: str, envelope: Envelope, *, read_only: bool) -> Reply:
        tool_group = self._groups[group]
        if self._lock is None:
            return execute(tool_group, envelope)
        with self._lock:
            return execute(tool_group, envelope)


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
