"""The memory tool group itself; its tools register on it from `tools`, `engram_tools` and
`lifecycle_tools` (each with `@GROUP.tool`, as every group does)."""

from __future__ import annotations

from shared.config import names
from shared.memory.service import MemoryService
from shared.memory.wiring import build_memory_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[MemoryService] = ToolGroup(
    name=names.GROUP_MEMORY, build_service=build_memory_service
)
