"""The memory tool group itself; its tools register on it from `tools`, `engram_tools` and
`lifecycle_tools` (each with `@GROUP.tool`, as every group does)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shared.config import names
from shared.memory.service import MemoryService
from shared.memory.wiring import build_memory_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[MemoryService] = ToolGroup(
    name=names.GROUP_MEMORY, build_service=build_memory_service
)


def arguments(args: BaseModel, *leave_out: str) -> dict[str, Any]:
    """A tool's arguments as the service method of the same names takes them (values as
    validated, models kept), less the seed's `token` and the fields in `leave_out`."""
    return {name: value for name, value in args if name not in {"token", *leave_out}}
