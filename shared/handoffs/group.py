"""The handoffs tool group itself; its tools register on it from `tools` (`@GROUP.tool`)."""

from __future__ import annotations

from shared.config import names
from shared.handoffs.service import HandoffService
from shared.handoffs.wiring import build_handoff_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[HandoffService] = ToolGroup(
    name=names.GROUP_HANDOFFS, build_service=build_handoff_service
)
