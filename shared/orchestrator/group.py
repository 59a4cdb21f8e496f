"""The orchestrator tool group itself; its tools register on it from each part's `tools` module."""

from __future__ import annotations

from shared.config import names
from shared.orchestrator.service import Orchestrator
from shared.orchestrator.wiring import build_orchestrator
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[Orchestrator] = ToolGroup(
    name=names.GROUP_ORCHESTRATOR, build_service=build_orchestrator
)
